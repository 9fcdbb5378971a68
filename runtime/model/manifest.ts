/**
 * A manifest after parsing and validation: one owner type, its named types, its events and its
 * workflows. Codegen produces these from YAML; the runtime and the compatibility rules consume the
 * canonical projection of them (see `canonicalWorkflow`). Types here may still contain `ref` nodes;
 * every ref is known to resolve.
 */
import type { NamedTypes, TypeNode } from "./typeModel.js"

export const MANIFEST_FORMAT = 1

export interface OwnerManifest {
  readonly format: typeof MANIFEST_FORMAT
  readonly owner: string
  readonly description?: string
  readonly types: NamedTypes
  readonly events: Readonly<Record<string, EventDecl>>
  readonly workflows: Readonly<Record<string, WorkflowDecl>>
}

export interface EventDecl {
  readonly payload: TypeNode
  readonly description?: string
}

export interface WorkflowDecl {
  readonly description?: string
  /** Start input; `null` when the workflow takes none. */
  readonly input: TypeNode | null
  /** Result on success; `null` when the workflow returns nothing. */
  readonly output: TypeNode | null
  /** Declared errors: name → payload (an object type; `{}` when the error has no fields). */
  readonly errors: Readonly<Record<string, TypeNode>>
  /** Input field (of type string) the execution key is taken from; `null`: the start's command id. */
  readonly key: string | null
  readonly versions: Readonly<Record<string, MarkerRange>>
  readonly steps: Readonly<Record<string, StepDecl>>
}

export interface MarkerRange {
  readonly min: number
  readonly current: number
}

export interface RetryPolicy {
  /** Total attempts, the first included (so `1` means no retry). */
  readonly attempts: number
  readonly initialMs: number
  readonly factor: number
  readonly maxMs: number
}

export type StepDecl = ActivityStep | SleepStep | WaitStep | RaceStep | StartStep

export type StepKind = StepDecl["kind"]

export const STEP_KINDS: readonly StepKind[] = ["activity", "sleep", "wait", "race", "start"]

export interface ActivityStep {
  readonly kind: "activity"
  readonly description?: string
  readonly input: TypeNode | null
  readonly output: TypeNode | null
  /** Names of workflow errors this activity may fail with. */
  readonly errors: readonly string[]
  readonly retry: RetryPolicy | null
  /** Upper bound on one attempt's run time; `null`: none. */
  readonly timeoutMs: number | null
}

export interface SleepStep {
  readonly kind: "sleep"
  readonly description?: string
  /** Default duration when the body passes none; `null`: the body must pass one. */
  readonly durationMs: number | null
}

export interface WaitStep {
  readonly kind: "wait"
  readonly description?: string
  readonly event: string
  /** Default timeout; `null`: the wait waits forever and resolves only with an event. */
  readonly timeoutMs: number | null
}

export interface RaceStep {
  readonly kind: "race"
  readonly description?: string
  readonly output: TypeNode | null
  readonly errors: readonly string[]
}

export interface StartStep {
  readonly kind: "start"
  readonly description?: string
  /** Owner type of the started workflow (the same owner type when the manifest omits it). */
  readonly owner: string
  readonly workflow: string
}
