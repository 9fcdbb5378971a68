/**
 * What a runner serves: the workflows it implements, every owner type it can reach through `start`
 * steps (so staged starts of those can be relayed), and the manifests it runs, by which it also
 * takes executions, in any bucket, that want one of them.
 */
import type { WorkflowImplementation } from "../engine/workflowApi.js"
import type { OwnerRegistration, WorkflowRegistration } from "../model/registration.js"

export interface ServedWorkflows {
  /** The workflows implemented here, by `owner/workflow`. */
  readonly implementations: ReadonlyMap<string, WorkflowImplementation>
  /** Every owner type known here, by name: implemented, declared, or reachable by a start step. */
  readonly owners: ReadonlyMap<string, OwnerRegistration>
  /** The registrations of the implemented workflows. */
  readonly registered: readonly WorkflowRegistration[]
  /** The compatibility hashes of the manifests this runner runs. */
  readonly manifests: readonly string[]
}

/** The key of a workflow in `implementations`. */
export const workflowKeyOf = (ownerType: string, workflow: string) => `${ownerType}/${workflow}`

/**
 * Collects what a runner of these implementations serves; a workflow implemented twice is refused.
 *
 * @example
 * const served = servedWorkflows([fulfill], [])
 * served.implementations.has(workflowKeyOf("Order", "fulfill")) // true
 */
export const servedWorkflows = (
  workflows: readonly WorkflowImplementation[],
  registrations: readonly OwnerRegistration[],
): ServedWorkflows => {
  const implementations = new Map<string, WorkflowImplementation>()
  const owners = new Map<string, OwnerRegistration>()
  const addOwner = (registration: OwnerRegistration) => {
    if (owners.has(registration.owner)) return
    owners.set(registration.owner, registration)
    for (const workflow of Object.values(registration.workflows)) {
      for (const settings of Object.values(workflow.steps)) {
        if (settings.target !== undefined) addOwner(settings.target())
      }
    }
  }
  for (const registration of registrations) addOwner(registration)
  for (const implementation of workflows) {
    const key = workflowKeyOf(implementation.owner.owner, implementation.workflow)
    if (implementations.has(key)) throw new Error(`workflow ${key} is implemented twice`)
    implementations.set(key, implementation)
    addOwner(implementation.owner)
  }
  const registered = [...implementations.values()].map(
    (implementation) => implementation.owner.workflows[implementation.workflow]!,
  )
  return {
    implementations,
    owners,
    registered,
    manifests: registered.map((workflow) => workflow.hashes.compatibility),
  }
}
