/**
 * The zod schema of each construct of the type language. Schemas are strict (unknown keys are
 * errors), because they validate new input before anything is written; the runtime decodes recorded
 * data tolerantly with its own decoders.
 */
import type { TypeNode } from "../../runtime/model/typeModel.js"
import { generatedValueNames } from "../manifest/names.js"
import {
  arrayLiteral,
  identifier,
  methodCall,
  objectLiteral,
  stringValue,
  type ValueSyntax,
} from "./typeScriptSyntax.js"

/** `z.strictObject({ amount: z.int(), currency: z.enum(["USD", "EUR"]) })` for a `Money`. */
export const zodSchema = (node: TypeNode, z: string): ValueSyntax => {
  switch (node.kind) {
    case "string":
    case "number":
    case "boolean":
    case "null":
    case "json":
      return methodCall(z, node.kind, [])
    case "integer":
      return methodCall(z, "int", [])
    case "ref":
      return identifier(generatedValueNames.schema(node.name))
    case "enum": {
      const values = [...new Set(node.values)]
      return values.length === 0
        ? methodCall(z, "never", [])
        : methodCall(z, "enum", [arrayLiteral(values.map(stringValue))])
    }
    case "oneOf": {
      const variants = node.variants.map((variant) => zodSchema(variant, z))
      if (variants.length === 0) return methodCall(z, "never", [])
      return variants.length === 1 ? variants[0]! : methodCall(z, "union", [arrayLiteral(variants)])
    }
    case "array":
      return methodCall(z, "array", [zodSchema(node.items, z)])
    case "record":
      return methodCall(z, "record", [methodCall(z, "string", []), zodSchema(node.values, z)])
    case "object":
      return methodCall(z, "strictObject", [
        objectLiteral(
          Object.entries(node.fields).map(([name, field]) => [
            name,
            field.optional
              ? methodCall(zodSchema(field.type, z), "optional", [])
              : zodSchema(field.type, z),
          ]),
        ),
      ])
  }
}
