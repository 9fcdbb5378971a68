/**
 * Structural type acceptance: does every value recorded under one type still decode, unchanged in
 * meaning, under another? The compatibility rules ask this of every input, result, error and event
 * payload that an execution may have recorded.
 *
 * The decoding this models is the runtime's decoding of recorded data, which is tolerant: an object
 * drops keys its type does not declare. So removing a field, or making a required field optional,
 * never breaks a replay, while adding a required field or changing a field's type does.
 *
 * Soundness rests on one invariant of the runtime: a recorded object holds only the fields its type
 * declared (inputs and event payloads are validated strictly, results are encoded through their
 * declared schema, which drops the rest). It is what makes "add an optional field" safe even after
 * a field of that name was removed.
 *
 * Decisions for the constructs that do not nest plainly, chosen so that a refusal may be too
 * cautious but an acceptance is never wrong:
 * - `object` → `record` is refused. A record reads every key of a value, so any key the object's
 *   type did not declare would fail the whole value, where the object decoder would have dropped it.
 * - `record` → `object` is accepted only when every field of the object is optional and accepts the
 *   record's value type: a record value may lack any key, and its other keys are dropped.
 * - A union is decomposed on the side of the old type (each old variant must be accepted) and
 *   matched on the side of the new (one new variant must accept the whole old type; an old enum is
 *   split value by value first). An old type whose values are spread over several new variants in
 *   another way is refused.
 */
import type { ObjectNode, RecordNode, TypeNode } from "../model/typeModel.js"

/** One step into a type: an object field, the items of an array, the values of a record, a union variant. */
export type TypePathSegment =
  | { readonly kind: "field"; readonly name: string }
  | { readonly kind: "items" }
  | { readonly kind: "values" }
  | { readonly kind: "variant"; readonly index: number }

/** Why an old type is not accepted, and where inside it the first problem is. */
export interface TypeRefusal {
  /**
   * The location as text: fields joined by `.`, `[]` for array items, `{}` for record values,
   * `oneOf[i]` for the i-th variant of the old union (in canonical order); `""` for the whole value.
   * E.g. `total.amount`, `skus[]`, `prices{}`, `oneOf[1].invoiceId`.
   */
  readonly path: string
  readonly reason: string
  /** The same location as data, for locating it in a manifest. */
  readonly segments: readonly TypePathSegment[]
}

interface Refused {
  readonly segments: readonly TypePathSegment[]
  readonly reason: string
}

/**
 * Renders segments as `total.amount`, `skus[]`, `prices{}` or `oneOf[1]`.
 *
 * @example
 * renderTypePath([{ kind: "field", name: "skus" }, { kind: "items" }]) // "skus[]"
 */
export const renderTypePath = (segments: readonly TypePathSegment[]): string => {
  let out = ""
  for (const segment of segments) {
    switch (segment.kind) {
      case "field":
        out = out === "" ? segment.name : `${out}.${segment.name}`
        break
      case "items":
        out = `${out}[]`
        break
      case "values":
        out = `${out}{}`
        break
      case "variant":
        out = out === "" ? `oneOf[${segment.index}]` : `${out}.oneOf[${segment.index}]`
        break
    }
  }
  return out
}

/**
 * A short name of a type for messages: `integer`, `enum [EUR, USD]`, `object`, `string[]`.
 *
 * @example
 * describeType({ kind: "array", items: { kind: "string" } }) // "string[]"
 */
export const describeType = (type: TypeNode): string => {
  switch (type.kind) {
    case "enum":
      return `enum [${type.values.join(", ")}]`
    case "array":
      return type.items.kind === "array" ||
        type.items.kind === "object" ||
        type.items.kind === "record" ||
        type.items.kind === "oneOf" ||
        type.items.kind === "enum"
        ? "array"
        : `${describeType(type.items)}[]`
    case "ref":
      return type.name
    case "json":
      return "json (any value)"
    default:
      return type.kind
  }
}

const refuse = (reason: string): Refused => ({ segments: [], reason })

const under = (segment: TypePathSegment, found: Refused | undefined): Refused | undefined =>
  found === undefined ? undefined : { segments: [segment, ...found.segments], reason: found.reason }

const changed = (next: TypeNode, previous: TypeNode): Refused =>
  refuse(`recorded as ${describeType(previous)}, read as ${describeType(next)}`)

const field = (name: string): TypePathSegment => ({ kind: "field", name })

const objectRefusal = (next: ObjectNode, previous: ObjectNode): Refused | undefined => {
  for (const [name, nextField] of Object.entries(next.fields)) {
    const previousField = previous.fields[name]
    if (previousField === undefined) {
      if (!nextField.optional) {
        return under(field(name), refuse("required, but recorded values lack it"))
      }
      continue
    }
    if (!nextField.optional && previousField.optional) {
      return under(field(name), refuse("required, but optional in the recorded type"))
    }
    const found = under(field(name), refusal(nextField.type, previousField.type))
    if (found !== undefined) return found
  }
  return undefined
}

const recordToObjectRefusal = (next: ObjectNode, previous: RecordNode): Refused | undefined => {
  for (const [name, nextField] of Object.entries(next.fields)) {
    if (!nextField.optional) {
      return under(field(name), refuse("required field, but recorded record values may lack it"))
    }
    const found = under(field(name), refusal(nextField.type, previous.values))
    if (found !== undefined) return found
  }
  return undefined
}

