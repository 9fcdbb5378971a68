/**
 * The start statement: creates the owner if new and inserts the execution with its markers and
 * start manifest and arms its timer — one statement, composed from the parts each table's store
 * builds (executionStore, stepStore, storage/manifestStore, outbox/outboxStore). A second start of
 * the same execution id attaches and writes nothing. Clients start through it, the relay of
 * staged starts too; a runner of the starting process folds it into its pass's first write
 * (`unstartedExecution`).
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import type { WorkflowRegistration } from "../model/registration.js"
import type { StartRequest } from "./startRequest.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { fenceHeld } from "../owners/fence.js"
import {
  insertExecutionParts,
  unstartedSnapshot,
  type BatchedStartFields,
  type NewExecution,
  type StartOutcome,
  type FoldedStartParts,
  type UnstartedExecution,
} from "./executionStore.js"
import { insertMarkersPart } from "./stepStore.js"
import { armTimerPart } from "../outbox/outboxStore.js"
import { notifyColumn, WAKE_CHANNEL } from "../outbox/notifications.js"
import { recordStartManifestPart, storedForm } from "../storage/manifestStore.js"
import {
  composeStatement,
  countOf,
  existsIn,
  type StatementPart,
} from "../storage/statementParts.js"
import { estimatedNow, nowMs } from "../storage/clock.js"
import { lockGroupStatement, startGroupOf } from "./concurrencyGroups.js"

/** The markers a start records: each declared marker at its current value. */
const startMarkers = (workflow: WorkflowRegistration): Record<string, number> => {
  const markers: Record<string, number> = {}
  for (const [name, range] of Object.entries(workflow.canonical.versions)) {
    markers[name] = range.current
  }
  return markers
}

const newExecutionOf = (request: StartRequest, awaited: boolean): NewExecution => {
  const concurrency = startGroupOf(request.owner.tenant, request.workflow, request.concurrency)
  return {
    ...newUngroupedExecution(request, awaited),
    ...(concurrency === undefined ? {} : { concurrency }),
  }
}

const newUngroupedExecution = (request: StartRequest, awaited: boolean): NewExecution => ({
  owner: request.owner,
  executionId: request.executionId,
  workflow: request.workflow.name,
  key: request.key,
  manifestHash: request.workflow.hashes.compatibility,
  input: request.input,
  caller: request.caller,
  awaited,
  ...(request.parent === undefined ? {} : { parent: request.parent }),
  deadlineMs: request.deadlineMs ?? request.workflow.deadlineMs ?? null,
})

/**
 * The parts of a start statement, and the names of the parts that created the owner and inserted
 * the execution. Those two come first in the statement; parts that refer to a fence (a folded
 * start's timer) must follow the fence.
 */
const startParts = (
  internals: AkterInternals,
  request: StartRequest,
  how: {
    /**
     * A runner of this process takes the execution in the statement's fence (a folded start): the
     * timer is armed a recovery interval ahead as its claim would have, or due now if the fence
     * found the owner taken, and a new owner is created activated.
     */
    readonly folded?: { readonly recoveryMs: number }
    /**
     * Its caller may wait for the result in this process while a runner elsewhere runs it, so the
     * finish must notify. A folded start's caller is told of its finish directly, and a relayed
     * start has no caller waiting yet (whoever waits later marks it).
     */
    readonly awaited: boolean
  },
): {
  readonly head: readonly StatementPart[]
  readonly tail: readonly StatementPart[]
  readonly inserted: string
  readonly ownerCreated: string
} => {
  const { clock } = internals
  const { folded } = how
  const { parts, inserted, ownerCreated } = insertExecutionParts(
    clock,
    newExecutionOf(request, how.awaited),
    folded !== undefined,
  )
  const created = existsIn(inserted)
  // A queued execution gets its timer when its group admits it.
  const admitted = sql<boolean>`EXISTS (SELECT 1 FROM ${sql.id(inserted)} WHERE status = 'running')`
  const markers = startMarkers(request.workflow)
  return {
    inserted,
    ownerCreated,
    head: parts,
    tail: [
      ...(Object.keys(markers).length === 0
        ? []
        : [
            insertMarkersPart(
              clock,
              request.owner.routingKey,
              request.executionId,
              markers,
              inserted,
            ),
          ]),
      recordStartManifestPart(
        request.workflow.canonical,
        request.workflow.hashes.compatibility,
        created,
      ),
      armTimerPart(
        clock,
        request.owner,
        request.executionId,
        folded === undefined
          ? "now"
          : sql<number>`CASE WHEN ${fenceHeld}
              THEN ${nowMs(clock)} + ${folded.recoveryMs}::bigint ELSE ${nowMs(clock)} END`,
        { when: admitted },
      ),
    ],
  }
}

