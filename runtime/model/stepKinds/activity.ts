/**
 * The `activity` step kind in the model: code with a declared input, output and errors, run once
 * per attempt under a retry policy (which retries failures that are not declared errors, and the
 * declared errors it names). Its canonical form keeps the result types; the retry policy and
 * the timeout are settings, never hashed.
 */
import type { TypeNode } from "../typeModel.js"
import { declaredResultRefusal } from "./resultTypes.js"
import type { StepKindModel } from "./stepKindModel.js"

export interface RetryPolicy {
  /** Total attempts, the first included (so `1` means no retry). */
  readonly attempts: number
  readonly initialMs: number
  readonly factor: number
  readonly maxMs: number
  /**
   * Declared errors that are retried like a crash. A declared error not listed ends the activity
   * at its first occurrence (a business outcome, not a fault); absent: none is retried.
   */
  readonly retryOn?: readonly string[]
}

export interface ActivityStep {
  readonly kind: "activity"
  readonly description?: string
  readonly input: TypeNode | null
  readonly output: TypeNode | null
  /** Names of workflow errors this activity may fail with. */
  readonly errors: readonly string[]
  readonly retry: RetryPolicy | null
  /** Upper bound on one attempt's run time; `null`: none. */
  readonly timeoutMs: number | null
}

export const activityModel: StepKindModel<ActivityStep> = {
  kind: "activity",
  canonical: (step, context) => ({
    kind: "activity",
    output: context.type(step.output),
    errors: context.declaredErrors(step.errors),
  }),
  resultRefusal: declaredResultRefusal,
  eventWaitedFor: () => undefined,
  declaredTypes: (step) => ({ input: step.input, output: step.output }),
}
