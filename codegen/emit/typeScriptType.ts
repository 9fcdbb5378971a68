/**
 * The TypeScript type of each construct of the type language. Objects are readonly, optional fields
 * are `name?: T | undefined` (what zod's `.optional()` produces under `exactOptionalPropertyTypes`),
 * arrays are readonly, records are `{ readonly [key: string]: T }`, and refs name the declared type.
 * No global type (`Record`, `ReadonlyArray`) is used, so a manifest type of that name shadows nothing.
 */
import type { TypeNode } from "../../runtime/model/typeModel.js"
import { objectTypeLiteral, readonlyArrayType, stringLiteral, unionType } from "./writer.js"

/** Local names the printed types refer to. */
export interface TypeNames {
  /** The type `json` values have, declared in the same types.ts. */
  readonly json: string
}

/** `{ readonly amount: number; readonly currency: "USD" | "EUR" }` for `{ amount: integer, … }`. */
export const typeScriptType = (node: TypeNode, names: TypeNames): string => {
  switch (node.kind) {
    case "string":
    case "number":
    case "boolean":
    case "null":
      return node.kind
    case "integer":
      return "number"
    case "json":
      return names.json
    case "ref":
      return node.name
    case "enum":
      return unionType([...new Set(node.values)].map(stringLiteral))
    case "oneOf":
      return unionType(node.variants.map((variant) => typeScriptType(variant, names)))
    case "array":
      return readonlyArrayType(typeScriptType(node.items, names))
    case "record":
      return `{ readonly [key: string]: ${typeScriptType(node.values, names)} }`
    case "object":
      return objectTypeLiteral(
        Object.entries(node.fields).map(([name, field]) => ({
          name,
          type: typeScriptType(field.type, names),
          optional: field.optional,
          docs: field.description ?? field.type.description,
        })),
      )
  }
}
