/**
 * The naming rules of the manifest language, and every TypeScript name codegen derives from manifest
 * names. Validation and the emitters both use these, so a name the checker accepts is exactly a name
 * the generated code can declare without a clash: the checker is the one place that refuses a name,
 * and emitters only print.
 */

/** Owner types: `Order`, `order2`. */
export const OWNER_NAME = /^[A-Za-z][A-Za-z0-9]*$/
/** Named types under `types:` and declared errors: PascalCase, `Money`, `OutOfStock`. */
export const TYPE_NAME = /^[A-Z][A-Za-z0-9]*$/
export const EVENT_NAME = /^[A-Za-z][A-Za-z0-9]*$/
export const WORKFLOW_NAME = /^[A-Za-z][A-Za-z0-9]*$/
export const ERROR_NAME = TYPE_NAME
/** Schedules: `nightlyReport`; a schedule's name is part of the execution keys of its ticks. */
export const SCHEDULE_NAME = /^[A-Za-z][A-Za-z0-9]*$/
/** Steps and version markers may also use `.`, `_` and `-`: `fraud-check.v2`. */
export const STEP_NAME = /^[A-Za-z][A-Za-z0-9._-]*$/
export const MARKER_NAME = STEP_NAME
/** Migrations of earlier shapes (`earlier: { v1: … }`): they name functions, `v1`, `fromCents`. */
export const MIGRATION_NAME = /^[a-z][A-Za-z0-9]*$/
/** Object fields, without the `?` that marks an optional one. */
export const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Names beginning with `$` are kept for the language itself. */
export const isReservedName = (name: string): boolean => name.startsWith("$")

/** What every generated owner object has next to its workflows (`Order.client`). */
export const OWNER_MEMBERS = ["registration", "client", "effectClient"] as const

/** What every generated client has next to its workflows (`orders.emit`). */
export const CLIENT_MEMBERS = ["emit"] as const

/** The root index's list of every owner's registration, declared next to the owner objects. */
export const ROOT_REGISTRATIONS = "registrations"

/**
 * Workflow names taken by a member of the generated code the workflows sit beside: the owner
 * object's (`Order.client`) or the client's (`orders.emit`).
 */
export const RESERVED_WORKFLOW_NAMES: ReadonlyMap<string, string> = new Map([
  ...OWNER_MEMBERS.map((name) => [name, "the generated owner object"] as const),
  ...CLIENT_MEMBERS.map((name) => [name, "the generated client"] as const),
])

/** Step names that would collide with members of the body context (`wf.version`). */
export const RESERVED_STEP_NAMES: readonly string[] = [
  "version",
  "withCompensation",
  "executionId",
  "ownerId",
  "caller",
]

/** Names TypeScript will not let a module declare as a value: a workflow's builder or an owner object. */
const RESERVED_WORDS: ReadonlySet<string> = new Set([
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

/** Whether TypeScript refuses `name` as the name of a declaration. */
export const isReservedWord = (name: string): boolean => RESERVED_WORDS.has(name)

/**
 * The PascalCase form of a manifest name, as generated type names use it: the first letter is
 * capitalized, `.`, `-` and `_` are dropped and the letter after each is capitalized.
 *
 * @example
 * pascalCase("fraud-check.v2") // "FraudCheckV2"
 */
export const pascalCase = (name: string): string =>
  name
    .split(/[._-]+/)
    .filter((part) => part !== "")
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join("")

/**
 * The TypeScript type names generated for one owner, keyed by what they name. Emitters take their
 * names from here; the checker refuses a manifest in which two of them, or one of them and a
 * generated value name, are equal.
 *
 * @example
 * generatedTypeNames.workflowInput("fulfill")          // "FulfillInput"
 * generatedTypeNames.stepOutput("fulfill", "reserve")  // "FulfillReserveOutput"
 * generatedTypeNames.workflowSteps("fulfill")          // "FulfillSteps"
 */
export const generatedTypeNames = {
  namedType: (name: string) => name,
  eventPayload: (event: string) => pascalCase(event),
  errorClass: (error: string) => error,
  workflowInput: (workflow: string) => `${pascalCase(workflow)}Input`,
  workflowOutput: (workflow: string) => `${pascalCase(workflow)}Output`,
  stepInput: (workflow: string, step: string) => `${pascalCase(workflow)}${pascalCase(step)}Input`,
  stepOutput: (workflow: string, step: string) =>
    `${pascalCase(workflow)}${pascalCase(step)}Output`,
  ownerEvents: (owner: string) => `${pascalCase(owner)}Events`,
  ownerClient: (owner: string) => `${pascalCase(owner)}Client`,
  ownerEffectClient: (owner: string) => `${pascalCase(owner)}EffectClient`,
  /** The union of a workflow's declared errors. */
  workflowError: (workflow: string) => `${pascalCase(workflow)}Error`,
  /** What a workflow's body calls: one method per step. */
  workflowSteps: (workflow: string) => `${pascalCase(workflow)}Steps`,
  workflowActivities: (workflow: string) => `${pascalCase(workflow)}Activities`,
  workflowDefinition: (workflow: string) => `${pascalCase(workflow)}Definition`,
  /** The migrations a workflow's implementation provides for its earlier shapes. */
  workflowMigrations: (workflow: string) => `${pascalCase(workflow)}Migrations`,
  /** An earlier shape of a type (`FulfillScreenOutput`), by its migration's name: `FulfillScreenOutputV1`. */
  earlierShape: (typeName: string, migration: string) => `${typeName}${pascalCase(migration)}`,
} as const

/** The type of `json` values, declared in an owner's types.ts when one of its types uses `json`. */
export const JSON_TYPE_NAME = "Json"

/**
 * The names of generated values derived from manifest names: the owner object (`Order`), and the
 * strict schema of every type of `generatedTypeNames` that has one.
 *
 * @example
 * generatedValueNames.schema("FulfillInput")  // "FulfillInputSchema"
 */
export const generatedValueNames = {
  ownerObject: (owner: string) => owner,
  schema: (typeName: string) => `${typeName}Schema`,
} as const
