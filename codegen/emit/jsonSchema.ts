/**
 * The JSON Schema (draft-07) of each construct of the type language, for tools outside TypeScript
 * (API gateways, form builders, other languages) that need to produce or check the same payloads.
 * It accepts exactly what the strict zod schema accepts, up to number formats JSON Schema lacks.
 */
import type { TypeNode } from "../../runtime/model/typeModel.js"

export type JsonSchema = { readonly [keyword: string]: unknown }

/** Where `ref` nodes point: `#/definitions/Money` inside the same document. */
export const DEFINITIONS_POINTER = "#/definitions/"

/**
 * @example
 * typeJsonSchema({ kind: "array", items: { kind: "ref", name: "Sku" } })
 * // → { type: "array", items: { $ref: "#/definitions/Sku" } }
 */
export const typeJsonSchema = (node: TypeNode): JsonSchema => {
  const described = (schema: JsonSchema): JsonSchema =>
    node.description === undefined ? schema : { description: node.description, ...schema }
  switch (node.kind) {
    case "string":
    case "number":
    case "integer":
    case "boolean":
    case "null":
      return described({ type: node.kind })
    case "json":
      return described({})
    case "ref":
      return described({ $ref: `${DEFINITIONS_POINTER}${node.name}` })
    case "enum":
      return described({ type: "string", enum: [...new Set(node.values)] })
    case "oneOf":
      return described({ anyOf: node.variants.map(typeJsonSchema) })
    case "array":
      return described({ type: "array", items: typeJsonSchema(node.items) })
    case "record":
      return described({ type: "object", additionalProperties: typeJsonSchema(node.values) })
    case "object": {
      const properties: Record<string, JsonSchema> = {}
      for (const [name, field] of Object.entries(node.fields)) {
        const schema = typeJsonSchema(field.type)
        properties[name] =
          field.description === undefined ? schema : { ...schema, description: field.description }
      }
      const required = Object.entries(node.fields)
        .filter(([, field]) => !field.optional)
        .map(([name]) => name)
      return described({
        type: "object",
        properties,
        ...(required.length === 0 ? {} : { required }),
        additionalProperties: false,
      })
    }
  }
}
