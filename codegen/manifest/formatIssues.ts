/**
 * Turns the zod issues of the format check into located diagnostics: the rule of the schema that
 * failed (`formatRules`), a message in the manifest's own words, and for unknown keys a "did you
 * mean" among the keys allowed at that place.
 */
import { z } from "zod"
import { STEP_KINDS } from "../../runtime/model/manifest.js"
import { didYouMean } from "./didYouMean.js"
import { formatRules } from "./formatRules.js"
import { manifestFormatSchema } from "./formatSchema.js"
import { renderPath, type ManifestReport } from "./manifestReport.js"
import { isReservedName } from "./names.js"
import type { PlainValue } from "./plainValue.js"
import type { ManifestPath } from "./sourcePositions.js"
import { describeValue } from "./typeExpressions.js"

const valueAt = (root: PlainValue | undefined, path: ManifestPath): PlainValue | undefined => {
  let value = root
  for (const segment of path) {
    if (typeof value !== "object" || value === null) return undefined
    value = (value as Record<string, PlainValue>)[segment as string]
  }
  return value
}

const unwrap = (schema: z.ZodType): z.ZodType => {
  let current = schema
  for (;;) {
    if (current instanceof z.ZodOptional || current instanceof z.ZodLazy)
      current = current.unwrap() as z.ZodType
    else return current
  }
}

/** The option of a discriminated union that a value's `kind` selects. */
const selectOption = (schema: z.ZodType, value: PlainValue | undefined): z.ZodType => {
  if (!(schema instanceof z.ZodUnion)) return schema
  const kind =
    typeof value === "object" && value !== null
      ? (value as Record<string, PlainValue>)["kind"]
      : undefined
  for (const option of schema.options as readonly z.ZodType[]) {
    const object = unwrap(option)
    if (!(object instanceof z.ZodObject)) continue
    const literal = unwrap(object.shape["kind"] as z.ZodType)
    if (literal instanceof z.ZodLiteral && literal.value === kind) return object
  }
  return schema
}

/** The schema that validates the value at `path`, as far as it can be told. */
const schemaAt = (
  root: z.ZodType,
  path: ManifestPath,
  value: PlainValue | undefined,
): z.ZodType | undefined => {
  let schema = unwrap(root)
  for (let index = 0; index <= path.length; index++) {
    schema = unwrap(selectOption(schema, valueAt(value, path.slice(0, index))))
    if (index === path.length) return schema
    const segment = path[index]!
    if (schema instanceof z.ZodObject) {
      const next = schema.shape[segment as string] as z.ZodType | undefined
      if (next === undefined) return undefined
      schema = next
    } else if (schema instanceof z.ZodRecord) schema = schema.valueType as z.ZodType
    else if (schema instanceof z.ZodArray) schema = schema.element as z.ZodType
    else return undefined
  }
  return schema
}

const shapeKeys = (schema: z.ZodType | undefined): string[] =>
  schema instanceof z.ZodObject ? Object.keys(schema.shape) : []

/** `workflow "fulfill"`, `activity step "reserve"`: what the mapping at `path` is. */
const describePlace = (path: ManifestPath, root: PlainValue | undefined): string => {
  const [section, name, sub, subName, leaf] = path
  if (path.length === 0) return "the manifest"
  if (section === "workflows" && path.length === 2) return `workflow "${String(name)}"`
  if (section === "workflows" && sub === "steps" && path.length === 4) {
    const kind = valueAt(root, [...path, "kind"])
    return `${typeof kind === "string" && (STEP_KINDS as readonly string[]).includes(kind) ? `${kind} ` : ""}step "${String(subName)}"`
  }
  if (section === "workflows" && sub === "steps" && leaf === "retry")
    return `the retry policy of step "${String(subName)}"`
  if (section === "workflows" && sub === "versions" && path.length === 4)
    return `version marker "${String(subName)}"`
  return renderPath(path)
}

const ZOD_EXPECTED: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "true or false",
  object: "a mapping",
  record: "a mapping",
  array: "a list",
}

const expectedText = (issue: z.core.$ZodIssue): string => {
  switch (issue.code) {
    case "invalid_type":
      return ZOD_EXPECTED[issue.expected] ?? issue.expected
    case "invalid_value":
      return issue.values.length === 1
        ? JSON.stringify(issue.values[0])
        : `one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`
    case "too_small":
      return `at least ${String(issue.minimum)}`
    case "too_big":
      return `at most ${String(issue.maximum)}`
    case "invalid_format":
      return issue.format === "regex" && "pattern" in issue
        ? `text matching ${String(issue.pattern)}`
        : issue.format
    default:
      return "something else"
  }
}

/**
 * Reports every issue of validating `value` against `manifestFormatSchema`.
 *
 * @example
 * const result = manifestFormatSchema.safeParse(value, { reportInput: true })
 * if (!result.success) reportFormatIssues(result.error.issues, value, report)
 */
