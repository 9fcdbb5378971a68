/**
 * What a start asks for: the owner (placed in its bucket), the workflow, the execution's id and key
 * (derived by the caller), the encoded input and the encoded caller. A client's start and the relay
 * of a staged start build one; the start statement (or a runner of this process that takes the
 * start, engine/localStarts.ts) writes it.
 */
import type { WorkflowRegistration } from "../model/registration.js"
import type { ConcurrencyGroup } from "../model/startInput.js"
import type { OwnerPlacement } from "../owners/routing.js"

export interface StartRequest {
  readonly owner: OwnerPlacement
  readonly workflow: WorkflowRegistration
  readonly executionId: string
  readonly key: string
  readonly input: Buffer
  readonly caller: string
  /** Its concurrency group, when the workflow declares a concurrency key (`concurrencyGroupOf`). */
  readonly concurrency: ConcurrencyGroup | null
}
