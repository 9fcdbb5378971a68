/**
 * The interrupt transaction: set the execution's interrupt flag and arm its timer due now; the next
 * pass runs the compensations and records `Interrupt`. Interrupting a finished execution changes
 * nothing, so interrupt is idempotent and interrupt racing completion leaves one result.
 */
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import { requestInterrupt } from "../engine/executionStore.js"
import { armTimer } from "../outbox/outboxStore.js"
import { notifyBucket } from "../outbox/wakeups.js"
import type { ResolvedExecution } from "./executionResults.js"

export const interruptExecution = async (
  internals: AkterInternals,
  execution: ResolvedExecution,
): Promise<void> => {
  const { clock } = internals
  faultPoint("interrupt.before")
  const flagged = await internals.storage.db.transaction().execute(async (tx) => {
    const changed = await requestInterrupt(tx, execution.owner.routingKey, execution.executionId)
    if (!changed) return false
    await armTimer(tx, clock, execution.owner, execution.executionId, "now")
    if (internals.storage.backend === "postgres") await notifyBucket(tx, execution.owner.bucket)
    return true
  })
  faultPoint("interrupt.after")
  if (flagged) internals.wakeups.wakeBucket(execution.owner.bucket)
}
