import { canonicalJson } from "./canonicalJson.js"
import { resolveRefs, type FieldNode, type NamedTypes, type TypeNode } from "./typeModel.js"

/**
 * The canonical form of a type: refs resolved to their structure, descriptions dropped, enum values
 * sorted and deduplicated, unions flattened, sorted and deduplicated, and a union of one variant
 * replaced by that variant. Two types get equal canonical forms when they are written the same way up
 * to the names of named types, key order and descriptions: what hashing needs. Whether one type
 * accepts the values of another is a different question, answered by `accepts` in compatibility/.
 */
export const canonicalType = (type: TypeNode, named: NamedTypes): TypeNode =>
  normalize(resolveRefs(type, named))

const normalize = (node: TypeNode): TypeNode => {
  switch (node.kind) {
    case "array":
      return { kind: "array", items: normalize(node.items) }
    case "record":
      return { kind: "record", values: normalize(node.values) }
    case "object": {
      const fields: Record<string, FieldNode> = {}
      for (const name of Object.keys(node.fields).sort()) {
        const field = node.fields[name]!
        fields[name] = { type: normalize(field.type), optional: field.optional }
      }
      return { kind: "object", fields }
    }
    case "enum":
      return { kind: "enum", values: [...new Set(node.values)].sort() }
    case "oneOf": {
      const byForm = new Map<string, TypeNode>()
      const add = (variant: TypeNode) => {
        if (variant.kind === "oneOf") variant.variants.forEach(add)
        else byForm.set(canonicalJson(variant), variant)
      }
      node.variants.map(normalize).forEach(add)
      const variants = [...byForm.keys()].sort().map((form) => byForm.get(form)!)
      return variants.length === 1 ? variants[0]! : { kind: "oneOf", variants }
    }
    case "ref":
      throw new Error("canonicalType: refs are resolved before normalizing")
    default:
      return { kind: node.kind }
  }
}
