/**
 * What the model knows of one step kind: its declaration (the manifest's entry, after checking),
 * its canonical form (what recorded rows of it are read against, and hashed), the rule that says
 * whether results it recorded under one manifest decode under another, and the types it declares
 * for the generated code. Each kind's module implements this once; the lists keyed by kind are in
 * stepKinds.ts.
 */
import type { TypeRefusal } from "../../compatibility/accepts.js"
import type { TypeNode } from "../typeModel.js"

/**
 * The canonical form of a step of kind `K`. Kinds share the optional fields so that a field means
 * one thing whichever kind writes it, and a kind that adds none keeps every existing hash.
 */
export interface CanonicalStepOf<K extends string> {
  readonly kind: K
  /** activity, race: the success value's type (`null`: none). */
  readonly output?: TypeNode | null
  /** activity, race: declared errors it may record, name → payload type. */
  readonly errors?: Readonly<Record<string, TypeNode>>
  /** wait: the event it waits for, and that event's payload type. */
  readonly event?: string
  readonly payload?: TypeNode
  /** start: the started workflow. */
  readonly target?: { readonly owner: string; readonly workflow: string }
  /** start: the step records the child's result (absent: its execution id). */
  readonly awaits?: true
  /** start: what the child does when the parent ends, when not the default of its mode. */
  readonly parentClose?: "interrupt" | "leave"
}

/** What a kind's canonical form may look up in the manifest that declares the step. */
export interface CanonicalContext {
  /** The canonical form of a type the step declares (`null` stays `null`). */
  type(type: TypeNode | null): TypeNode | null
  /** Declared errors by name, in name order, with their canonical payloads. */
  declaredErrors(names: readonly string[]): Readonly<Record<string, TypeNode>>
  /** The canonical payload type of an event the owner declares. */
  eventPayload(event: string): TypeNode
}

/** The types a step declares that the generated code names: its input and its success value. */
export interface DeclaredStepTypes {
  readonly input: TypeNode | null
  readonly output: TypeNode | null
}

/** The model of step kind `D["kind"]`, over its declaration `D`. */
export interface StepKindModel<D extends { readonly kind: string }> {
  readonly kind: D["kind"]
  /** The replay-relevant projection of a declaration. */
  readonly canonical: (step: D, context: CanonicalContext) => CanonicalStepOf<D["kind"]>
  /**
   * Whether results recorded under `writer` decode under `reader` (both of this kind); `null`: they
   * do. A refusal's path starts with `output`, `errors`, `event`, `payload`, `workflow` or `await`.
   */
  readonly resultRefusal: (
    reader: CanonicalStepOf<D["kind"]>,
    writer: CanonicalStepOf<D["kind"]>,
  ) => TypeRefusal | null
  /** The event the step waits for, whose log it reads (so the event must stay declared). */
  readonly eventWaitedFor: (step: CanonicalStepOf<D["kind"]>) => string | undefined
  /** The step's input and success value types, named in the generated code. */
  readonly declaredTypes: (step: D) => DeclaredStepTypes
}
