/**
 * The `sleep` step kind in the model: a durable timer. It records no value, so its canonical form
 * is its kind alone and any recorded sleep replays under any manifest; the default duration is a
 * setting, never hashed.
 */
import type { StepKindModel } from "./stepKindModel.js"

export interface SleepStep {
  readonly kind: "sleep"
  readonly description?: string
  /** Default duration when the body passes none; `null`: the body must pass one. */
  readonly durationMs: number | null
}

export const sleepModel: StepKindModel<SleepStep> = {
  kind: "sleep",
  canonical: () => ({ kind: "sleep" }),
  resultRefusal: () => null,
  eventWaitedFor: () => undefined,
  declaredTypes: () => ({ input: null, output: null }),
}
