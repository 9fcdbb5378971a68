/**
 * Resolving an execution id on the client side, before anything is read: the id decodes, and names
 * an execution of the caller's tenant and of the workflow asked for. Synchronous and free of the
 * stores, so that a client's `attach` refuses a wrong id at the call.
 */
import { ForeignTenant, ForeignWorkflow, InvalidExecutionId } from "../errors.js"
import type { Caller } from "../model/caller.js"
import { decodeExecutionId } from "../model/executionId.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { placeOwner, type OwnerPlacement } from "../owners/routing.js"

export interface ResolvedExecution {
  readonly executionId: string
  readonly owner: OwnerPlacement
  readonly key: string
}

/** Decodes an id and checks it names an execution of this tenant and this workflow. */
export const resolveExecution = (
  workflow: WorkflowRegistration,
  caller: Caller,
  executionId: string,
): ResolvedExecution | InvalidExecutionId | ForeignTenant | ForeignWorkflow => {
  const address = decodeExecutionId(executionId)
  if (address instanceof InvalidExecutionId) return address
  if (address.tenant !== caller.tenant) return new ForeignTenant(executionId)
  if (address.ownerType !== workflow.owner || address.workflow !== workflow.name) {
    return new ForeignWorkflow(
      executionId,
      `${workflow.owner}.${workflow.name}`,
      `${address.ownerType}.${address.workflow}`,
    )
  }
  return {
    executionId,
    key: address.key,
    owner: placeOwner({
      tenant: address.tenant,
      ownerType: address.ownerType,
      ownerId: address.ownerId,
    }),
  }
}
