/**
 * The manifest format as one zod description, from which both the validator's format check and the
 * JSON Schema editors use (`generated/manifest.schema.json`) are derived, so the two cannot disagree.
 *
 * The format is built by `manifestFormat(typeExpression)`: the validator passes an opaque schema for
 * type expressions, because the type checker (`typeExpressions.ts`) parses those itself with located,
 * specific errors; the JSON Schema passes `typeExpressionFormat`, the full recursive description of
 * the type language, so editors complete and validate types too.
 */
import { z } from "zod"
import { DURATION_FORMAT, DURATION_HINT } from "./durations.js"
import {
  ERROR_NAME,
  EVENT_NAME,
  FIELD_NAME,
  MARKER_NAME,
  MIGRATION_NAME,
  OWNER_NAME,
  SCHEDULE_NAME,
  STEP_NAME,
  TYPE_NAME,
  WORKFLOW_NAME,
} from "./names.js"
import { ruled, type FormatRule } from "./formatRules.js"
import { STEP_KINDS } from "../../runtime/model/stepKinds/stepKinds.js"
import { CATCH_UP_POLICIES, OVERLAP_POLICIES } from "../../runtime/model/schedule.js"
import { stepKindCodegens } from "../stepKinds/stepKinds.js"
import type { StepFormatParts } from "../stepKinds/stepKindCodegen.js"

const name = (pattern: RegExp, what: string, text?: string) =>
  ruled(text === undefined ? z.string().regex(pattern) : z.string().regex(pattern).describe(text), {
    rule: "invalid-name",
    expected: `${what} matching ${pattern.source}`,
  })

/** A record that must have an entry; `minProperties` tells editors, the refinement tells zod. */
const nonEmpty = <T extends z.ZodRecord>(record: T, text: string, rule: FormatRule) =>
  ruled(
    record
      .refine((value) => Object.keys(value as object).length > 0)
      .meta({ description: text, minProperties: 1 }),
    rule,
  )

const description = z.string().describe("Free text for people; never affects a hash.")

const duration = (text: string) =>
  ruled(z.string().regex(DURATION_FORMAT).describe(text), {
    rule: "invalid-duration",
    expected: "a duration such as 500ms, 30s, 5m, 2h or 1d",
    hint: DURATION_HINT,
  })

/** The keys a type expression in mapping form is built from; any other mapping is an object. */
export const CONSTRUCT_KEYS = ["enum", "oneOf", "record", "array", "type", "object"] as const

/** A type written as a string: a scalar or named type, then any number of `[]`. */
export const TYPE_REFERENCE = /^[A-Za-z][A-Za-z0-9]*(\[\])*$/

/** A concurrency key: field names joined by dots, into nested objects of the input. */
export const CONCURRENCY_KEY_PATH = new RegExp(
  `^${FIELD_NAME.source.slice(1, -1)}(\\.${FIELD_NAME.source.slice(1, -1)})*$`,
)

/** The highest concurrency limit a manifest may declare. */
export const MAX_CONCURRENCY_LIMIT = 10_000

/** A key of an object type: a field name, `?` appended for an optional field. */
export const OPTIONAL_FIELD_KEY = new RegExp(`^${FIELD_NAME.source.slice(1, -1)}\\??$`)

/**
 * The type language for editors: every form of `TypeNode` a manifest may write. The validator does
 * not use it (see the module comment); `typeExpressions.ts` implements the same language.
 */
