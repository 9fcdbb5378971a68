/**
 * The `activity` step kind in code generation: its manifest entry (input, output, errors, retry with
 * the declared errors it retries, timeout), the retry policy's defaults and checks, the settings registration.ts passes the engine,
 * and `wf.<activity>(input)`. The activities interface an implementation fills is workflowsFile's.
 */
import type { ActivityStep, RetryPolicy } from "../../runtime/model/stepKinds/activity.js"
import { formatDuration, type StepPlan } from "../emit/ownerPlan.js"
import {
  arrayLiteral,
  numberValue,
  objectLiteral,
  stringValue,
  type ValueSyntax,
} from "../emit/typeScriptSyntax.js"
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

/**
 * The declared errors a policy retries: each must be one the step lists under `errors:`, since an
 * error it does not list is recorded as a defect (which is retried anyway) and never reaches here.
 */
const retriedErrors = (
  list: unknown,
  stepErrors: readonly string[],
  path: ManifestPath,
  context: StepCheckContext,
): readonly string[] | undefined => {
  if (!Array.isArray(list)) return undefined
  const names: string[] = []
  list.forEach((item, index) => {
    if (typeof item !== "string") return
    if (names.includes(item)) {
      context.report.error([...path, index], "duplicate-key", `error "${item}" is listed twice`, {
        hint: "list each error once",
      })
    } else if (!stepErrors.includes(item)) {
      context.report.error(
        [...path, index],
        "undeclared-retry-error",
        `retryOn names "${item}", which activity "${context.name}" does not list under errors:`,
        {
          hint:
            stepErrors.length === 0
              ? `list it under the step's errors:, or remove it from retryOn (failures that are not declared errors are retried without it)`
              : `retryOn takes errors the step lists (${stepErrors.join(", ")}); add it to the step's errors:, or remove it`,
        },
      )
    }
    names.push(item)
  })
  return names
}

const retryPolicy = (
  retry: StepEntry | undefined,
  stepErrors: readonly string[],
  path: ManifestPath,
  context: StepCheckContext,
): RetryPolicy | null => {
  if (retry === undefined) return null
  const retryOn = retriedErrors(retry["retryOn"], stepErrors, [...path, "retryOn"], context)
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
  return { attempts, initialMs, factor, maxMs, ...(retryOn === undefined ? {} : { retryOn }) }
}

const retryDocs = (plan: StepPlan<ActivityStep>): string => {
  if (plan.decl.retry === null) return ""
  const { attempts, initialMs, factor, maxMs, retryOn = [] } = plan.decl.retry
  const retried =
    plan.decl.errors.length === 0
      ? ""
      : retryOn.length === 0
        ? "; a declared error ends it without a retry"
        : `; of its declared errors only ${retryOn.join(", ")} ${retryOn.length === 1 ? "is" : "are"} retried`
  return ` Up to ${attempts} attempts, ${formatDuration(initialMs)} apart at first, growing ×${factor} to at most ${formatDuration(maxMs)}${retried}.`
}

const activityErrorsAndRetry = (step: StepEntry, context: StepCheckContext) => {
  const errors = context.errorList()
  const retry = retryPolicy(asMapping(step["retry"]), errors, [...context.path, "retry"], context)
  return { errors, retry }
}

export const activityCodegen: StepKindCodegen<ActivityStep> = {
  kind: "activity",
  format: ({ type, migratable, description, kind, errorList, duration, ruled }) => {
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
        retryOn: errorList
          .describe(
            "Declared errors of this step that are retried like a crash; any other declared error ends the activity at once (failures that are not declared errors are always retried).",
          )
          .optional(),
      })
      .describe("Retry policy of an activity.")
    return z
      .strictObject({
        kind: kind("activity"),
        description: description.optional(),
        input: type.optional().describe("The activity's input, an object type."),
        output: migratable.optional().describe("The activity's result."),
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
    ...activityErrorsAndRetry(step, context),
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
          ...(decl.retry.retryOn === undefined
            ? []
            : [["retryOn", arrayLiteral(decl.retry.retryOn.map(stringValue))] as const]),
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
