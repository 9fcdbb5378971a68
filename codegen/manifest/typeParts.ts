/**
 * The types a type is made of, one level down: what every walk over a type visits. Walks here stay
 * shallow enough not to overflow, because the manifest checker refuses types nested deeper than
 * `MAX_TYPE_DEPTH`.
 */
import type { TypeNode } from "../../runtime/model/typeModel.js"

/** `string[]` → `[string]`; `{ a: A, b?: B }` → `[A, B]`; a scalar or a ref → `[]`. */
export const typeParts = (node: TypeNode): readonly TypeNode[] => {
  switch (node.kind) {
    case "array":
      return [node.items]
    case "record":
      return [node.values]
    case "oneOf":
      return node.variants
    case "object":
      return Object.values(node.fields).map((field) => field.type)
    default:
      return []
  }
}

/** Whether a type uses `json` anywhere (then its file declares the `Json` type). */
export const usesJson = (node: TypeNode): boolean =>
  node.kind === "json" || typeParts(node).some(usesJson)

/** Whether the type itself, not a named type it refers to, has object parts. */
export const hasObjectParts = (node: TypeNode): boolean =>
  node.kind === "object" || typeParts(node).some(hasObjectParts)

/** Names of the named types a type refers to, directly or through its parts, in order of use. */
export const referencedTypes = (node: TypeNode): string[] =>
  node.kind === "ref" ? [node.name] : typeParts(node).flatMap(referencedTypes)