export const typeExpressionFormat: z.ZodType = z
  .union([
    z.string().regex(TYPE_REFERENCE),
    z.strictObject({
      enum: z.array(z.string()).min(1).describe("The allowed string values."),
      description: description.optional(),
    }),
    z.strictObject({
      oneOf: z.array(z.lazy(() => typeExpressionFormat)).min(2),
      description: description.optional(),
    }),
    z.strictObject({
      record: z.lazy(() => typeExpressionFormat),
      description: description.optional(),
    }),
    z.strictObject({
      array: z.lazy(() => typeExpressionFormat),
      description: description.optional(),
    }),
    z.strictObject({
      type: z.lazy(() => typeExpressionFormat),
      description: description.optional(),
    }),
    z.strictObject({
      object: z.record(
        z.string().regex(OPTIONAL_FIELD_KEY),
        z.lazy(() => typeExpressionFormat),
      ),
      description: description.optional(),
    }),
    z
      .object({ description: description.optional() })
      .catchall(z.lazy(() => typeExpressionFormat))
      .refine((fields) =>
        Object.keys(fields).every(
          (key) =>
            OPTIONAL_FIELD_KEY.test(key) && !(CONSTRUCT_KEYS as readonly string[]).includes(key),
        ),
      )
      .meta({
        propertyNames: {
          pattern: OPTIONAL_FIELD_KEY.source,
          not: { enum: [...CONSTRUCT_KEYS] },
        },
      }),
  ])
  .meta({
    id: "TypeExpression",
    description:
      "A type: string, number, integer, boolean, null, json or a named type, optionally followed by [] " +
      "per array level; { enum: [...] }, { oneOf: [...] }, { record: T }, { array: T }, { type: T } " +
      "(to add a description), { object: { field: T } }, or a mapping of fields (`name?` for optional ones).",
  })

/**
 * The manifest format over a given description of type expressions.
 *
 * @example
 * manifestFormat(z.unknown()).safeParse(plainValue)
 */
