/**
 * What code generation knows of one step kind: its entry in the manifest format, the check that
 * turns a well-formed entry into its declaration, its settings in registration.ts, its method on
 * the generated `wf`, and how `akter diff` shows it and its changes. Each kind's module implements
 * this once; stepKinds.ts lists them by kind, so a kind without one does not compile.
 */
import type { z } from "zod"
import type { CanonicalStepOf } from "../../runtime/model/stepKinds/stepKindModel.js"
import type { StepDecl, StepKind } from "../../runtime/model/stepKinds/stepKinds.js"
import type { TypeNode } from "../../runtime/model/typeModel.js"
import type { OwnerPlan, StepPlan } from "../emit/ownerPlan.js"
import type { ProjectPlan } from "../emit/projectPlan.js"
import type { TypeSyntax, ValueSyntax } from "../emit/typeScriptSyntax.js"
import type { MethodDeclaration } from "../emit/writer.js"
import type { FormatRule } from "../manifest/formatRules.js"
import type { ManifestReport } from "../manifest/manifestReport.js"
import type { PlainValue } from "../manifest/plainValue.js"
import type { ManifestPath } from "../manifest/sourcePositions.js"

/** The pieces of the manifest format a kind's entry is built from (see formatSchema.ts). */
export interface StepFormatParts {
  /** A type expression. */
  readonly type: z.ZodType
  /** A type expression whose recorded values may list earlier shapes (`{ type, earlier }`). */
  readonly migratable: z.ZodType
  readonly description: z.ZodString
  /** The literal `kind:` of the entry. */
  readonly kind: <K extends string>(value: K) => z.ZodLiteral<K>
  /** A list of error names declared under the workflow's `errors:`. */
  readonly errorList: z.ZodArray<z.ZodString>
  readonly duration: (text: string) => z.ZodString
  readonly name: (pattern: RegExp, what: string, text?: string) => z.ZodString
  /** Registers how a violation of `schema` is reported. */
  readonly ruled: <T extends z.ZodType>(schema: T, rule: FormatRule) => T
}

/** A step entry of the manifest, as a mapping of plain values. */
export type StepEntry = { readonly [key: string]: PlainValue }

/** A `start` step, to be checked against the whole set of manifests. */
export interface StartTarget {
  readonly path: ManifestPath
  readonly owner: string
  readonly workflow: string
}

/**
 * What a kind's check may use while it reads one well-formed step entry. Helpers that find a
 * problem report it and mark the step incomplete; the format check has already reported anything
 * malformed, so they stay silent about that.
 */
export interface StepCheckContext {
  readonly report: ManifestReport
  readonly workflow: string
  readonly name: string
  /** Where the step is written: `["workflows", w, "steps", name]`. */
  readonly path: ManifestPath
  /** `{ description }` when the entry has one. */
  readonly described: { readonly description?: string }
  /** The events the manifest declares, by name (whether or not their payloads are sound). */
  readonly declaredEvents: readonly string[]
  /** The owner the manifest declares, if its name is valid. */
  readonly owner: string | undefined
  /** The type under `key`; `null` when absent; `object`: it must be an object type (an input). */
  type(key: string, object: boolean): TypeNode | null
  /** The entry's `errors:` list, each name checked against the workflow's declared errors. */
  errorList(): string[]
  /** The duration under `key` in ms; `null` when absent. */
  optionalDuration(key: string): number | null
  /** The duration under `key` of `within`: `null` when absent, `undefined` when not one. */
  duration(within: StepEntry, key: string, path: ManifestPath): number | null | undefined
  /** Records a start step's target for the check across manifests. */
  startTarget(target: StartTarget): void
}

/** Imports what registration.ts refers to, by the name it can use. */
export interface RegistrationImports {
  /** A schema or error class of this owner's types.ts. */
  own(name: string): ValueSyntax
  /** A schema of another owner's types.ts (`start` steps pass the target's input). */
  foreign(owner: OwnerPlan, name: string): ValueSyntax
  /** The registration of another owner (`start` steps name the owner they start). */
  registrationOf(owner: OwnerPlan): ValueSyntax
}

/** What a kind's registration settings may refer to. */
export interface SettingsContext {
  readonly project: ProjectPlan
  readonly owner: OwnerPlan
  readonly imports: RegistrationImports
  /** The identifier of this module's own registration (a start step of the same owner). */
  readonly ownRegistration: ValueSyntax
}

/** Imports what workflows.ts refers to, by the name it can use. */
export interface WorkflowsImports {
  akter(name: string): string
  akterValue(name: string): string
  effect(name: string): string
  /** A type of this owner's types.ts. */
  own(name: string): TypeSyntax
  /** A type of this owner's client.ts (the workflow's error union). */
  client(name: string): TypeSyntax
  /** A type of another owner's types.ts (`start` steps pass the target's input). */
  foreign(owner: OwnerPlan, name: string): TypeSyntax
}

/** What a kind's generated method may refer to. */
export interface MethodContext {
  readonly project: ProjectPlan
  readonly owner: OwnerPlan
  readonly imports: WorkflowsImports
}

/** The step parts `akter diff` reports as changed values (the kind is reported by the diff). */
export type StepChangePart = "waits-for" | "starts" | "awaits" | "parent-close"

/** How a kind reports changes between two versions of a step (`C`: a change as the diff drafts it). */
export interface StepDiff<C> {
  /** Changes of a type the step declares under `key`, down to the field. */
  types(key: "output", before: TypeNode | null, after: TypeNode | null): C[]
  /** Errors added to or removed from the step's `errors:` list. */
  errors(before: Readonly<Record<string, TypeNode>>, after: Readonly<Record<string, TypeNode>>): C[]
  /** A value of the step changed, written under `key`. */
  changed(part: StepChangePart, before: string, after: string, key: string): C
}

/** Code generation for step kind `D["kind"]`, over its declaration `D`. */
export interface StepKindCodegen<D extends StepDecl> {
  readonly kind: D["kind"]
  /** The kind's entry in the manifest format (a strict object with its `kind` literal). */
  readonly format: (parts: StepFormatParts) => z.ZodObject
  /** The declaration of a well-formed entry; `undefined` when something was reported. */
  readonly check: (step: StepEntry, context: StepCheckContext) => D | undefined
  /** The step's settings in registration.ts that are not replay-relevant, in order. */
  readonly settings: (
    step: StepPlan<D>,
    context: SettingsContext,
  ) => readonly (readonly [string, ValueSyntax])[]
  /** The step's method on the generated `wf`. */
  readonly method: (step: StepPlan<D>, context: MethodContext) => MethodDeclaration
  /** How `akter diff` names a step of this kind that was added or removed. */
  readonly describe: (step: CanonicalStepOf<D["kind"]>) => string
  /** What changed between two versions of a step of this kind, in the order to report it. */
  readonly changes: <C>(
    before: CanonicalStepOf<D["kind"]>,
    after: CanonicalStepOf<D["kind"]>,
    diff: StepDiff<C>,
  ) => C[]
}

/** One codegen module per step kind, each filed under its own kind. */
export type StepKindCodegens = {
  readonly [K in StepKind]: StepKindCodegen<Extract<StepDecl, { kind: K }>>
}
