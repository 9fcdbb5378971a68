/**
 * The type language of manifests, as data. A manifest's `input: { orderId: string }` becomes a
 * `TypeNode`; codegen prints TypeScript types and zod schemas from it, the runtime builds its
 * decoders from it, hashing reads its canonical form and the compatibility rules compare two of
 * them structurally. Every construct of the language is one variant here.
 */

export type TypeNode =
  ScalarNode | ArrayNode | ObjectNode | EnumNode | OneOfNode | RecordNode | RefNode

export type ScalarKind = "string" | "number" | "integer" | "boolean" | "null" | "json"

export interface ScalarNode {
  readonly kind: ScalarKind
  readonly description?: string
}

export interface ArrayNode {
  readonly kind: "array"
  readonly items: TypeNode
  readonly description?: string
}

export interface FieldNode {
  readonly type: TypeNode
  readonly optional: boolean
  readonly description?: string
}

export interface ObjectNode {
  readonly kind: "object"
  readonly fields: Readonly<Record<string, FieldNode>>
  readonly description?: string
}

/** A closed set of string literals. */
export interface EnumNode {
  readonly kind: "enum"
  readonly values: readonly string[]
  readonly description?: string
}

/** A value of any one of the variants (a union). */
export interface OneOfNode {
  readonly kind: "oneOf"
  readonly variants: readonly TypeNode[]
  readonly description?: string
}

/** An object with arbitrary string keys whose values all have one type. */
export interface RecordNode {
  readonly kind: "record"
  readonly values: TypeNode
  readonly description?: string
}

/** A reference to a named type of the owner's `types:`; only its structure is ever hashed. */
export interface RefNode {
  readonly kind: "ref"
  readonly name: string
  readonly description?: string
}

/** Named types of one owner manifest, which `ref` nodes point into. */
export type NamedTypes = Readonly<Record<string, TypeNode>>

/**
 * Types nest at most this deep (an array of objects of arrays counts three). Deeper types are refused
 * by the manifest checker with a located error, so no recursive walk here can overflow the stack.
 */
export const MAX_TYPE_DEPTH = 32

export const scalar = (kind: ScalarKind): ScalarNode => ({ kind })

export const SCALAR_KINDS: readonly ScalarKind[] = [
  "string",
  "number",
  "integer",
  "boolean",
  "null",
  "json",
]

export const isScalarKind = (name: string): name is ScalarKind =>
  (SCALAR_KINDS as readonly string[]).includes(name)

/**
 * Thrown when a `ref` names a type that does not exist or a chain of refs loops. The manifest checker
 * refuses both with a located error first, so reaching this at run time means a registration was
 * edited by hand.
 */
export class UnresolvedTypeReference extends Error {
  constructor(
    readonly typeName: string,
    readonly reason: "unknown" | "cycle",
  ) {
    super(
      reason === "unknown"
        ? `type "${typeName}" is not declared under types:`
        : `type "${typeName}" refers to itself; recursive types are not supported`,
    )
    this.name = "UnresolvedTypeReference"
  }
}

/**
 * Replaces every `ref` by the structure it names, so that two manifests that name the same
 * structure differently produce the same resolved type. Refuses unknown names and cycles.
 */
export const resolveRefs = (type: TypeNode, named: NamedTypes): TypeNode => {
  const visit = (node: TypeNode, resolving: readonly string[]): TypeNode => {
    switch (node.kind) {
      case "ref": {
        if (resolving.includes(node.name)) throw new UnresolvedTypeReference(node.name, "cycle")
        const target = named[node.name]
        if (target === undefined) throw new UnresolvedTypeReference(node.name, "unknown")
        return visit(target, [...resolving, node.name])
      }
      case "array":
        return { kind: "array", items: visit(node.items, resolving) }
      case "record":
        return { kind: "record", values: visit(node.values, resolving) }
      case "oneOf":
        return { kind: "oneOf", variants: node.variants.map((v) => visit(v, resolving)) }
      case "object": {
        const fields: Record<string, FieldNode> = {}
        for (const [name, field] of Object.entries(node.fields)) {
          fields[name] = { type: visit(field.type, resolving), optional: field.optional }
        }
        return { kind: "object", fields }
      }
      case "enum":
        return { kind: "enum", values: node.values }
      default:
        return { kind: node.kind }
    }
  }
  return visit(type, [])
}