export const manifestFormat = (type: z.ZodType) => {
  const typeMap = (key: z.ZodString) => z.record(key, type)
  /** A type whose recorded values may have had earlier shapes (see earlierShapeChecks.ts). */
  const migratable = z.union([
    type,
    z
      .strictObject({
        type,
        description: description.optional(),
        earlier: z
          .record(name(MIGRATION_NAME, "a migration name"), type)
          .meta({ minProperties: 1 })
          .describe(
            "Earlier shapes recorded data may still have, by migration name; the implementation migrates each to the type.",
          ),
      })
      .describe("A type with the earlier shapes its recorded values may have."),
  ])
  const errorList = z
    .array(z.string())
    .describe("Names of errors declared under the workflow's errors: that this step may fail with.")

  const parts: StepFormatParts = {
    type,
    migratable,
    description,
    kind: (value) => z.literal(value).describe("The step kind."),
    errorList,
    duration,
    name,
    ruled,
  }
  const [first, ...others] = STEP_KINDS.map((kind) => stepKindCodegens[kind].format(parts))
  const step = z.discriminatedUnion("kind", [first!, ...others])

  const markerRange = z
    .strictObject({
      min: ruled(z.number().int().min(0).describe("Oldest value still replayable."), {
        rule: "invalid-marker-range",
        expected: "an integer ≥ 0",
      }),
      current: ruled(z.number().int().min(1).describe("Value recorded by new executions."), {
        rule: "invalid-marker-range",
        expected: "an integer ≥ 1",
      }),
    })
    .describe("Replayable range of a version marker: 0 ≤ min ≤ current, current ≥ 1.")

  const concurrency = z
    .strictObject({
      key: ruled(
        z
          .string()
          .regex(CONCURRENCY_KEY_PATH)
          .describe(
            "Path of a required string, integer, boolean or enum field of the input (dots go into nested objects, e.g. customer.id): executions with the same value form one group.",
          ),
        {
          rule: "invalid-concurrency-key",
          expected: "a field path such as customerId or customer.id",
        },
      ),
      limit: ruled(
        z
          .number()
          .int()
          .min(1)
          .max(MAX_CONCURRENCY_LIMIT)
          .describe("How many executions of one group run at once; the others wait, in order."),
        {
          rule: "invalid-concurrency",
          expected: `an integer from 1 to ${MAX_CONCURRENCY_LIMIT}`,
        },
      ),
    })
    .describe(
      "A concurrency key: at most `limit` executions per value of an input field run at once across all runners; later ones are queued and start, in order, as earlier ones finish.",
    )

  const workflow = z
    .strictObject({
      description: description.optional(),
      input: migratable.optional().describe("Start input, an object type."),
      output: type.optional().describe("Result on success."),
      errors: z
        .record(name(ERROR_NAME, "an error name"), migratable)
        .describe(
          "Declared errors: name → payload object type ({} for none), with the earlier shapes recorded failures may have.",
        )
        .optional(),
      key: z
        .string()
        .describe("A required string field of the input that the execution key is taken from.")
        .optional(),
      concurrency: concurrency.optional(),
      versions: z
        .record(name(MARKER_NAME, "a marker name"), markerRange)
        .describe("Version markers.")
        .optional(),
      deadline: duration(
        "How long an execution may stay open: when it passes, the execution is interrupted (its compensations run) and its result names the deadline. A start may ask for a shorter one.",
      ).optional(),
      steps: nonEmpty(z.record(name(STEP_NAME, "a step name"), step), "The steps, by name.", {
        rule: "no-steps",
        expected: "a mapping of at least one step",
        hint: "declare the workflow's steps under steps:",
        at: "key",
      }),
    })
    .describe("A workflow of this owner.")

  const schedule = z
    .strictObject({
      description: description.optional(),
      workflow: z.string().describe("The workflow of this manifest each tick starts."),
      cron: ruled(
        z
          .string()
          .describe(
            "A five-field cron expression (minute hour day-of-month month day-of-week), e.g. '30 2 * * *'; or write every:.",
          ),
        { rule: "invalid-cron", expected: "a five-field cron expression such as '30 2 * * *'" },
      ).optional(),
      timeZone: z
        .string()
        .describe(
          "The IANA time zone the cron expression is read in, e.g. Europe/Berlin (default UTC).",
        )
        .optional(),
      every: duration(
        "A fixed interval, e.g. 15m; ticks fall on multiples of it since 1970-01-01T00:00Z. Or write cron:.",
      ).optional(),
      ownerId: z.string().describe("The owner id each tick's execution belongs to."),
      input: z
        .unknown()
        .describe("The start input of each tick, checked against the workflow's input type.")
        .optional(),
      overlap: ruled(
        z
          .enum(OVERLAP_POLICIES)
          .describe(
            "While the previous tick's execution is open: skip the tick (default), allow it, or queue it to start when that one finishes (at most one waits).",
          ),
        { rule: "invalid-policy", expected: `one of ${OVERLAP_POLICIES.join(", ")}` },
      ).optional(),
      catchUp: ruled(
        z
          .enum(CATCH_UP_POLICIES)
          .describe(
            "Ticks missed while no runner ticked the schedule: start the latest (default), all of them, or none.",
          ),
        { rule: "invalid-policy", expected: `one of ${CATCH_UP_POLICIES.join(", ")}` },
      ).optional(),
    })
    .describe(
      "A schedule that starts a workflow of this owner on a cron expression or an interval.",
    )

  return z
    .strictObject({
      akter: ruled(z.literal(1).describe("The manifest format version."), {
        rule: "unsupported-format",
        expected: "1, the manifest format version this akter reads",
      }),
      owner: name(OWNER_NAME, "an owner name", "The owner type these workflows belong to."),
      description: description.optional(),
      types: typeMap(name(TYPE_NAME, "a type name")).describe("Named types.").optional(),
      events: z
        .record(name(EVENT_NAME, "an event name"), migratable)
        .describe("Events of the owner: name → payload object type.")
        .optional(),
      workflows: nonEmpty(
        z.record(name(WORKFLOW_NAME, "a workflow name"), workflow),
        "The workflows, by name.",
        {
          rule: "no-workflows",
          expected: "a mapping of at least one workflow",
          hint: "declare at least one workflow under workflows:",
          at: "key",
        },
      ),
      schedules: z
        .record(name(SCHEDULE_NAME, "a schedule name"), schedule)
        .describe("Schedules that start this owner's workflows, by name.")
        .optional(),
    })
    .describe("An akter manifest: one owner type and its workflows.")
}

/** The format the validator checks; type expressions are checked by `typeExpressions.ts`. */
export const manifestFormatSchema = manifestFormat(z.unknown())

/** The full format, type language included, as the JSON Schema is derived from it. */
export const manifestFormatWithTypes = manifestFormat(typeExpressionFormat)

/**
 * The JSON Schema (draft-07) of the manifest format, for `# yaml-language-server: $schema=…`.
 *
 * @example
 * writeFileSync("generated/manifest.schema.json", JSON.stringify(manifestFormatJsonSchema(), null, 2))
 */
export const manifestFormatJsonSchema = (): object => ({
  ...z.toJSONSchema(manifestFormatWithTypes, { target: "draft-7", unrepresentable: "any" }),
  title: "akter manifest",
})
