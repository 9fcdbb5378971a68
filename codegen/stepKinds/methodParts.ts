/**
 * Pieces the generated methods of several step kinds are made of: the `Effect.Effect<A, E>` they
 * return, a declared error union, a step's output type, and docs that append the manifest's
 * description to the generated sentence.
 */
import type { StepPlan } from "../emit/ownerPlan.js"
import { keywordType, typeReference, unionType, type TypeSyntax } from "../emit/typeScriptSyntax.js"
import type { WorkflowsImports } from "./stepKindCodegen.js"

export const VOID = keywordType("void")
export const NEVER = keywordType("never")

/** `Effect.Effect<A>`, or `Effect.Effect<A, E>` when something can fail. */
export const effectType = (
  imports: WorkflowsImports,
  value: TypeSyntax,
  error: TypeSyntax,
): TypeSyntax =>
  typeReference(
    `${imports.effect("Effect")}.Effect`,
    error.kind === "keyword" && error.name === "never" ? [value] : [value, error],
  )

/** The union of declared error classes, `never` for none. */
export const errorsOf = (imports: WorkflowsImports, names: readonly string[]): TypeSyntax =>
  unionType(names.map(imports.own))

/** The type of a step's success value: its declared output type, or `void`. */
export const outputType = (step: StepPlan, imports: WorkflowsImports): TypeSyntax =>
  step.output === null ? VOID : imports.own(step.output.name)

/** The generated sentence, then the manifest's description of the step, if any. */
export const joinDocs = (generated: string, description: string | undefined): string =>
  description === undefined ? generated : `${generated}\n\n${description.trim()}`
