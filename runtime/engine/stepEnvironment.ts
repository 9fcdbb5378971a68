/**
 * What every step primitive of a pass shares: the pass state, the handle's internals, and the few
 * operations steps perform on the pass (write behind the fence, hold a write, park).
 */
import { Effect } from "effect"
import type { AkterInternals } from "../akter.js"
import type { OwnerRegistration } from "../model/registration.js"
import type { Tx } from "../storage/database.js"
import type { WorkflowImplementation } from "./workflowApi.js"
import type { Parked, PassState } from "./passState.js"
import type { HeldWrite } from "./passWriter.js"
import { PassAbandoned } from "./signals.js"

export interface StepEnvironment {
  readonly state: PassState
  readonly internals: AkterInternals
  readonly implementation: WorkflowImplementation
  /** How long an activity attempt's idempotency key stays valid after the attempt started. */
  readonly idempotencyWindowMs: number
  /** The runner's estimate of the database clock. */
  readonly now: () => number
  /** The owner registration a `start` step's target belongs to. */
  readonly ownerOf: (ownerType: string) => OwnerRegistration | undefined
  write<A>(label: string, write: (tx: Tx) => Promise<A>): Effect.Effect<A>
  hold(write: HeldWrite): void
  park(step: string, parked: Parked): Effect.Effect<void>
}

export const makeStepEnvironment = (
  base: Omit<StepEnvironment, "write" | "hold" | "park">,
): StepEnvironment => ({
  ...base,
  // A failed write has already broken the pass's writer; the step dies and the pass abandons.
  write: (label, write) =>
    Effect.tryPromise({
      try: () => base.state.writer.write(label, write),
      catch: (error) => error,
    }).pipe(Effect.catch((error) => Effect.die(new PassAbandoned(String(error))))),
  hold: (write) => base.state.writer.hold(write),
  park: (step, parked) =>
    Effect.callback<void>((resume, signal) => {
      base.state.park(step, parked, signal).then(() => resume(Effect.void))
    }),
})
