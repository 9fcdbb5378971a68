/**
 * A small validator for the part of JSON Schema draft-07 that the manifest schema uses, so the
 * schema editors receive can be checked without another dependency. It refuses schemas with any
 * keyword it does not implement, so a constraint can never be skipped silently.
 */
type Schema = { readonly [keyword: string]: unknown } | boolean

const ANNOTATIONS = new Set([
  "$schema",
  "title",
  "description",
  "definitions",
  "default",
  "examples",
])
const KEYWORDS = new Set([
  "$ref",
  "type",
  "const",
  "enum",
  "pattern",
  "properties",
  "required",
  "additionalProperties",
  "propertyNames",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "items",
  "minItems",
  "minProperties",
  "minimum",
  "maximum",
])

const typeOf = (value: unknown): string => {
  if (value === null) return "null"
  if (Array.isArray(value)) return "array"
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number"
  return typeof value
}

const equal = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/** Every violation as `path: what`; empty when `value` is valid against `root`. */
export const validateJsonSchema = (root: Schema, value: unknown): string[] => {
  const errors: string[] = []
  const resolve = (ref: string): Schema => {
    const match = /^#\/definitions\/(.+)$/.exec(ref)
    const definitions = (root as { definitions?: Record<string, Schema> }).definitions
    const target = match === null ? undefined : definitions?.[match[1]!]
    if (target === undefined) throw new Error(`unsupported $ref ${ref}`)
    return target
  }
  const check = (schema: Schema, value: unknown, path: string, out: string[]): void => {
    if (schema === true) return
    if (schema === false) {
      out.push(`${path}: no value is allowed here`)
      return
    }
    for (const keyword of Object.keys(schema)) {
      if (!KEYWORDS.has(keyword) && !ANNOTATIONS.has(keyword))
        throw new Error(`unsupported keyword ${keyword}`)
    }
    const s = schema as Record<string, unknown>
    if (typeof s["$ref"] === "string") check(resolve(s["$ref"]), value, path, out)
    const actual = typeOf(value)
    if (s["type"] !== undefined) {
      const types = Array.isArray(s["type"]) ? s["type"] : [s["type"]]
      const ok = types.some((t) => t === actual || (t === "number" && actual === "integer"))
      if (!ok) {
        out.push(`${path}: expected ${types.join("|")}, got ${actual}`)
        return
      }
    }
    if ("const" in s && !equal(s["const"], value))
      out.push(`${path}: expected ${JSON.stringify(s["const"])}`)
    if (Array.isArray(s["enum"]) && !s["enum"].some((v) => equal(v, value)))
      out.push(`${path}: not in enum`)
    if (
      typeof s["pattern"] === "string" &&
      typeof value === "string" &&
      !new RegExp(s["pattern"], "u").test(value)
    )
      out.push(`${path}: ${JSON.stringify(value)} does not match ${s["pattern"]}`)
    if (typeof value === "number") {
      if (typeof s["minimum"] === "number" && value < s["minimum"])
        out.push(`${path}: below ${s["minimum"]}`)
      if (typeof s["maximum"] === "number" && value > s["maximum"])
        out.push(`${path}: above ${s["maximum"]}`)
    }
    if (Array.isArray(value)) {
      if (typeof s["minItems"] === "number" && value.length < s["minItems"])
        out.push(`${path}: fewer than ${s["minItems"]} items`)
      if (s["items"] !== undefined)
        value.forEach((item, i) => check(s["items"] as Schema, item, `${path}[${i}]`, out))
    }
    if (actual === "object") {
      const object = value as Record<string, unknown>
      const properties = (s["properties"] ?? {}) as Record<string, Schema>
      for (const key of (s["required"] ?? []) as string[])
        if (!(key in object)) out.push(`${path}: missing ${key}`)
      if (typeof s["minProperties"] === "number" && Object.keys(object).length < s["minProperties"])
        out.push(`${path}: fewer than ${s["minProperties"]} properties`)
      for (const [key, item] of Object.entries(object)) {
        if (s["propertyNames"] !== undefined)
          check(s["propertyNames"] as Schema, key, `${path}.${key}(name)`, out)
        if (key in properties) check(properties[key]!, item, `${path}.${key}`, out)
        else if (s["additionalProperties"] !== undefined)
          check(s["additionalProperties"] as Schema, item, `${path}.${key}`, out)
      }
    }
    const branches = (keyword: string) =>
      Array.isArray(s[keyword]) ? (s[keyword] as Schema[]) : undefined
    const passing = (list: Schema[]) =>
      list.filter((branch) => {
        const branchErrors: string[] = []
        check(branch, value, path, branchErrors)
        return branchErrors.length === 0
      }).length
    const anyOf = branches("anyOf")
    if (anyOf !== undefined && passing(anyOf) === 0) out.push(`${path}: matches none of anyOf`)
    const oneOf = branches("oneOf")
    if (oneOf !== undefined && passing(oneOf) !== 1)
      out.push(`${path}: matches ${passing(oneOf)} of oneOf, not 1`)
    for (const branch of branches("allOf") ?? []) check(branch, value, path, out)
    if (s["not"] !== undefined) {
      const notErrors: string[] = []
      check(s["not"] as Schema, value, path, notErrors)
      if (notErrors.length === 0) out.push(`${path}: matches a schema it must not`)
    }
  }
  check(root, value, "$", errors)
  return errors
}
