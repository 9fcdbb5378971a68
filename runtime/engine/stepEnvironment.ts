/**
 * What every step primitive of a pass shares: the pass state, the handle's internals, and the few
 * operations steps perform on the pass (write behind the fence, hold a write, park).
 */
import * as Effect from "effect/Effect"
import type { RawBuilder } from "kysely"
import type { AkterInternals } from "../akter.js"
import type { OwnerRegistration } from "../model/registration.js"
import type { Held } from "../storage/rowsSource.js"
import type { ExecutionPatch, ExecutionStateReader } from "./executionStore.js"
import type { WorkflowImplementation } from "./workflowApi.js"
import type { Parked, PassState } from "./passState.js"
import type { PassWrite } from "./passWriter.js"
import type { HeldSettle } from "./stepStore.js"
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
  /** Reads an execution's state (an awaited child's), together with the runner's like reads. */
  readonly executionStates: ExecutionStateReader
  write<A>(label: string, write: PassWrite<A>): Effect.Effect<A>
  /**
   * Holds parts, or rows of a kind of write, for the pass's next write; `settles` names the parts
   * that settle a pending step.
   */
  hold(parts: readonly Held[], settles?: readonly string[]): void
  /**
   * Holds parts that must commit for the pass's next write (engine/passWriter.ts `holdWrite`), a
   * column for its select and what to do once it committed.
   */
  holdWrite(
    label: string,
    parts: readonly Held[],
    options?: {
      readonly column?: { readonly key: string; readonly sql: RawBuilder<unknown> }
      readonly committed?: () => void
    },
  ): void
  /** Holds the settle of a pending step attempt for the pass's next write. */
  holdSettle(settle: HeldSettle): void
  /** Begins an activity attempt (its pending row); resolves to its recorded start time. */
  beginActivity(step: string, attempt: number): Effect.Effect<number>
  patchExecution(patch: ExecutionPatch): void
  park(step: string, parked: Parked): Effect.Effect<void>
  /** Completes once the execution's start is recorded (a start folded into the pass writes now). */
  startRecorded: Effect.Effect<void>
}

/** A failed write has already broken the pass's writer; the step dies and the pass abandons. */
const written = <A>(write: () => Promise<A>): Effect.Effect<A> =>
  Effect.tryPromise({ try: write, catch: (error) => error }).pipe(
    Effect.catch((error) => Effect.die(new PassAbandoned(String(error)))),
  )

export const makeStepEnvironment = (
  base: Omit<
    StepEnvironment,
    | "write"
    | "hold"
    | "holdWrite"
    | "holdSettle"
    | "beginActivity"
    | "park"
    | "patchExecution"
    | "startRecorded"
  >,
): StepEnvironment => ({
  ...base,
  write: (label, write) => written(() => base.state.writer.write(label, write)),
  hold: (parts, settles) => base.state.writer.hold(parts, settles),
  holdWrite: (label, parts, options) => base.state.writer.holdWrite(label, parts, options),
  holdSettle: (settle) => base.state.writer.holdSettle(settle),
  beginActivity: (step, attempt) => written(() => base.state.writer.beginActivity(step, attempt)),
  patchExecution: (patch) => base.state.writer.patchExecution(patch),
  startRecorded: Effect.promise(() => base.state.writer.startRecorded()).pipe(Effect.asVoid),
  park: (step, parked) =>
    Effect.callback<void>((resume, signal) => {
      base.state.park(step, parked, signal).then(() => resume(Effect.void))
    }),
})
