/**
 * Checks a workflow's `concurrency:` against its input: the key path must lead, through required
 * fields of object types, to a required field whose values compare exactly (a string, an integer,
 * a boolean or an enum), since executions are grouped by that value. Problems are located at the
 * `key` (or `limit`) of the manifest's `concurrency:` entry.
 */
import type { ConcurrencyDecl } from "../../runtime/model/manifest.js"
import type { NamedTypes, TypeNode } from "../../runtime/model/typeModel.js"
import { didYouMean } from "./didYouMean.js"
import { CONCURRENCY_KEY_PATH, MAX_CONCURRENCY_LIMIT } from "./formatSchema.js"
import type { ManifestReport } from "./manifestReport.js"
import { resolveNamedType } from "./namedTypeChecks.js"
import type { PlainValue } from "./plainValue.js"
import type { ManifestPath } from "./sourcePositions.js"

const GROUPING_KINDS = new Set(["string", "integer", "boolean", "enum"])

const HINT =
  "concurrency.key names a required string, integer, boolean or enum field of the workflow's input, e.g. customerId or customer.id"

const describeKind = (type: TypeNode): string =>
  type.kind === "enum" ? "an enum" : type.kind === "oneOf" ? "a oneOf union" : type.kind

/**
 * The declaration under `concurrency:`, or undefined when it is absent or malformed (the format
 * check reports a malformed one; this reports a key path that is not a grouping field of `input`).
 *
 * @example
 * const concurrency = checkConcurrency(body["concurrency"], input, types, report, ["workflows", "fulfill", "concurrency"])
 */
export const checkConcurrency = (
  value: PlainValue | undefined,
  input: TypeNode | null,
  types: NamedTypes,
  report: ManifestReport,
  path: ManifestPath,
): ConcurrencyDecl | undefined => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined
  const entry = value as { readonly [key: string]: PlainValue }
  const key = entry["key"]
  const limit = entry["limit"]
  // A malformed entry is the format check's to report.
  if (typeof key !== "string" || !CONCURRENCY_KEY_PATH.test(key)) return undefined
  if (typeof limit !== "number" || !Number.isInteger(limit)) return undefined
  if (limit < 1 || limit > MAX_CONCURRENCY_LIMIT) return undefined
  const at = [...path, "key"]
  const fail = (message: string, hint = HINT) => {
    report.error(at, "invalid-concurrency-key", message, { hint })
    return undefined
  }
  if (input === null) {
    return fail(`concurrency key "${key}" names an input field, but the workflow has no input`)
  }
  let current: TypeNode | undefined = resolveNamedType(input, types)
  const segments = key.split(".")
  for (const [index, segment] of segments.entries()) {
    if (current?.kind !== "object") {
      // The input not being an object is reported as not-an-object; deeper, it is this rule's.
      if (index === 0 || current === undefined) return undefined
      return fail(
        `concurrency key "${key}": "${segments.slice(0, index).join(".")}" is ${describeKind(current)}, not an object with a field "${segment}"`,
      )
    }
    const within = segments.slice(0, index).join(".")
    const field = current.fields[segment]
    if (field === undefined) {
      const suggestion = didYouMean(segment, Object.keys(current.fields))
      return fail(
        `concurrency key "${key}" is not a field of the input: ${within === "" ? "the input" : `"${within}"`} has no field "${segment}"`,
        suggestion ?? HINT,
      )
    }
    if (field.optional) {
      const named = segments.slice(0, index + 1).join(".")
      return fail(
        `concurrency key "${key}" goes through the optional field "${named}"; every start needs a key value`,
        `make the field required: write "${segment}:" instead of "${segment}?:"`,
      )
    }
    current = resolveNamedType(field.type, types)
  }
  if (current !== undefined && !GROUPING_KINDS.has(current.kind)) {
    return fail(
      `concurrency key "${key}" names a field of type ${describeKind(current)}; executions are grouped by a string, integer, boolean or enum value`,
    )
  }
  return { key, limit }
}
