/**
 * A parent's end reaches its children. An execution that started children which may outlive it
 * keeps its timer due when it finishes (in the finish's statement); the pass that claims the timer
 * of a finished execution interrupts its open children whose policy is `interrupt` and pokes their
 * timers, and removes the timer, in one statement. Being a statement after the finish's commit, it
 * sees every child: a child relayed concurrently either committed first (and is seen here) or saw
 * the parent finished and started interrupted (executionStore.ts `insertExecutionParts`). A runner
 * dying before it leaves the timer, and the next claim sweeps again; a child already interrupted
 * or finished is not changed, so each child records one result.
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { CanonicalStepOf } from "../model/stepKinds/stepKindModel.js"
import { deleteTimerPart, pokePlacedTimersPart } from "../outbox/outboxStore.js"
import { notification, WAKE_CHANNEL, wakePayloadOfRow } from "../outbox/notifications.js"
import { composeStatement } from "../storage/statementParts.js"
import { interruptChildrenPart } from "./executionStore.js"
import type { PassState } from "./passState.js"

/**
 * Whether the pass's execution started a child that may outlive it and be taken down with it: a
 * start whose child it does not know finished (every start but an awaiting one that settled).
 * The policy the child recorded decides at the sweep, so a policy changed since is not trusted here.
 */
export const mayHaveOpenChildren = (state: PassState): boolean => {
  for (const [step, rows] of state.recorded) {
    const declared = state.registration.canonical.steps[step]
    if (declared?.kind !== "start" || rows.length === 0) continue
    const awaits = (declared as CanonicalStepOf<"start">).awaits === true
    if (!awaits || rows.some((row) => row.exit === null)) return true
  }
  return false
}

/**
 * Interrupts the open `interrupt`-policy children of a finished execution, pokes their timers and
 * removes the execution's timer, in one statement. Idempotent.
 */
export const sweepChildren = async (
  internals: AkterInternals,
  routingKey: string,
  executionId: string,
): Promise<void> => {
  const children = interruptChildrenPart(routingKey, executionId)
  const poked = pokePlacedTimersPart(internals.clock, children.name)
  const timer = deleteTimerPart(routingKey, executionId, { when: sql`true` })
  const buckets = sql`(SELECT coalesce(array_agg(DISTINCT bucket), '{}') FROM ${sql.id(poked.name)}) AS buckets`
  const select =
    internals.storage.backend === "postgres"
      ? sql`${buckets}, (SELECT count(*) FROM (${notification(WAKE_CHANNEL, sql`b.payload`, {
          from: sql`(SELECT DISTINCT ${wakePayloadOfRow} AS payload FROM ${sql.id(poked.name)}) b`,
          when: sql`true`,
        })}) n) AS notified`
      : buckets
  faultPoint("children.before")
  const { rows } = await composeStatement([children, poked, timer], select).execute(
    internals.storage.db,
  )
  faultPoint("children.after")
  for (const bucket of (rows[0]?.["buckets"] as number[] | undefined) ?? []) {
    internals.wakeups.wakeBucket(bucket)
  }
}
