/**
 * The start: create the owner if new, insert the execution with its markers and start manifest,
 * arm its timer due now — one statement. Used by clients and by the relay of staged starts alike;
 * a second start of the same execution id attaches and writes nothing. A runner of the starting
 * process that serves the owner's bucket takes the start into the first write of the execution's
 * pass instead: one statement fewer, and no claim.
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { WorkflowRegistration } from "../model/registration.js"
import type { OwnerPlacement } from "../owners/routing.js"
import {
  insertExecutionParts,
  unstartedSnapshot,
  type NewExecution,
  type StartOutcome,
  type UnstartedExecution,
} from "../engine/executionStore.js"
import { insertMarkersPart } from "../engine/stepStore.js"
import { armTimerPart } from "../outbox/outboxStore.js"
import { WAKE_CHANNEL } from "../outbox/wakeups.js"
import { recordStartManifestPart } from "../storage/manifestStore.js"
import { composeStatement, countOf, type StatementPart } from "../storage/statementParts.js"
import { nowMs } from "../storage/clock.js"
import { FENCE } from "../owners/fence.js"

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

/**
 * The parts of a start statement, and the names of the parts that created the owner and inserted
 * the execution. Those two come first in the statement; parts that refer to a fence (a folded
 * start's timer) must follow the fence.
 */
export const startParts = (
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
  const created = sql<boolean>`EXISTS (SELECT 1 FROM ${sql.id(inserted)})`
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
          : sql<number>`CASE WHEN EXISTS (SELECT 1 FROM ${sql.id(FENCE)})
              THEN ${nowMs(clock)} + ${folded.recoveryMs}::bigint ELSE ${nowMs(clock)} END`,
        { when: created },
      ),
    ],
  }
}

/** The final select of a plain start: whether it created the execution, and the wake-up of other processes. */
export const startSelect = (internals: AkterInternals, owner: OwnerPlacement, inserted: string) => {
  const created = sql`${countOf(inserted)} AS created`
  return internals.storage.backend === "postgres"
    ? sql`${created},
        (SELECT pg_notify(${WAKE_CHANNEL}, ${String(owner.bucket)}) FROM ${sql.id(inserted)}) AS notified`
    : created
}

/**
 * The start as a runner of this process takes it: committed by the first write of the execution's
 * pass, which tells `settled` what came of it.
 */
const unstartedExecution = (
  internals: AkterInternals,
  request: StartRequest,
  recoveryMs: number,
  settled: (outcome: StartOutcome) => void,
): UnstartedExecution => {
  const { head, tail, inserted, ownerCreated } = startParts(internals, request, {
    folded: { recoveryMs },
    awaited: false,
  })
  return {
    snapshot: unstartedSnapshot(newExecutionOf(request, false), startMarkers(request.workflow)),
    head,
    tail,
    names: { inserted, ownerCreated },
    settled,
  }
}

/**
 * Starts (or attaches to) an execution. A runner of this process that serves the bucket takes it
 * into its pass's first write (no claim, no poll, no statement of its own); otherwise it is one
 * statement, and runners are woken to claim its timer, due now. Resolves `true` when it created
 * the execution, `false` when it attached to an existing one.
 */
export const startExecution = async (
  internals: AkterInternals,
  request: StartRequest,
): Promise<boolean> => {
  const { owner, workflow } = request
  const taker = internals.wakeups.acceptorFor(owner.bucket, workflow.owner, workflow.name)
  if (taker !== undefined) {
    let settle!: (outcome: StartOutcome) => void
    const outcome = new Promise<StartOutcome>((resolve) => (settle = resolve))
    if (
      taker.acceptor.take(owner, unstartedExecution(internals, request, taker.recoveryMs, settle))
    ) {
      const taken = await outcome
      if (taken !== "not-taken") return taken === "created"
      // The pass ended before its first write committed (a drain, a lost lease, a failed write):
      // nothing of the start was written, so it is started as if no runner were here.
    }
  }
  const { head, tail, inserted } = startParts(internals, request, { awaited: true })
  faultPoint("start.before")
  const { rows } = await composeStatement(
    [...head, ...tail],
    startSelect(internals, owner, inserted),
  ).execute(internals.storage.db)
  faultPoint("start.after")
  if (rows[0]?.["created"] !== 1) return false
  internals.wakeups.wakeBucket(owner.bucket)
  return true
}
