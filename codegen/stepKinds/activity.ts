/**
 * The `activity` step kind in code generation: its manifest entry (input, output, errors, retry,
 * timeout), the retry policy's defaults and checks, the settings registration.ts passes the engine,
 * and `wf.<activity>(input)`. The activities interface an implementation fills is workflowsFile's.
 */
import type { ActivityStep, RetryPolicy } from "../../runtime/model/stepKinds/activity.js"
import { formatDuration, type StepPlan } from "../emit/ownerPlan.js"
import { numberValue, objectLiteral, type ValueSyntax } from "../emit/typeScriptSyntax.js"
import type { ManifestPath } from "../manifest/sourcePositions.js"
import { z } from "zod"
import { effectType, errorsOf, joinDocs, outputType } from "./methodParts.js"
import { declaredResultChanges } from "./resultChanges.js"
import type { StepCheckContext, StepEntry, StepKindCodegen } from "./stepKindCodegen.js"

const DEFAULT_RETRY_INITIAL_MS = 1_000
const DEFAULT_RETRY_FACTOR = 2
const DEFAULT_RETRY_MAX_MS = 60_000

const asMapping = (value: unknown): StepEntry | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as StepEntry)
    : undefined

const retryPolicy = (
  retry: StepEntry | undefined,
  path: ManifestPath,
  context: StepCheckContext,
): RetryPolicy | null => {
  if (retry === undefined) return null
  const attempts = retry["attempts"]
  const factor = retry["factor"] ?? DEFAULT_RETRY_FACTOR
  const initial = context.duration(retry, "initial", path)
  const max = context.duration(retry, "max", path)
  if (
    typeof attempts !== "number" ||
    typeof factor !== "number" ||
    initial === undefined ||
    max === undefined
  )
    return null
  const initialMs = initial ?? DEFAULT_RETRY_INITIAL_MS
  const maxMs = max ?? Math.max(initialMs, DEFAULT_RETRY_MAX_MS)
  if (maxMs < initialMs) {
    context.report.error(
      [...path, "max"],
      "invalid-retry",
      `the longest delay (max ${String(retry["max"])}) is shorter than the first (initial ${String(retry["initial"] ?? "1s")})`,
      {
        hint: "make max at least initial, or leave it out",
      },
    )
  }
  return { attempts, initialMs, factor, maxMs }
}

const retryDocs = (plan: StepPlan<ActivityStep>): string => {
  if (plan.decl.retry === null) return ""
  const { attempts, initialMs, factor, maxMs } = plan.decl.retry
  return ` Up to ${attempts} attempts, ${formatDuration(initialMs)} apart at first, growing ×${factor} to at most ${formatDuration(maxMs)}.`
}

export const activityCodegen: StepKindCodegen<ActivityStep> = {
  kind: "activity",
  format: ({ type, description, kind, errorList, duration, ruled }) => {
    const retry = z
      .strictObject({
        attempts: ruled(
          z.number().int().min(1).max(1000).describe("Total attempts, the first included."),
          {
            rule: "invalid-retry",
            expected: "an integer from 1 to 1000",
          },
        ),
        initial: duration("Delay before the first retry (default 1s).").optional(),
        factor: ruled(
          z
            .number()
            .min(1)
            .max(100)
            .describe("Each delay is the previous one times this (default 2)."),
          {
            rule: "invalid-retry",
            expected: "a number from 1 to 100",
          },
        ).optional(),
        max: duration(
          "Longest delay between attempts (default the larger of initial and 1m).",
        ).optional(),
      })
      .describe("Retry policy of an activity.")
    return z
      .strictObject({
        kind: kind("activity"),
        description: description.optional(),
        input: type.optional().describe("The activity's input, an object type."),
        output: type.optional().describe("The activity's result."),
        errors: errorList.optional(),
        retry: retry.optional(),
        timeout: duration("Upper bound on one attempt's run time.").optional(),
      })
      .describe("Runs code; its result is recorded once per attempt.")
  },
  check: (step, context) => ({
    kind: "activity",
    ...context.described,
    input: context.type("input", true),
    output: context.type("output", false),
    errors: context.errorList(),
    retry: retryPolicy(asMapping(step["retry"]), [...context.path, "retry"], context),
    timeoutMs: context.optionalDuration("timeout"),
  }),
  settings: (plan, { imports }) => {
    const { decl } = plan
    const settings: (readonly [string, ValueSyntax])[] = []
    if (plan.input !== null) settings.push(["input", imports.own(plan.input.schema)])
    if (decl.retry !== null) {
      settings.push([
        "retry",
        objectLiteral([
          ["attempts", numberValue(decl.retry.attempts)],
          ["initialMs", numberValue(decl.retry.initialMs)],
          ["factor", numberValue(decl.retry.factor)],
          ["maxMs", numberValue(decl.retry.maxMs)],
        ]),
      ])
    }
    if (decl.timeoutMs !== null) settings.push(["timeoutMs", numberValue(decl.timeoutMs)])
    return settings
  },
  method: (step, { imports }) => ({
    name: step.name,
    parameters: step.input === null ? [] : [{ name: "input", type: imports.own(step.input.name) }],
    returns: effectType(imports, outputType(step, imports), errorsOf(imports, step.decl.errors)),
    docs: joinDocs(
      `Activity \`${step.name}\`: runs its implementation and records the result, once per attempt.${retryDocs(step)}`,
      step.decl.description,
    ),
  }),
  describe: () => "activity",
  changes: declaredResultChanges,
}
