/**
 * Concurrency keys at run time. Executions of a workflow that declares a key are grouped by the
 * value of their input at the key path (with tenant, owner type, workflow and path); at most the
 * declared limit of a group are admitted (`running` or `suspended`) at once, across all runners.
 * A start that finds the group full, or executions already waiting, inserts its execution
 * `queued`, with no timer; a finish admits the oldest queued ones in its own transaction and arms
 * their timers due now, with a wake-up — nothing polls a queue.
 *
 * Every start and finish of a group's execution runs as two statements in one transaction: the
 * group's advisory lock first, then the write. Under READ COMMITTED a statement sees what was
 * committed when it began, so a lock taken inside the writing statement would not show it what
 * the transaction it waited for committed; taken by an earlier statement, it does. A transaction
 * that dies (a runner killed mid-write) releases the lock with its connection, and nothing of it
 * commits. Starts of keyed workflows are therefore never folded into a pass's first write
 * (runner/localStartAcceptor.ts declines them), and their finishes never go as a step batch row.
 */
import { sql, type RawBuilder } from "kysely"
import type { AkterInternals } from "../akter.js"
import type { ConcurrencyGroup } from "../model/startInput.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { notification, WAKE_CHANNEL } from "../outbox/notifications.js"
import { armAdmittedTimersPart } from "../outbox/outboxStore.js"
import { part, type StatementPart } from "../storage/statementParts.js"
import {
  admitQueuedPart,
  type ExecutionKey,
  type ExecutionRow,
  type GroupOfExecutions,
} from "./executionStore.js"

/**
 * The first number of akter's two-number advisory locks (a space apart from the one-number locks
 * of migrations, acceptance and retention): the second is a hash of the group. Two groups whose
 * hashes collide share a lock, which only serializes their admissions.
 */
const CONCURRENCY_LOCK_SPACE = 0x616b7472 // "aktr"

/**
 * The statement that takes a group's lock until its transaction ends: every admission and
 * queueing of the group happens under it, so at most the limit of a group is ever admitted.
 */
export const lockGroupStatement = (group: GroupOfExecutions): RawBuilder<unknown> =>
  sql`SELECT pg_advisory_xact_lock(${CONCURRENCY_LOCK_SPACE}::int, hashtext(${JSON.stringify([
    group.tenant,
    group.ownerType,
    group.workflow,
    group.key,
    group.value,
  ])}))`

/** The group a start request's execution joins, and its workflow's limit; null when unkeyed. */
export const startGroupOf = (
  tenant: string,
  workflow: WorkflowRegistration,
  concurrency: ConcurrencyGroup | null,
): { readonly group: GroupOfExecutions; readonly limit: number } | undefined => {
  const declared = workflow.canonical.concurrency
  if (concurrency === null || declared === undefined) return undefined
  return {
    group: {
      tenant,
      ownerType: workflow.owner,
      workflow: workflow.name,
      key: concurrency.key,
      value: concurrency.value,
    },
    limit: declared.limit,
  }
}

/** The group an execution was started in, from its row; undefined when it has none. */
export const groupOfRow = (row: ExecutionRow): GroupOfExecutions | undefined =>
  row.concurrency_key === null || row.concurrency_value === null
    ? undefined
    : {
        tenant: row.tenant,
        ownerType: row.owner_type,
        workflow: row.workflow,
        key: row.concurrency_key,
        value: row.concurrency_value,
      }

/**
 * The parts a finish of a grouped execution adds (`finished` names the part that finished it):
 * the admission of the next queued executions of its group, their timers due now, and on Postgres
 * a wake-up of each of their buckets; and a final-select column, `admitted_buckets`, that lists
 * the buckets (for this process's own runners, which a notification may reach later).
 */
export const admissionParts = (
  internals: AkterInternals,
  group: GroupOfExecutions,
  finishing: ExecutionKey,
  limit: number | null,
  finished: string,
): { readonly parts: readonly StatementPart[]; readonly select: RawBuilder<unknown> } => {
  const admitted = admitQueuedPart(group, finishing, limit, finished)
  const timers = armAdmittedTimersPart(internals.clock, admitted.name)
  const buckets = sql`(SELECT array_agg(DISTINCT bucket) FROM ${sql.id(timers.name)}) AS admitted_buckets`
  if (internals.storage.backend !== "postgres")
    return { parts: [admitted, timers], select: buckets }
  const wake = part("admitted_wake", () =>
    notification(WAKE_CHANNEL, sql`bucket::text`, {
      from: sql`(SELECT DISTINCT bucket FROM ${sql.id(timers.name)}) b`,
      when: sql`true`,
    }),
  )
  // A plain SELECT part runs only when the final select refers to it.
  return {
    parts: [admitted, timers, wake],
    select: sql`${buckets}, (SELECT count(*) FROM ${sql.id(wake.name)}) AS admitted_woken`,
  }
}

/** The buckets `admissionParts`' column lists (none when nothing was admitted). */
export const admittedBuckets = (row: Readonly<Record<string, unknown>>): number[] =>
  ((row["admitted_buckets"] as unknown[] | null) ?? []).map(Number)
