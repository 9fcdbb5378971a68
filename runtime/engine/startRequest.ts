/**
 * What a start asks for: the owner (placed in its bucket), the workflow, the execution's id and key
 * (derived by the caller), the encoded input, the encoded caller, for a child its parent, and a
 * shorter deadline if asked. A client's start and the relay
 * of a staged start build one; the start statement (or a runner of this process that takes the
 * start, engine/localStarts.ts) writes it.
 */
import type { WorkflowRegistration } from "../model/registration.js"
import type { ConcurrencyGroup } from "../model/startInput.js"
import type { ParentClose } from "../model/stepKinds/start.js"
import type { OwnerPlacement } from "../owners/routing.js"

/** The execution whose `start` step started this one, and what that step declared of it. */
export interface ParentLink {
  readonly routingKey: string
  readonly executionId: string
  readonly step: string
  /** The step awaits the child's result: the child's finish wakes the parent. */
  readonly awaits: boolean
  readonly close: ParentClose
}

export interface StartRequest {
  readonly owner: OwnerPlacement
  readonly workflow: WorkflowRegistration
  readonly executionId: string
  readonly key: string
  readonly input: Buffer
  readonly caller: string
  /** Its concurrency group, when the workflow declares a concurrency key (`concurrencyGroupOf`). */
  readonly concurrency: ConcurrencyGroup | null
  /** Set when a `start` step of another execution started this one. */
  readonly parent?: ParentLink
  /**
   * A deadline shorter than the workflow's that the start asked for, in ms from the start (checked
   * by the client); absent: the workflow's own, if it has one.
   */
  readonly deadlineMs?: number
}
