/**
 * The plans of every owner generated together, so that a `start` step can find the workflow it
 * starts in another owner's manifest.
 */
import type { LoadedManifest } from "../manifest/loadedManifest.js"
import { planOwner, type OwnerPlan, type WorkflowPlan } from "./ownerPlan.js"
import type { StartStep } from "../../runtime/model/manifest.js"

export interface ProjectPlan {
  /** Sorted by owner name, like the manifests they come from. */
  readonly owners: readonly OwnerPlan[]
  /** The owner and workflow a `start` step starts; undefined when no manifest declares it. */
  startTarget(
    step: StartStep,
  ): { readonly owner: OwnerPlan; readonly workflow: WorkflowPlan } | undefined
}

export const planProject = (manifests: readonly LoadedManifest[]): ProjectPlan => {
  const owners = manifests
    .map(planOwner)
    .sort((a, b) => (a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0))
  const byName = new Map(owners.map((owner) => [owner.owner, owner]))
  return {
    owners,
    startTarget: (step) => {
      const owner = byName.get(step.owner)
      const workflow = owner?.workflows.find((candidate) => candidate.name === step.workflow)
      return owner === undefined || workflow === undefined ? undefined : { owner, workflow }
    },
  }
}
