/**
 * The type language's parser: turns a type expression of a manifest (`"Sku[]"`, `{ enum: [a, b] }`,
 * `{ orderId: string, express?: boolean }`) into a `TypeNode`, reporting every problem located at
 * the offending node. Refs to named types are kept as `ref` nodes; whether they form cycles or nest
 * too deep once resolved is checked over the whole manifest afterwards (`namedTypeChecks.ts`).
 */
import {
  isScalarKind,
  MAX_TYPE_DEPTH,
  SCALAR_KINDS,
  type FieldNode,
  type TypeNode,
} from "../../runtime/model/typeModel.js"
import { didYouMean } from "./didYouMean.js"
import { CONSTRUCT_KEYS } from "./formatSchema.js"
import type { ManifestReport } from "./manifestReport.js"
import { FIELD_NAME, isReservedName } from "./names.js"
import { setEntry, type PlainValue } from "./plainValue.js"
import type { ManifestPath } from "./sourcePositions.js"

/** Text jsonb can hold: no NUL, no lone surrogate (a UTF-8 round trip would replace it). */
const isStorableText = (text: string) =>
  !text.includes("\0") && Buffer.from(text, "utf8").toString("utf8") === text

/** A use of a named type inside a type expression. */
export interface RefUse {
  readonly name: string
  readonly path: ManifestPath
  /** Nesting level of the ref node itself (the expression's root is level 1). */
  readonly depth: number
}

export interface TypeContext {
  readonly report: ManifestReport
  /** Every name declared under `types:`. */
  readonly namedTypes: ReadonlySet<string>
  /** Filled with every ref the parsed expressions contain, in document order. */
  readonly refUses: RefUse[]
}

export interface ParsedType {
  readonly type: TypeNode
  /** Deepest nesting level inside the expression, refs counted as leaves. */
  readonly depth: number
}

const TYPE_STRING = /^([A-Za-z][A-Za-z0-9]*)((?:\[\])*)$/

const TYPE_FORMS_HINT =
  "a type is a scalar (string, number, integer, boolean, null, json) or a named type, optionally " +
  'followed by [] per list level ("Sku[]"), or a mapping: fields, { enum: [...] }, { oneOf: [...] }, ' +
  "{ record: T }, { array: T }, { type: T, description: ... } or { object: { ... } }"

