/**
 * A manifest after parsing and validation: one owner type, its named types, its events and its
 * workflows. Codegen produces these from YAML; the runtime and the compatibility rules consume the
 * canonical projection of them (see `canonicalWorkflow`). Types here may still contain `ref` nodes;
 * every ref is known to resolve.
 */
import type { OwnerEarlierShapes } from "./earlierShapes.js"
import type { StepDecl } from "./stepKinds/stepKinds.js"
import type { NamedTypes, TypeNode } from "./typeModel.js"
import type { ScheduleDecl } from "./schedule.js"

export type { ActivityStep, RetryPolicy } from "./stepKinds/activity.js"
export type { RaceStep } from "./stepKinds/race.js"
export type { SleepStep } from "./stepKinds/sleep.js"
export type { StartStep } from "./stepKinds/start.js"
export type { WaitStep } from "./stepKinds/wait.js"
export type { ScheduleDecl } from "./schedule.js"
export { STEP_KINDS, type StepDecl, type StepKind } from "./stepKinds/stepKinds.js"

export const MANIFEST_FORMAT = 1

export interface OwnerManifest {
  readonly format: typeof MANIFEST_FORMAT
  readonly owner: string
  readonly description?: string
  readonly types: NamedTypes
  readonly events: Readonly<Record<string, EventDecl>>
  readonly workflows: Readonly<Record<string, WorkflowDecl>>
  /** Schedules that start workflows of this owner; absent or empty when it declares none. */
  readonly schedules?: Readonly<Record<string, ScheduleDecl>>
  /** Earlier shapes of recorded data the manifest still reads, each with its migration's name. */
  readonly earlier?: OwnerEarlierShapes
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
  /** At most `limit` executions per value of an input field run at once; absent: no limit. */
  readonly concurrency?: ConcurrencyDecl
  readonly versions: Readonly<Record<string, MarkerRange>>
  readonly steps: Readonly<Record<string, StepDecl>>
  /**
   * How long an execution may stay open: past it, it is interrupted (its compensations run) and
   * its result names the deadline. A setting, never hashed: each execution fixes its deadline at
   * its start. Absent: none.
   */
  readonly deadlineMs?: number
}

/**
 * A workflow's concurrency key: executions whose input has the same value at `key` (a dotted path
 * of required fields, e.g. `customer.id`) form a group, of which at most `limit` run at once
 * across all runners; the others wait, queued in the order they started.
 */
export interface ConcurrencyDecl {
  readonly key: string
  readonly limit: number
}

export interface MarkerRange {
  readonly min: number
  readonly current: number
}