const unionRefusal = (
  next: TypeNode & { kind: "oneOf" },
  previous: TypeNode,
): Refused | undefined => {
  if (previous.kind === "enum") {
    for (const value of previous.values) {
      const single: TypeNode = { kind: "enum", values: [value] }
      if (!next.variants.some((variant) => refusal(variant, single) === undefined)) {
        return refuse(`enum value "${value}" is accepted by no variant of the reading oneOf`)
      }
    }
    return undefined
  }
  let closest: Refused | undefined
  for (const variant of next.variants) {
    const found = refusal(variant, previous)
    if (found === undefined) return undefined
    if (closest === undefined && variant.kind === previous.kind) closest = found
  }
  return closest ?? refuse(`no variant of the reading oneOf accepts ${describeType(previous)}`)
}

const refusal = (next: TypeNode, previous: TypeNode): Refused | undefined => {
  if (next.kind === "ref" || previous.kind === "ref") {
    throw new Error("accepts: compare canonical types, whose refs are resolved")
  }
  if (next.kind === "json") return undefined
  if (previous.kind === "oneOf") {
    for (const [index, variant] of previous.variants.entries()) {
      const found = under({ kind: "variant", index }, refusal(next, variant))
      if (found !== undefined) return found
    }
    return undefined
  }
  if (next.kind === "oneOf") return unionRefusal(next, previous)
  switch (previous.kind) {
    case "string":
    case "number":
    case "boolean":
    case "null":
      return next.kind === previous.kind ? undefined : changed(next, previous)
    case "integer":
      return next.kind === "integer" || next.kind === "number" ? undefined : changed(next, previous)
    case "json":
      return changed(next, previous)
    case "enum": {
      if (next.kind === "string") return undefined
      if (next.kind !== "enum") return changed(next, previous)
      const removed = previous.values.find((value) => !next.values.includes(value))
      return removed === undefined
        ? undefined
        : refuse(`recorded enum value "${removed}" is not in the reading enum`)
    }
    case "array":
      return next.kind === "array"
        ? under({ kind: "items" }, refusal(next.items, previous.items))
        : changed(next, previous)
    case "record":
      if (next.kind === "record")
        return under({ kind: "values" }, refusal(next.values, previous.values))
      if (next.kind === "object") return recordToObjectRefusal(next, previous)
      return changed(next, previous)
    case "object":
      if (next.kind === "object") return objectRefusal(next, previous)
      if (next.kind === "record") {
        return refuse(
          "recorded as object, read as record; a record would read keys the object never declared",
        )
      }
      return changed(next, previous)
  }
}

const finish = (found: Refused | undefined): TypeRefusal | null =>
  found === undefined
    ? null
    : { path: renderTypePath(found.segments), reason: found.reason, segments: found.segments }

/**
 * Whether every value of `previous` decodes unchanged under `next` (both canonical: refs
 * resolved). Returns `null` when accepted, or the first problem found, located inside `previous`.
 *
 * @example
 * const money = { kind: "object", fields: { amount: { type: { kind: "integer" }, optional: false } } }
 * const wider = { kind: "object", fields: { amount: { type: { kind: "number" }, optional: false } } }
 * accepts(wider, money) // null: integer → number is accepted
 * accepts(money, wider) // { path: "amount", reason: "recorded as number, read as integer", … }
 */
export const accepts = (next: TypeNode, previous: TypeNode): TypeRefusal | null =>
  finish(refusal(next, previous))

/**
 * {@link accepts} for declarations that may be absent, as a workflow's input or output and an
 * activity's output are (`null`: the declaration has none, and the recorded value is empty). A new
 * absent type accepts anything, since its reader ignores the value; an old absent type is accepted
 * only by a type that accepts `null`.
 *
 * @example
 * acceptsDeclared(null, { kind: "string" }) // null: the new code ignores the value
 * acceptsDeclared({ kind: "string" }, null) // { path: "", reason: "recorded without a value, read as string", … }
 */
export const acceptsDeclared = (
  next: TypeNode | null,
  previous: TypeNode | null,
): TypeRefusal | null => {
  if (next === null) return null
  if (previous === null) {
    return refusal(next, { kind: "null" }) === undefined
      ? null
      : finish(refuse(`recorded without a value, read as ${describeType(next)}`))
  }
  return accepts(next, previous)
}

/**
 * Whether every declared error that `previous` may have recorded is still declared by `next`, with
 * a payload type that accepts the old one. Errors `next` adds are accepted: nothing recorded them.
 * Paths start with the error's name, e.g. `OutOfStock.sku`.
 *
 * @example
 * acceptsErrors({}, { OutOfStock: outOfStock })
 * // { path: "OutOfStock", reason: "error is not declared by the reading manifest", … }
 */
export const acceptsErrors = (
  next: Readonly<Record<string, TypeNode>>,
  previous: Readonly<Record<string, TypeNode>>,
): TypeRefusal | null => {
  for (const [name, payload] of Object.entries(previous)) {
    const nextPayload = next[name]
    if (nextPayload === undefined) {
      return finish(under(field(name), refuse("error is not declared by the reading manifest")))
    }
    const found = under(field(name), refusal(nextPayload, payload))
    if (found !== undefined) return finish(found)
  }
  return null
}

/**
 * The same refusal seen from one level up, e.g. `amount` under `total` becomes `total.amount`: how
 * the rules place a refusal inside a step's result or a workflow's input.
 *
 * @example
 * refusalUnder("input", accepts(next, previous)!).path // "input.total.amount"
 */
export const refusalUnder = (name: string, refusal: TypeRefusal): TypeRefusal => {
  const segments = [field(name), ...refusal.segments]
  return { path: renderTypePath(segments), reason: refusal.reason, segments }
}