const isMapping = (value: PlainValue | undefined): value is { [key: string]: PlainValue } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `the string "x"`, `the number 5`, `a list`: how a wrong value is named in a message. */
export const describeValue = (value: PlainValue | undefined): string => {
  if (value === undefined) return "nothing"
  if (value === null) return "an empty value"
  if (Array.isArray(value)) return value.length === 0 ? "an empty list" : "a list"
  if (typeof value === "object")
    return Object.keys(value).length === 0 ? "an empty mapping" : "a mapping"
  if (typeof value === "string")
    return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`
  return `the ${typeof value} ${String(value)}`
}

const withDescription = (type: TypeNode, description: string | undefined): TypeNode =>
  description === undefined ? type : { ...type, description }

const tooDeep = (context: TypeContext, path: ManifestPath): undefined => {
  context.report.error(
    path,
    "type-too-deep",
    `this type nests deeper than ${MAX_TYPE_DEPTH} levels`,
    { hint: "split it into named types under types:, or flatten it" },
  )
  return undefined
}

/**
 * Parses the type expression at `path`; reports problems and returns undefined when it is not a
 * valid type. Recursion is bounded by `MAX_TYPE_DEPTH`, checked before descending.
 *
 * @example
 * parseTypeExpression({ sku: "Sku", qty: "integer" }, ["types", "Line"], context)
 * // { type: { kind: "object", fields: { sku: { type: { kind: "ref", name: "Sku" }, optional: false }, … } }, depth: 2 }
 */
export const parseTypeExpression = (
  value: PlainValue | undefined,
  path: ManifestPath,
  context: TypeContext,
  depth = 1,
): ParsedType | undefined => {
  const { report } = context
  if (depth > MAX_TYPE_DEPTH) return tooDeep(context, path)
  if (typeof value === "string") return parseTypeString(value, path, context, depth)
  if (value === null || value === undefined) {
    report.error(path, "wrong-type", "a type is expected here, found an empty value", {
      hint: 'write "null" in quotes for the null type, {} for an object without fields, or leave the key out',
    })
    return undefined
  }
  if (Array.isArray(value)) {
    report.error(path, "wrong-type", "a type is expected here, found a list", {
      hint: 'write "T[]" or { array: T } for a list type, { oneOf: [A, B] } for a union, { enum: [a, b] } for a set of strings',
    })
    return undefined
  }
  if (typeof value !== "object") {
    report.error(path, "wrong-type", `a type is expected here, found ${describeValue(value)}`, {
      hint: TYPE_FORMS_HINT,
    })
    return undefined
  }
  const keys = Object.keys(value)
  const constructs = keys.filter((key) => (CONSTRUCT_KEYS as readonly string[]).includes(key))
  const description = parseDescription(value, path, report)
  if (constructs.length === 0) {
    const fields = parseFields(value, path, context, depth, "shorthand")
    if (fields === undefined || description === false) return undefined
    return {
      type: withDescription({ kind: "object", fields: fields.fields }, description),
      depth: fields.depth,
    }
  }
  const construct = constructs[0]!
  let valid = description !== false
  for (const extra of constructs.slice(1)) {
    report.error(
      [...path, extra],
      "invalid-type",
      `a type has one construct key; this one has "${construct}" and "${extra}"`,
      {
        at: "key",
        hint: `for an object with fields named "${construct}" and "${extra}", write { object: { ${construct}: …, ${extra}: … } }`,
      },
    )
    valid = false
  }
  for (const extra of keys) {
    if (extra === "description" || constructs.includes(extra)) continue
    report.error(
      [...path, extra],
      "unknown-key",
      `unknown key "${extra}" in a { ${construct}: … } type`,
      {
        at: "key",
        hint:
          didYouMean(extra, ["description", ...CONSTRUCT_KEYS]) ??
          `the key "${construct}" makes this mapping a { ${construct}: … } type, not an object; for an object with a field named "${construct}", write { object: { ${construct}: …, ${extra}: … } }`,
      },
    )
    valid = false
  }
  const inner = [...path, construct]
  const body = value[construct]
  const parsed = parseConstruct(construct, body, inner, context, depth)
  if (parsed === undefined || !valid || description === false) return undefined
  return { type: withDescription(parsed.type, description), depth: parsed.depth }
}

/** The mapping's `description:`; false when it is there but not a string (reported). */
const parseDescription = (
  value: { [key: string]: PlainValue },
  path: ManifestPath,
  report: ManifestReport,
): string | undefined | false => {
  if (!Object.hasOwn(value, "description")) return undefined
  const description = value["description"]
  if (typeof description === "string") return description
  report.error(
    [...path, "description"],
    "wrong-type",
    `a description must be a string, found ${describeValue(description)}`,
    {
      hint: 'for a field named "description", write the object in long form: { object: { description: T, … } }',
    },
  )
  return false
}

const parseTypeString = (
  text: string,
  path: ManifestPath,
  context: TypeContext,
  depth: number,
): ParsedType | undefined => {
  const { report, namedTypes } = context
  const match = TYPE_STRING.exec(text)
  if (match === null) {
    report.error(path, "invalid-type", `"${text}" is not a type`, { hint: TYPE_FORMS_HINT })
    return undefined
  }
  const base = match[1]!
  const levels = match[2]!.length / 2
  if (depth + levels > MAX_TYPE_DEPTH) return tooDeep(context, path)
  let type: TypeNode
  if (isScalarKind(base)) type = { kind: base }
  else if (namedTypes.has(base)) {
    type = { kind: "ref", name: base }
    context.refUses.push({ name: base, path, depth: depth + levels })
  } else {
    report.error(path, "unresolved-type", `unknown type "${base}"`, {
      hint:
        didYouMean(base, [...SCALAR_KINDS, ...namedTypes]) ??
        `declare it under types:, or use one of ${SCALAR_KINDS.join(", ")}`,
    })
    return undefined
  }
  for (let level = 0; level < levels; level++) type = { kind: "array", items: type }
  return { type, depth: depth + levels }
}

const parseConstruct = (
  construct: string,
  body: PlainValue | undefined,
  path: ManifestPath,
  context: TypeContext,
  depth: number,
): ParsedType | undefined => {
  const { report } = context
  switch (construct) {
    case "enum":
      return parseEnum(body, path, report, depth)
    case "oneOf": {
      if (!Array.isArray(body) || body.length < 2) {
        report.error(
          path,
          "invalid-type",
          `oneOf takes a list of at least two types, found ${Array.isArray(body) ? `${body.length} item${body.length === 1 ? "" : "s"}` : describeValue(body)}`,
          {
            hint: "write { oneOf: [A, B] }; a single type needs no oneOf",
          },
        )
        return undefined
      }
      const variants: TypeNode[] = []
      let deepest = depth
      let valid = true
      body.forEach((item, index) => {
        const variant = parseTypeExpression(item, [...path, index], context, depth + 1)
        if (variant === undefined) valid = false
        else {
          variants.push(variant.type)
          deepest = Math.max(deepest, variant.depth)
        }
      })
      return valid ? { type: { kind: "oneOf", variants }, depth: deepest } : undefined
    }
    case "record": {
      const values = parseTypeExpression(body, path, context, depth + 1)
      return values && { type: { kind: "record", values: values.type }, depth: values.depth }
    }
    case "array": {
      const items = parseTypeExpression(body, path, context, depth + 1)
      return items && { type: { kind: "array", items: items.type }, depth: items.depth }
    }
    case "type":
      return parseTypeExpression(body, path, context, depth)
    default: {
      if (!isMapping(body)) {
        report.error(
          path,
          "wrong-type",
          `object takes a mapping of fields, found ${describeValue(body)}`,
          {
            hint: "write { object: { field: T, optional?: T } }",
          },
        )
        return undefined
      }
      const fields = parseFields(body, path, context, depth, "long")
      return fields && { type: { kind: "object", fields: fields.fields }, depth: fields.depth }
    }
  }
}

const parseEnum = (
  body: PlainValue | undefined,
  path: ManifestPath,
  report: ManifestReport,
  depth: number,
): ParsedType | undefined => {
  if (!Array.isArray(body) || body.length === 0) {
    report.error(
      path,
      "invalid-type",
      `enum takes a non-empty list of strings, found ${Array.isArray(body) ? "an empty list" : describeValue(body)}`,
      {
        hint: "write { enum: [basic, pro] }",
      },
    )
    return undefined
  }
  const values: string[] = []
  // A set, not `values.includes`: a hostile enum of 100 000 values must not cost 10^10 steps.
  const seen = new Set<string>()
  let valid = true
  body.forEach((item, index) => {
    if (typeof item !== "string") {
      report.error(
        [...path, index],
        "wrong-type",
        `enum values are strings, found ${describeValue(item)}`,
        {
          hint: `quote it: "${String(item)}"`,
        },
      )
      valid = false
    } else if (seen.has(item)) {
      report.error([...path, index], "invalid-type", `enum value "${item}" is listed twice`, {
        hint: "list each value once",
      })
      valid = false
    } else if (!isStorableText(item)) {
      // The canonical manifest is stored as jsonb, which holds neither.
      report.error(
        [...path, index],
        "invalid-type",
        `enum value ${JSON.stringify(item)} holds a NUL character or a lone surrogate`,
        { hint: "enum values are stored in the database: use printable text" },
      )
      valid = false
    } else {
      seen.add(item)
      values.push(item)
    }
  })
  return valid ? { type: { kind: "enum", values }, depth } : undefined
}

/**
 * The fields of an object type. In shorthand form the key `description` is the object's own
 * description and construct keys never reach here; in long form (`{ object: … }`) every key is a
 * field.
 */
const parseFields = (
  body: { [key: string]: PlainValue },
  path: ManifestPath,
  context: TypeContext,
  depth: number,
  form: "shorthand" | "long",
): { fields: Record<string, FieldNode>; depth: number } | undefined => {
  const { report } = context
  const fields: Record<string, FieldNode> = {}
  const spelled = new Map<string, string>()
  let deepest = depth
  let valid = true
  for (const key of Object.keys(body)) {
    if (form === "shorthand" && key === "description") continue
    const keyPath = [...path, key]
    const optional = key.endsWith("?")
    const name = optional ? key.slice(0, -1) : key
    if (isReservedName(name)) {
      report.error(
        keyPath,
        "reserved-name",
        `field name "${name}" is reserved: names starting with $ belong to akter`,
        {
          at: "key",
          hint: "rename the field",
        },
      )
      valid = false
    } else if (!FIELD_NAME.test(name)) {
      report.error(keyPath, "invalid-name", `"${key}" is not a valid field name`, {
        at: "key",
        hint: `a field name matches ${FIELD_NAME.source}, with ? appended for an optional field`,
      })
      valid = false
    } else if (spelled.has(name)) {
      report.error(
        keyPath,
        "duplicate-key",
        `field "${name}" is declared twice (as "${spelled.get(name)}" and "${key}")`,
        {
          at: "key",
          hint: "keep one of them",
        },
      )
      valid = false
    }
    spelled.set(name, key)
    const field = parseTypeExpression(body[key], keyPath, context, depth + 1)
    if (field === undefined) {
      valid = false
      continue
    }
    deepest = Math.max(deepest, field.depth)
    const description = field.type.description
    setEntry(fields, name, {
      type: field.type,
      optional,
      ...(description === undefined ? {} : { description }),
    })
  }
  return valid ? { fields, depth: deepest } : undefined
}
