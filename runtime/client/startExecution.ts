/**
 * A client's start. It is first offered to the runners of its process (engine/localStarts.ts,
 * which lists the hops): one that serves the owner's bucket takes it into the first write of the
 * execution's pass (no claim, no poll, no statement of its own), and the offer resolves to what
 * came of it. Otherwise the engine's start statement writes it (engine/startStatement.ts) and
 * runners are woken to claim its timer, due now. A second start of the same execution id attaches
 * and writes nothing.
 */
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { StartRequest } from "../engine/startRequest.js"
import { writeStart } from "../engine/startStatement.js"

/**
 * Starts (or attaches to) an execution. Resolves `true` when it created the execution, `false`
 * when it attached to an existing one.
 */
export const startExecution = async (
  internals: AkterInternals,
  request: StartRequest,
): Promise<boolean> => {
  const { owner, workflow } = request
  const offered = internals.localStarts.offer(request)
  if (offered !== undefined) {
    const taken = await offered
    if (taken === "created") internals.metrics.executionStarted(workflow.owner, workflow.name)
    if (taken !== "not-taken") return taken === "created"
    // The pass ended before its first write committed (a drain, a lost lease, a failed write):
    // nothing of the start was written, so it is started as if no runner were here.
  }
  faultPoint("start.before")
  const created = await writeStart(internals, request, { awaited: true })
  faultPoint("start.after")
  if (!created) return false
  // Its finish notifies (it is marked awaited): a caller here waits for that without reading first.
  if (internals.hearsResults()) internals.wakeups.startedFresh(request.executionId)
  internals.metrics.executionStarted(workflow.owner, workflow.name)
  internals.wakeups.wakeBucket(owner.bucket)
  return true
}
