/**
 * The TypeScript type of each construct of the type language. Objects are readonly, optional fields
 * are `name?: T | undefined` (what zod's `.optional()` produces under `exactOptionalPropertyTypes`),
 * arrays are readonly, records are `{ readonly [key: string]: T }`, and refs name the declared type.
 * No global type (`Record`, `ReadonlyArray`) is used, so a manifest type of that name shadows nothing.
 */
import type { TypeNode } from "../../runtime/model/typeModel.js"
import {
  keywordType,
  objectType,
  property,
  readonlyArrayType,
  recordType,
  stringLiteralType,
  typeReference,
  unionType,
  type TypeSyntax,
} from "./typeScriptSyntax.js"

/** Local names the printed types refer to. */
export interface TypeNames {
  /** The type `json` values have, declared in the same types.ts. */
  readonly json: string
}

/** `{ readonly amount: number; readonly currency: "USD" | "EUR" }` for `{ amount: integer, … }`. */
export const typeScriptType = (node: TypeNode, names: TypeNames): TypeSyntax => {
  switch (node.kind) {
    case "string":
    case "number":
    case "boolean":
    case "null":
      return keywordType(node.kind)
    case "integer":
      return keywordType("number")
    case "json":
      return typeReference(names.json)
    case "ref":
      return typeReference(node.name)
    case "enum":
      return unionType([...new Set(node.values)].map(stringLiteralType))
    case "oneOf":
      return unionType(node.variants.map((variant) => typeScriptType(variant, names)))
    case "array":
      return readonlyArrayType(typeScriptType(node.items, names))
    case "record":
      return recordType(typeScriptType(node.values, names))
    case "object":
      return objectType(objectProperties(node.fields, names))
  }
}

/** The properties of an object type, each with the docs its field or its type has. */
export const objectProperties = (
  fields: Extract<TypeNode, { kind: "object" }>["fields"],
  names: TypeNames,
) =>
  Object.entries(fields).map(([name, field]) =>
    property(name, typeScriptType(field.type, names), {
      optional: field.optional,
      docs: field.description ?? field.type.description,
    }),
  )
