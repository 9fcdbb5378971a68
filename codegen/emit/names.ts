/**
 * How manifest names become the names of generated files and declarations. The type names the
 * manifest checker also guards (inputs, outputs, events, clients) come from `manifest/names.ts`; the
 * names only the emitters add (schemas, builders, the error union) are defined here.
 */
import { pascalCase } from "../manifest/names.js"

/** Folder of an owner's files inside the output folder: the owner name in lower camel case. */
export const ownerFolder = (owner: string): string => owner[0]!.toLowerCase() + owner.slice(1)

export const schemaName = (typeName: string): string => `${typeName}Schema`

export const workflowErrorName = (workflow: string): string => `${pascalCase(workflow)}Error`
export const workflowStepsName = (workflow: string): string => `${pascalCase(workflow)}Steps`
export const workflowActivitiesName = (workflow: string): string =>
  `${pascalCase(workflow)}Activities`
export const workflowDefinitionName = (workflow: string): string =>
  `${pascalCase(workflow)}Definition`

/** The type of `json` values, declared in an owner's types.ts when one of its types uses `json`. */
export const JSON_TYPE_NAME = "Json"

/** Values every owner object has next to its workflows (`Order.client`). */
export const OWNER_MEMBERS = ["registration", "client", "effectClient"] as const

/** The root index's list of every owner's registration. */
export const ROOT_REGISTRATIONS = "registrations"

/** Members of every generated client next to its workflows (`orders.emit`). */
export const CLIENT_MEMBERS = ["emit"] as const

const RESERVED_WORDS = new Set([
  // ECMAScript reserved words and strict-mode future reserved words
  "await",
  "break",
  "case",
  "catch",
  "class",
  "const",
  "continue",
  "debugger",
  "default",
  "delete",
  "do",
  "else",
  "enum",
  "export",
  "extends",
  "false",
  "finally",
  "for",
  "function",
  "if",
  "implements",
  "import",
  "in",
  "instanceof",
  "interface",
  "let",
  "new",
  "null",
  "package",
  "private",
  "protected",
  "public",
  "return",
  "static",
  "super",
  "switch",
  "this",
  "throw",
  "true",
  "try",
  "typeof",
  "var",
  "void",
  "while",
  "with",
  "yield",
  // names TypeScript reserves for its own types
  "any",
  "bigint",
  "boolean",
  "never",
  "number",
  "object",
  "string",
  "symbol",
  "undefined",
  "unknown",
  // names a module cannot redeclare
  "arguments",
  "eval",
])

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** Whether `name` can be declared as a TypeScript identifier (a type, a class or a const). */
export const isDeclarableIdentifier = (name: string): boolean =>
  IDENTIFIER.test(name) && !RESERVED_WORDS.has(name)

/** Whether `name` can be written as a property key without quotes. */
export const isPlainPropertyName = (name: string): boolean => IDENTIFIER.test(name)
