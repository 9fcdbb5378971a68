/**
 * Prints an owner's canonical manifest as a literal a person can read. The canonical form spells
 * every named type out wherever it is used (names never reach a hash), so the same structure
 * appears again and again: in inputs, outputs, each step's declared errors, each wait's payload.
 * Every named type, error payload and event payload whose structure occurs more than once becomes
 * one constant, and the literal refers to it; the data is the same, only written once.
 */
import { canonicalType } from "../../runtime/model/canonicalType.js"
import { SCALAR_KINDS, type TypeNode } from "../../runtime/model/typeModel.js"
import type { OwnerPlan } from "./ownerPlan.js"
import { dataLiteral } from "./writer.js"

/** A structure printed once, as `const moneyType: TypeNode = …`. */
export interface SharedType {
  readonly name: string
  readonly docs: string
  readonly literal: string
}

export interface CanonicalLiteral {
  /** In dependency order: each after the constants its literal refers to. */
  readonly shared: readonly SharedType[]
  readonly literal: string
}

/** Every kind a canonical type can have (refs are resolved away); step kinds are all different. */
const TYPE_KINDS = new Set<string>([...SCALAR_KINDS, "array", "object", "enum", "oneOf", "record"])

const isTypeNode = (value: unknown): value is TypeNode =>
  typeof value === "object" &&
  value !== null &&
  TYPE_KINDS.has((value as { kind?: unknown }).kind as string)

/** Objects and unions only: a shared `{ kind: "string" }` would say less than the literal itself. */
const isWorthSharing = (type: TypeNode): boolean => type.kind === "object" || type.kind === "oneOf"

const lowerFirst = (name: string): string => name[0]!.toLowerCase() + name.slice(1)

/**
 * Numbers structures: two canonical types get the same number exactly when they are equal. Each
 * node is numbered from its parts' numbers, so numbering a whole manifest is linear in its size.
 */
const structureNumbering = (): ((type: TypeNode) => number) => {
  const numbers = new WeakMap<TypeNode, number>()
  const bySignature = new Map<string, number>()
  const numberOf = (type: TypeNode): number => {
    const known = numbers.get(type)
    if (known !== undefined) return known
    let signature: string
    switch (type.kind) {
      case "object":
        signature = `object:${Object.entries(type.fields)
          .map(
            ([name, field]) =>
              `${JSON.stringify(name)}${field.optional ? "?" : ""}=${numberOf(field.type)}`,
          )
          .join(",")}`
        break
      case "array":
        signature = `array:${numberOf(type.items)}`
        break
      case "record":
        signature = `record:${numberOf(type.values)}`
        break
      case "oneOf":
        signature = `oneOf:${type.variants.map(numberOf).join(",")}`
        break
      case "enum":
        signature = `enum:${JSON.stringify(type.values)}`
        break
      default:
        signature = type.kind
    }
    const number = bySignature.get(signature) ?? bySignature.size
    bySignature.set(signature, number)
    numbers.set(type, number)
    return number
  }
  return numberOf
}

/** How often each structure occurs at a type position of `value`, by its number. */
const countStructures = (
  value: unknown,
  numberOf: (type: TypeNode) => number,
  counts: Map<number, number>,
): void => {
  if (Array.isArray(value)) {
    for (const item of value) countStructures(item, numberOf, counts)
    return
  }
  if (typeof value !== "object" || value === null) return
  if (isTypeNode(value)) {
    const number = numberOf(value)
    counts.set(number, (counts.get(number) ?? 0) + 1)
  }
  for (const member of Object.values(value)) countStructures(member, numberOf, counts)
}

/**
 * @example
 * const { shared, literal } = canonicalLiteral(plan)
 * // shared: [{ name: "moneyType", literal: '{ kind: "object", fields: { … } }', … }]
 * // literal: '{ format: 1, owner: "Order", events: { PaymentConfirmed: { …, amount: { type: moneyType, … } } }, … }'
 */
export const canonicalLiteral = (plan: OwnerPlan): CanonicalLiteral => {
  const named = plan.source.manifest.types
  const candidates = [
    ...plan.types
      .filter((declaration) => declaration.origin[0] === "types")
      .map((declaration) => ({
        name: `${lowerFirst(declaration.name)}Type`,
        docs: `Named type \`${declaration.name}\`, in canonical form.`,
        type: declaration.type,
      })),
    ...plan.events.map((event) => ({
      name: `${lowerFirst(event.payload.name)}Type`,
      docs: `Payload of event \`${event.event}\`, in canonical form.`,
      type: event.payload.type,
    })),
    ...plan.errors.map((error) => ({
      name: `${lowerFirst(error.name)}Type`,
      docs: `Payload of error \`${error.name}\`, in canonical form.`,
      type: error.payload,
    })),
  ]
  const numberOf = structureNumbering()
  const counts = new Map<number, number>()
  countStructures(plan.canonical, numberOf, counts)
  const byStructure = new Map<number, string>()
  const chosen: { name: string; docs: string; form: TypeNode; key: number }[] = []
  for (const candidate of candidates) {
    const form = canonicalType(candidate.type, named)
    const key = numberOf(form)
    if (!isWorthSharing(form) || byStructure.has(key) || (counts.get(key) ?? 0) < 2) continue
    byStructure.set(key, candidate.name)
    chosen.push({ name: candidate.name, docs: candidate.docs, form, key })
  }
  const referenceTo =
    (except?: number) =>
    (part: unknown): string | undefined => {
      if (!isTypeNode(part)) return undefined
      const key = numberOf(part)
      return key === except ? undefined : byStructure.get(key)
    }
  // A constant may refer to another only if that one is declared first: order them so.
  const shared: SharedType[] = []
  const declared = new Set<number>()
  const declare = (entry: (typeof chosen)[number]): void => {
    if (declared.has(entry.key)) return
    declared.add(entry.key)
    const inner = new Map<number, number>()
    for (const member of Object.values(entry.form)) countStructures(member, numberOf, inner)
    for (const other of chosen) if (inner.has(other.key)) declare(other)
    shared.push({
      name: entry.name,
      docs: entry.docs,
      literal: dataLiteral(entry.form, referenceTo(entry.key)),
    })
  }
  chosen.forEach(declare)
  return { shared, literal: dataLiteral(plan.canonical, referenceTo()) }
}