export const reportFormatIssues = (
  issues: readonly z.core.$ZodIssue[],
  value: PlainValue,
  report: ManifestReport,
  root: z.ZodType = manifestFormatSchema,
): void => {
  for (const issue of issues) {
    const path = issue.path as (string | number)[]
    const last = path[path.length - 1]
    switch (issue.code) {
      case "unrecognized_keys": {
        const allowed = shapeKeys(schemaAt(root, path, value))
        for (const key of issue.keys) {
          report.error(
            [...path, key],
            "unknown-key",
            `unknown key "${key}" in ${describePlace(path, value)}`,
            {
              at: "key",
              hint:
                didYouMean(key, allowed) ??
                otherKindHint(root, path, value, key) ??
                `allowed keys: ${allowed.join(", ")}`,
            },
          )
        }
        break
      }
      case "invalid_union": {
        if (!("discriminator" in issue) || issue.discriminator !== "kind") {
          report.error(path, "wrong-type", issue.message)
          break
        }
        const stepPath = last === "kind" ? path.slice(0, -1) : path
        const kind = valueAt(value, [...stepPath, "kind"])
        if (kind === undefined) {
          report.error(stepPath, "missing-key", `${describePlace(stepPath, value)} has no kind`, {
            at: "key",
            hint: `add kind: one of ${STEP_KINDS.join(", ")}`,
          })
        } else {
          report.error(
            [...stepPath, "kind"],
            "unknown-step-kind",
            `${typeof kind === "string" ? JSON.stringify(kind) : describeValue(kind)} is not a step kind`,
            {
              hint:
                (typeof kind === "string" ? didYouMean(kind, STEP_KINDS) : undefined) ??
                `a step kind is one of ${STEP_KINDS.join(", ")}`,
            },
          )
        }
        break
      }
      case "invalid_key": {
        const key = String(last)
        if (isReservedName(key)) {
          report.error(
            path,
            "reserved-name",
            `"${key}" is reserved: names starting with $ belong to akter`,
            {
              at: "key",
              hint: "rename it",
            },
          )
          break
        }
        const keySchema = (() => {
          const record = schemaAt(root, path.slice(0, -1), value)
          return record instanceof z.ZodRecord ? (record.keyType as z.ZodType) : undefined
        })()
        const rule = keySchema === undefined ? undefined : formatRules.get(keySchema)
        report.error(
          path,
          rule?.rule ?? "invalid-name",
          `"${key}" is not a valid name here: expected ${rule?.expected ?? "a plain name"}`,
          {
            at: "key",
            hint: rule?.hint,
          },
        )
        break
      }
      default: {
        const input = valueAt(value, path)
        if (input === undefined) {
          const parent = path.slice(0, -1)
          report.error(
            parent,
            "missing-key",
            `${describePlace(parent, value)} is missing the required key "${String(last)}"`,
            {
              at: "key",
              hint: missingKeyHint(String(last)),
            },
          )
          break
        }
        const schema = schemaAt(root, path, value)
        const rule = schema === undefined ? undefined : formatRules.get(schema)
        if (rule?.rule === "invalid-name" && typeof input === "string" && isReservedName(input)) {
          report.error(
            path,
            "reserved-name",
            `"${input}" is reserved: names starting with $ belong to akter`,
            {
              hint: "rename it",
            },
          )
          break
        }
        report.error(
          path,
          rule?.rule ?? "wrong-type",
          `"${String(last ?? "manifest")}" must be ${rule?.expected ?? expectedText(issue)}, found ${describeValue(input)}`,
          {
            hint: rule?.hint ?? wrongTypeHint(input),
            ...(rule?.at === undefined ? {} : { at: rule.at }),
          },
        )
      }
    }
  }
}

const missingKeyHint = (key: string): string | undefined => {
  switch (key) {
    case "akter":
      return 'start the manifest with "akter: 1", the format version'
    case "owner":
      return "name the owner type, e.g. owner: Order"
    case "workflows":
      return "declare at least one workflow under workflows:"
    case "steps":
      return "declare the workflow's steps under steps:"
    default:
      return undefined
  }
}

const wrongTypeHint = (input: PlainValue | undefined): string | undefined =>
  input === null ? "the value is empty; write it after the colon, or remove the key" : undefined

/** For a key that belongs to another step kind: `"event" belongs to steps of kind wait`. */
const otherKindHint = (
  root: z.ZodType,
  path: ManifestPath,
  value: PlainValue | undefined,
  key: string,
): string | undefined => {
  if (!(path[0] === "workflows" && path[2] === "steps" && path.length === 4)) return undefined
  const steps = schemaAt(root, path.slice(0, -1), value)
  const union = steps instanceof z.ZodRecord ? unwrap(steps.valueType as z.ZodType) : undefined
  if (!(union instanceof z.ZodUnion)) return undefined
  const kinds = (union.options as readonly z.ZodType[]).flatMap((option) => {
    const object = unwrap(option)
    if (!(object instanceof z.ZodObject) || !(key in object.shape)) return []
    const literal = unwrap(object.shape["kind"] as z.ZodType)
    return literal instanceof z.ZodLiteral ? [String(literal.value)] : []
  })
  return kinds.length === 0 ? undefined : `"${key}" belongs to steps of kind ${kinds.join(", ")}`
}