/** The final select of a plain start: whether it created the execution, and the wake-up of other processes. */
const startSelect = (internals: AkterInternals, owner: OwnerPlacement, inserted: string) => {
  const created = sql`${countOf(inserted)} AS created`
  return internals.storage.backend === "postgres"
    ? sql`${created}, ${notifyColumn(WAKE_CHANNEL, String(owner.bucket), {
        when: sql`EXISTS (SELECT 1 FROM ${sql.id(inserted)} WHERE status = 'running')`,
      })}`
    : created
}

/** A start's columns as a batch row carries them (engine/batchInput.ts `startColumns`). */
const batchedStartFields = (
  request: StartRequest,
  execution: NewExecution = newUngroupedExecution(request, false),
  markers: Readonly<Record<string, number>> = startMarkers(request.workflow),
): BatchedStartFields => ({
  workflow: execution.workflow,
  key: execution.key,
  manifestHash: execution.manifestHash,
  manifest: storedForm(request.workflow.canonical),
  input: execution.input,
  caller: execution.caller,
  deadlineMs: execution.deadlineMs,
  markers,
})

/**
 * The start as a runner of this process takes it: committed by the first write of the execution's
 * pass, which tells `settled` what came of it.
 */
export const unstartedExecution = (
  internals: AkterInternals,
  request: StartRequest,
  recoveryMs: number,
  settled: (outcome: StartOutcome) => void,
  /** Parts the start commits with, whether it creates or attaches (the relay's delete). */
  alongside: readonly StatementPart[] = [],
): UnstartedExecution => {
  let parts: FoldedStartParts | undefined
  const execution = newUngroupedExecution(request, false)
  const markers = startMarkers(request.workflow)
  // A child's start reads its parent's row, a grouped one is admitted under its group's lock, and
  // the relay's delete commits alongside: those go as the parts, in a statement of their own.
  const batchable =
    request.parent === undefined && request.concurrency === null && alongside.length === 0
  return {
    snapshot: unstartedSnapshot(execution, markers, estimatedNow(internals.clock)),
    parts: () => {
      if (parts === undefined) {
        const { head, tail, inserted, ownerCreated } = startParts(internals, request, {
          folded: { recoveryMs },
          awaited: false,
        })
        parts = { head, tail: [...tail, ...alongside], names: { inserted, ownerCreated } }
      }
      return parts
    },
    ...(batchable
      ? { batchable: { ...batchedStartFields(request, execution, markers), recoveryMs } }
      : {}),
    settled,
  }
}

/**
 * Writes the start as a statement of its own (with `alongside`, parts the caller's work commits
 * with, e.g. the relay's delete of the staged row) — or, with nothing alongside, no parent and no
 * concurrency group, as a row of the handle's batch of starts, one statement for the starts of its
 * concurrent callers (engine/startBatch.ts). Resolves whether it created the execution (false: it
 * existed, and nothing of the start was written). `awaited` as in `startParts`.
 */
export const writeStart = async (
  internals: AkterInternals,
  request: StartRequest,
  options: { readonly awaited: boolean; readonly alongside?: readonly StatementPart[] },
): Promise<boolean> => {
  const grouped = startGroupOf(request.owner.tenant, request.workflow, request.concurrency)
  if (
    grouped === undefined &&
    request.parent === undefined &&
    (options.alongside === undefined || options.alongside.length === 0)
  ) {
    // As a row of a batch, with the starts of this handle's other callers (engine/startBatch.ts).
    return internals.startBatcher.submit({
      owner: request.owner,
      executionId: request.executionId,
      start: batchedStartFields(request),
      awaited: options.awaited,
    })
  }
  const { head, tail, inserted } = startParts(internals, request, { awaited: options.awaited })
  const statement = composeStatement(
    [...head, ...tail, ...(options.alongside ?? [])],
    startSelect(internals, request.owner, inserted),
  )
  const { rows } =
    grouped === undefined
      ? await statement.execute(internals.storage.db)
      : // Admitted or queued under the group's lock (engine/concurrencyGroups.ts).
        await internals.storage.db.transaction().execute(async (tx) => {
          await lockGroupStatement(grouped.group).execute(tx)
          return statement.execute(tx)
        })
  return rows[0]?.["created"] === 1
}
