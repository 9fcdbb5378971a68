/**
 * The start transaction: create the owner if new, insert the execution with its markers and start
 * manifest, arm its timer due now. Used by clients and by the relay of staged starts alike; a
 * second start of the same execution id attaches and writes nothing.
 */
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { ensureOwner } from "../owners/ownerStore.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { insertExecution } from "../engine/executionStore.js"
import { insertMarkers } from "../engine/stepStore.js"
import { armTimer } from "../outbox/outboxStore.js"
import { notifyBucket } from "../outbox/wakeups.js"
import { recordStartManifest } from "../storage/manifestStore.js"
import type { Tx } from "../storage/database.js"

export interface StartRequest {
  readonly owner: OwnerPlacement
  readonly workflow: WorkflowRegistration
  readonly executionId: string
  readonly key: string
  readonly input: Buffer
  readonly caller: string
}

/** Runs the start inside `tx`; resolves to whether a new execution was created. */
export const startInTransaction = async (
  internals: AkterInternals,
  tx: Tx,
  request: StartRequest,
): Promise<boolean> => {
  const { clock } = internals
  await ensureOwner(tx, clock, request.owner)
  const created = await insertExecution(tx, clock, {
    owner: request.owner,
    executionId: request.executionId,
    workflow: request.workflow.name,
    key: request.key,
    manifestHash: request.workflow.hashes.compatibility,
    input: request.input,
    caller: request.caller,
  })
  if (!created) return false
  const markers: Record<string, number> = {}
  for (const [name, range] of Object.entries(request.workflow.canonical.versions)) {
    markers[name] = range.current
  }
  await insertMarkers(tx, clock, request.owner.routingKey, request.executionId, markers)
  await recordStartManifest(tx, request.workflow.canonical, request.workflow.hashes.compatibility)
  await armTimer(tx, clock, request.owner, request.executionId, "now")
  if (internals.storage.backend === "postgres") await notifyBucket(tx, request.owner.bucket)
  return true
}

/** Starts (or attaches to) an execution in its own transaction and wakes this process's runners. */
export const startExecution = async (
  internals: AkterInternals,
  request: StartRequest,
): Promise<boolean> => {
  faultPoint("start.before")
  const created = await internals.storage.db
    .transaction()
    .execute((tx) => startInTransaction(internals, tx, request))
  faultPoint("start.after")
  if (created) internals.wakeups.wakeBucket(request.owner.bucket)
  return created
}
