/**
 * The hand-off of a start to a runner of the same process. A runner registers a `StartAcceptor` on
 * the handle's `LocalStarts` (AkterInternals.localStarts); a client's start is offered here first,
 * and a runner that serves the owner's bucket and the workflow, with a free slot, runs the
 * execution's first pass with the start folded into that pass's first write: no statement of the
 * start's own, and no claim. What came of it is the value of the offer: the start goes one way,
 * client → engine → runner → pass, and nothing calls back into the client.
 *
 * The hops of a start that a runner of the starting process takes:
 * 1. client/ownerClient.ts `start`: validates the input, derives the key and execution id, and
 *    builds the `StartRequest` (engine/startRequest.ts).
 * 2. client/startExecution.ts `startExecution`: offers it, `internals.localStarts.offer(request)`
 *    (the relay of a staged start, runner/startRelay.ts, offers a child's start the same way, with
 *    its delete of the staged row to commit alongside).
 * 3. engine/localStarts.ts `offer`: asks each registered acceptor to take it.
 * 4. runner/localStartAcceptor.ts `take`: if it serves the bucket and the workflow now, builds the
 *    unstarted execution (engine/startStatement.ts `unstartedExecution`: the start statement's
 *    parts, its timer armed a recovery interval ahead as a claim would) and starts the execution's passes (runner/livePasses.ts `run`).
 * 5. engine/pass.ts `runPass`: replays nothing (the snapshot is the start's), holds the start in
 *    engine/passWriter.ts (`holdStart`).
 * 6. engine/passWriter.ts: the pass's first write carries the start — as a row of the step batch
 *    (engine/stepBatch.ts) beside other passes' writes, or, for a child's start, a grouped one or
 *    one with parts alongside, as its parts, then the owner's fence (owners/fence.ts
 *    `fencedStart`, which advances a new owner's generation), then the pass's own writes — in one
 *    statement, and settles the start: created, attached (the execution existed) or not taken
 *    (the pass ended before its first write committed).
 * 7. The promise from step 4 resolves with that outcome, and so does the client's offer; on
 *    "not-taken", or when no runner took it, the client has the engine write the start statement
 *    (engine/startStatement.ts `writeStart`) and wakes the runners to claim its timer.
 */
import type { StartOutcome } from "./executionStore.js"
import type { StartRequest } from "./startRequest.js"
import type { StatementPart } from "../storage/statementParts.js"

/** A runner of this process that takes starts into its passes (runner/localStartAcceptor.ts). */
export interface StartAcceptor {
  /**
   * Takes the start if this runner serves the owner's bucket and the workflow now and has a free
   * slot: resolves to what the pass's first write made of it. Undefined when it does not serve it;
   * "not-taken" when it serves it but cannot take it (a pass of the execution already runs here).
   */
  take(
    request: StartRequest,
    alongside?: readonly StatementPart[],
  ): Promise<StartOutcome> | undefined
}

export class LocalStarts {
  private readonly acceptors = new Set<StartAcceptor>()

  /** A runner takes this process's starts until the returned function is called. */
  accept(acceptor: StartAcceptor): () => void {
    this.acceptors.add(acceptor)
    return () => this.acceptors.delete(acceptor)
  }

  /**
   * Offers a start to the runners of this process: what came of it when one serves it, undefined
   * when none does. On "not-taken" nothing of the start was written: the caller writes it.
   */
  offer(
    request: StartRequest,
    /**
     * Parts the start's statement commits with, whether it creates or attaches: the relay's delete
     * of the staged row (runner/startRelay.ts).
     */
    alongside?: readonly StatementPart[],
  ): Promise<StartOutcome> | undefined {
    for (const acceptor of this.acceptors) {
      const taken = acceptor.take(request, alongside)
      if (taken !== undefined) return taken
    }
    return undefined
  }
}
