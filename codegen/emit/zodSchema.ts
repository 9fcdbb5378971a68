/**
 * The zod schema of each construct of the type language. Schemas are strict (unknown keys are
 * errors), because they validate new input before anything is written; the runtime decodes recorded
 * data tolerantly with its own decoders.
 */
import type { TypeNode } from "../../runtime/model/typeModel.js"
import { generatedValueNames } from "../manifest/names.js"
import { objectLiteral, stringLiteral } from "./writer.js"

/** `z.strictObject({ amount: z.int(), currency: z.enum(["USD", "EUR"]) })` for a `Money`. */
export const zodSchema = (node: TypeNode, z: string): string => {
  switch (node.kind) {
    case "string":
    case "number":
    case "boolean":
    case "null":
    case "json":
      return `${z}.${node.kind}()`
    case "integer":
      return `${z}.int()`
    case "ref":
      return generatedValueNames.schema(node.name)
    case "enum": {
      const values = [...new Set(node.values)]
      return values.length === 0
        ? `${z}.never()`
        : `${z}.enum([${values.map(stringLiteral).join(", ")}])`
    }
    case "oneOf": {
      const variants = node.variants.map((variant) => zodSchema(variant, z))
      if (variants.length === 0) return `${z}.never()`
      return variants.length === 1 ? variants[0]! : `${z}.union([${variants.join(", ")}])`
    }
    case "array":
      return `${z}.array(${zodSchema(node.items, z)})`
    case "record":
      return `${z}.record(${z}.string(), ${zodSchema(node.values, z)})`
    case "object":
      return `${z}.strictObject(${objectLiteral(
        Object.entries(node.fields).map(([name, field]) => [
          name,
          field.optional ? `${zodSchema(field.type, z)}.optional()` : zodSchema(field.type, z),
        ]),
      )})`
  }
}
