/**
 * How a runner takes starts issued in its own process (engine/localStarts.ts lists the hops): a
 * start of a workflow it implements, in a bucket it leases, while it has a slot free (and owed to
 * no timer already due), becomes its pass's first write instead of a statement of its own followed
 * by a claim. The timer the start arms is set a recovery interval ahead, as a claim would have set
 * it.
 */
import type { AkterInternals } from "../akter.js"
import { unstartedExecution } from "../engine/startStatement.js"
import type { StartOutcome } from "../engine/executionStore.js"
import type { StartRequest } from "../engine/startRequest.js"
import type { StatementPart } from "../storage/statementParts.js"
import type { LivePasses } from "./livePasses.js"
import { workflowKeyOf } from "./servedWorkflows.js"

export interface LocalStartOptions {
  readonly internals: AkterInternals
  readonly passes: LivePasses
  /** The workflows implemented here, by `owner/workflow`. */
  readonly implementations: ReadonlyMap<string, unknown>
  readonly concurrency: number
  /** Slots owed to timers already due (runner/localTimers.ts): a start waits behind them. */
  readonly owed: () => number
  readonly recoveryMs: number
  /** Whether the runner may take work now (not draining, and leasing the bucket). */
  readonly serves: (bucket: number) => boolean
  /** Tracks a taken start's passes, so a drain waits for them. */
  readonly track: (work: Promise<void>) => void
}

/** Registers the runner as a taker of this process's starts; returns how to stop. */
export const acceptLocalStarts = (options: LocalStartOptions): (() => void) => {
  const { internals, passes } = options
  return internals.localStarts.accept({
    take: (request: StartRequest, alongside?: readonly StatementPart[]) => {
      const { owner, workflow, executionId } = request
      if (
        // Admitted or queued under its group's lock, by a statement of its own (see
        // engine/concurrencyGroups.ts).
        request.concurrency !== null ||
        !options.serves(owner.bucket) ||
        passes.slotsTaken + options.owed() >= options.concurrency ||
        !options.implementations.has(workflowKeyOf(workflow.owner, workflow.name))
      ) {
        return undefined
      }
      // A pass of it already runs here: the execution exists, and a start attaches.
      if (passes.has(executionId)) return Promise.resolve("not-taken")
      let settled!: (outcome: StartOutcome) => void
      const outcome = new Promise<StartOutcome>((resolve) => (settled = resolve))
      const start = unstartedExecution(internals, request, options.recoveryMs, settled, alongside)
      options.track(passes.run(owner, executionId, false, start))
      return outcome
    },
  })
}
