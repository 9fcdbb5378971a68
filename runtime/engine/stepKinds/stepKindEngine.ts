/**
 * What the engine knows of one step kind, and what every kind's behaviour shares. A kind's engine
 * module turns a declared step into the method a body calls on `wf`; that method replays the
 * recorded outcome when there is one, and otherwise does the first run, settles the step (or holds
 * its settle for the pass's next write) and parks the pass while the step must wait.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { StepKind } from "../../model/manifest.js"
import type { StepEnvironment } from "../stepEnvironment.js"
import { stepRow, type StepRow } from "../stepStore.js"
import { InterruptRequested } from "../signals.js"

/** The method a body calls for one declared step, built once per pass. */
export type StepMethod = (...args: never[]) => Effect.Effect<unknown, unknown>

/** The engine behaviour of one step kind. */
export interface StepKindEngine {
  /** Builds `wf.<step>` for the pass `env` belongs to. */
  readonly method: (env: StepEnvironment, step: string) => StepMethod
}

/** One engine module per step kind: a kind without one does not compile. */
export type StepKindEngines = { readonly [K in StepKind]: StepKindEngine }

/** The row a step of a single attempt records when it settles at `at`. */
export const settledRow = (
  step: string,
  kind: StepRow["kind"],
  exit: Buffer,
  at: number,
): StepRow => stepRow({ step, attempt: 1, kind, exit, started_at_ms: at, settled_at_ms: at })

/** A duration a body passed, in whole milliseconds; a negative or infinite one is a defect. */
export const durationMsOf = (step: string, duration: Duration.Input): Effect.Effect<number> => {
  const ms = Duration.toMillis(duration)
  return Number.isFinite(ms) && ms >= 0
    ? Effect.succeed(Math.ceil(ms))
    : Effect.die(new Error(`step ${step}: duration must be finite and not negative`))
}

/** The key of a single-attempt step's row. */
export const stepKey = (env: StepEnvironment, step: string) => ({
  routingKey: env.state.routingKey,
  executionId: env.state.executionId,
  step,
  attempt: 1,
})

/** An interrupted execution does no new step work, except while it compensates. */
export const interruptIfAsked = (env: StepEnvironment) =>
  env.state.interrupting && !env.state.compensating
    ? Effect.die(new InterruptRequested())
    : Effect.void
