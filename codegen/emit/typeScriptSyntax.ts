/**
 * The TypeScript the emitters describe: types and expressions as small trees, shaped the way
 * babel-ts parses their text (a union of unions is one union, a parenthesised type is just its
 * content), so that `typeScriptLayout.ts` can lay each one out exactly as prettier's printer would.
 * The constructors below build the trees; nothing here prints.
 */
import { isDeclarableIdentifier } from "./names.js"

export type KeywordType =
  "string" | "number" | "boolean" | "null" | "undefined" | "unknown" | "never" | "void"

export type TypeSyntax =
  | { readonly kind: "keyword"; readonly name: KeywordType }
  | { readonly kind: "stringLiteral"; readonly value: string }
  /** A named type, maybe qualified (`Effect.Effect`), with its type arguments. */
  | { readonly kind: "reference"; readonly name: string; readonly arguments: readonly TypeSyntax[] }
  /** Two members or more, none of them a union. */
  | { readonly kind: "union"; readonly members: readonly TypeSyntax[] }
  | { readonly kind: "readonlyArray"; readonly items: TypeSyntax }
  | { readonly kind: "objectType"; readonly members: readonly TypeMember[] }

/** A readonly property of an object type or an interface. */
export interface PropertySyntax {
  readonly kind: "property"
  readonly name: string
  readonly optional: boolean
  /** The declared type; an optional property also admits `undefined` (see `propertyType`). */
  readonly type: TypeSyntax
  readonly docs: string | undefined
}

export type TypeMember =
  | PropertySyntax
  /** `readonly [key: string]: T`, the one member of a record type. */
  | { readonly kind: "indexSignature"; readonly type: TypeSyntax }

export interface ParameterSyntax {
  readonly name: string
  readonly type: TypeSyntax
  readonly optional?: boolean
}

export type ValueSyntax =
  | { readonly kind: "identifier"; readonly name: string }
  | { readonly kind: "member"; readonly object: ValueSyntax; readonly property: string }
  | {
      readonly kind: "call"
      readonly callee: ValueSyntax
      readonly typeArguments: readonly TypeSyntax[]
      readonly arguments: readonly ValueSyntax[]
    }
  | { readonly kind: "string"; readonly value: string }
  /** Finite and not negative: every number the manifests give is. */
  | { readonly kind: "number"; readonly value: number }
  | { readonly kind: "boolean"; readonly value: boolean }
  | { readonly kind: "null" }
  | {
      readonly kind: "object"
      readonly properties: readonly { readonly key: string; readonly value: ValueSyntax }[]
    }
  | { readonly kind: "array"; readonly elements: readonly ValueSyntax[] }
  | {
      readonly kind: "arrow"
      readonly parameters: readonly ParameterSyntax[]
      readonly returns: TypeSyntax | undefined
      readonly body: ValueSyntax
    }
  /** `expression as type`; `as const` is a reference to `const`. */
  | { readonly kind: "as"; readonly expression: ValueSyntax; readonly type: TypeSyntax }

// ---------------------------------------------------------------------------------------------
// Types

export const keywordType = (name: KeywordType): TypeSyntax => ({ kind: "keyword", name })

export const stringLiteralType = (value: string): TypeSyntax => ({ kind: "stringLiteral", value })

/** `Money`, `Effect.Effect<A, E>`. */
export const typeReference = (
  name: string,
  typeArguments: readonly TypeSyntax[] = [],
): TypeSyntax => ({
  kind: "reference",
  name,
  arguments: typeArguments,
})

/** A union of types, flattened as the parser would; `never` when empty, the type itself for one. */
export const unionType = (members: readonly TypeSyntax[]): TypeSyntax => {
  const flat = members.flatMap((member) => (member.kind === "union" ? member.members : [member]))
  if (flat.length === 0) return keywordType("never")
  return flat.length === 1 ? flat[0]! : { kind: "union", members: flat }
}

/** `readonly T[]`. */
export const readonlyArrayType = (items: TypeSyntax): TypeSyntax => ({
  kind: "readonlyArray",
  items,
})

/** An object type literal, `{ readonly sku: Sku }`. */
export const objectType = (members: readonly TypeMember[]): TypeSyntax => ({
  kind: "objectType",
  members,
})

/** `{ readonly [key: string]: T }`. */
export const recordType = (values: TypeSyntax): TypeSyntax =>
  objectType([{ kind: "indexSignature", type: values }])

export const property = (
  name: string,
  type: TypeSyntax,
  options: { readonly optional?: boolean; readonly docs?: string | undefined } = {},
): PropertySyntax => ({
  kind: "property",
  name,
  optional: options.optional ?? false,
  type,
  docs: options.docs,
})

/** A property's type as written: an optional one also admits `undefined`, as zod's `.optional()` produces. */
export const propertyType = (member: PropertySyntax): TypeSyntax =>
  member.optional ? unionType([member.type, keywordType("undefined")]) : member.type

// ---------------------------------------------------------------------------------------------
// Values

export const identifier = (name: string): ValueSyntax => ({ kind: "identifier", name })

export const stringValue = (value: string): ValueSyntax => ({ kind: "string", value })

export const numberValue = (value: number): ValueSyntax => ({ kind: "number", value })

export const nullValue: ValueSyntax = { kind: "null" }

/** `object.property`; `object` given as a name is an identifier. */
export const member = (object: ValueSyntax | string, property: string): ValueSyntax => ({
  kind: "member",
  object: typeof object === "string" ? identifier(object) : object,
  property,
})

/** `callee<T>(a, b)`; `callee` given as a name is an identifier. */
export const call = (
  callee: ValueSyntax | string,
  args: readonly ValueSyntax[],
  typeArguments: readonly TypeSyntax[] = [],
): ValueSyntax => ({
  kind: "call",
  callee: typeof callee === "string" ? identifier(callee) : callee,
  typeArguments,
  arguments: args,
})

/** `object.method(a, b)`: `z.array(SkuSchema)`. */
export const methodCall = (
  object: ValueSyntax | string,
  method: string,
  args: readonly ValueSyntax[],
): ValueSyntax => call(member(object, method), args)

/** An object literal; a key whose value is the identifier of the same name is written shorthand. */
export const objectLiteral = (
  entries: readonly (readonly [string, ValueSyntax])[],
): ValueSyntax => ({
  kind: "object",
  properties: entries.map(([key, value]) => ({ key, value })),
})

/** Whether an object literal's property is written shorthand: `{ OutOfStock }`. */
export const isShorthand = (entry: { readonly key: string; readonly value: ValueSyntax }) =>
  entry.value.kind === "identifier" &&
  entry.value.name === entry.key &&
  isDeclarableIdentifier(entry.key)

export const arrayLiteral = (elements: readonly ValueSyntax[]): ValueSyntax => ({
  kind: "array",
  elements,
})

export const arrowFunction = (
  parameters: readonly ParameterSyntax[],
  returns: TypeSyntax | undefined,
  body: ValueSyntax,
): ValueSyntax => ({ kind: "arrow", parameters, returns, body })

export const asType = (expression: ValueSyntax, type: TypeSyntax): ValueSyntax => ({
  kind: "as",
  expression,
  type,
})

export const asConst = (expression: ValueSyntax): ValueSyntax =>
  asType(expression, typeReference("const"))
