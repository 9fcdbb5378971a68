/**
 * The start: create the owner if new, insert the execution with its markers and start manifest,
 * arm its timer due now — one statement. Used by clients and by the relay of staged starts alike;
 * a second start of the same execution id attaches and writes nothing.
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { WorkflowRegistration } from "../model/registration.js"
import type { OwnerPlacement } from "../owners/routing.js"
import {
  insertExecutionParts,
  startedSnapshot,
  type NewExecution,
} from "../engine/executionStore.js"
import { insertMarkersPart } from "../engine/stepStore.js"
import { armTimerPart } from "../outbox/outboxStore.js"
import { WAKE_CHANNEL } from "../outbox/wakeups.js"
import { recordStartManifestPart } from "../storage/manifestStore.js"
import { composeStatement, countOf, type StatementPart } from "../storage/statementParts.js"
import { nowMs } from "../storage/clock.js"

export interface StartRequest {
  readonly owner: OwnerPlacement
  readonly workflow: WorkflowRegistration
  readonly executionId: string
  readonly key: string
  readonly input: Buffer
  readonly caller: string
}

/** The markers a start records: each declared marker at its current value. */
const startMarkers = (workflow: WorkflowRegistration): Record<string, number> => {
  const markers: Record<string, number> = {}
  for (const [name, range] of Object.entries(workflow.canonical.versions)) {
    markers[name] = range.current
  }
  return markers
}

const newExecutionOf = (request: StartRequest, awaited: boolean): NewExecution => ({
  owner: request.owner,
  executionId: request.executionId,
  workflow: request.workflow.name,
  key: request.key,
  manifestHash: request.workflow.hashes.compatibility,
  input: request.input,
  caller: request.caller,
  awaited,
})

/** The parts of a start statement, and the name of the part that inserted the execution. */
export const startParts = (
  internals: AkterInternals,
  request: StartRequest,
  how: {
    /** A runner of this process takes the execution: the timer is armed as its claim would have. */
    readonly handedOver?: { readonly recoveryMs: number }
    /**
     * Its caller may wait for the result in this process while a runner elsewhere runs it, so the
     * finish must notify. A start handed over is told of its finish directly, and a relayed start
     * has no caller waiting yet (whoever waits later marks it).
     */
    readonly awaited: boolean
  },
): { readonly parts: readonly StatementPart[]; readonly inserted: string } => {
  const { clock } = internals
  const { handedOver } = how
  const { parts, inserted } = insertExecutionParts(clock, newExecutionOf(request, how.awaited))
  const created = sql<boolean>`EXISTS (SELECT 1 FROM ${sql.id(inserted)})`
  const markers = startMarkers(request.workflow)
  return {
    inserted,
    parts: [
      ...parts,
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
        handedOver === undefined
          ? "now"
          : sql<number>`${nowMs(clock)} + ${handedOver.recoveryMs}::bigint`,
        { when: created },
      ),
    ],
  }
}

/**
 * The final select of a start: whether it created the execution, and the wake-up of other
 * processes; when handed over, what the start recorded that the runner's first pass needs.
 */
export const startSelect = (
  internals: AkterInternals,
  owner: OwnerPlacement,
  inserted: string,
  handedOver = false,
) => {
  const created = sql`${countOf(inserted)} AS created`
  if (handedOver) {
    return sql`${created},
      (SELECT event_cursor FROM ${sql.id(inserted)}) AS event_cursor,
      (SELECT started_at_ms FROM ${sql.id(inserted)}) AS started_at_ms`
  }
  return internals.storage.backend === "postgres"
    ? sql`${created},
        (SELECT pg_notify(${WAKE_CHANNEL}, ${String(owner.bucket)}) FROM ${sql.id(inserted)}) AS notified`
    : created
}

/**
 * Starts (or attaches to) an execution in one statement. A runner of this process that serves the
 * bucket takes the new execution at once (no claim, no poll); otherwise runners are woken to claim
 * its timer, due now.
 */
export const startExecution = async (
  internals: AkterInternals,
  request: StartRequest,
): Promise<boolean> => {
  const { owner, workflow, executionId } = request
  const handover = internals.wakeups.acceptorFor(owner.bucket, workflow.owner, workflow.name)
  const { parts, inserted } = startParts(internals, request, {
    ...(handover === undefined ? {} : { handedOver: handover }),
    awaited: handover === undefined,
  })
  faultPoint("start.before")
  const { rows } = await composeStatement(
    parts,
    startSelect(internals, owner, inserted, handover !== undefined),
  ).execute(internals.storage.db)
  faultPoint("start.after")
  const row = rows[0]
  if (row?.["created"] !== 1) return false
  if (handover === undefined) internals.wakeups.wakeBucket(owner.bucket)
  else if (
    !handover.acceptor.accept(
      owner,
      startedSnapshot(newExecutionOf(request, false), startMarkers(workflow), {
        eventCursor: Number(row["event_cursor"]),
        startedAtMs: Number(row["started_at_ms"]),
      }),
    )
  ) {
    // The runner stopped taking work meanwhile: make the timer due for whoever serves the bucket.
    await composeStatement(
      [armTimerPart(internals.clock, owner, executionId, "now", { when: sql`true` })],
      internals.storage.backend === "postgres"
        ? sql`pg_notify(${WAKE_CHANNEL}, ${String(owner.bucket)}) AS notified`
        : sql`true AS notified`,
    ).execute(internals.storage.db)
    internals.wakeups.wakeBucket(owner.bucket)
  }
  return true
}
