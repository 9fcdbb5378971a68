/**
 * The naming rules of the manifest language, and the TypeScript names codegen derives from manifest
 * names. Validation and the emitters both use these, so a name the checker accepts is exactly a name
 * the generated code can declare without a clash.
 */

/** Owner types: `Order`, `order2`. */
export const OWNER_NAME = /^[A-Za-z][A-Za-z0-9]*$/
/** Named types under `types:` and declared errors: PascalCase, `Money`, `OutOfStock`. */
export const TYPE_NAME = /^[A-Z][A-Za-z0-9]*$/
export const EVENT_NAME = /^[A-Za-z][A-Za-z0-9]*$/
export const WORKFLOW_NAME = /^[A-Za-z][A-Za-z0-9]*$/
export const ERROR_NAME = TYPE_NAME
/** Steps and version markers may also use `.`, `_` and `-`: `fraud-check.v2`. */
export const STEP_NAME = /^[A-Za-z][A-Za-z0-9._-]*$/
export const MARKER_NAME = STEP_NAME
/** Object fields, without the `?` that marks an optional one. */
export const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Names beginning with `$` are kept for the language itself. */
export const isReservedName = (name: string): boolean => name.startsWith("$")

/** Workflow names that would collide with members of the generated owner object (`Order.client`). */
export const RESERVED_WORKFLOW_NAMES: readonly string[] = ["client", "effectClient", "registration"]

/** Step names that would collide with members of the body context (`wf.version`). */
export const RESERVED_STEP_NAMES: readonly string[] = [
  "version",
  "withCompensation",
  "executionId",
  "ownerId",
  "caller",
]

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
 * names from here; the checker refuses a manifest in which two of them are equal.
 *
 * @example
 * generatedTypeNames.workflowInput("fulfill")          // "FulfillInput"
 * generatedTypeNames.stepOutput("fulfill", "reserve")  // "FulfillReserveOutput"
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
} as const
