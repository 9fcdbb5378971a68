/**
 * Startup acceptance (DESIGN §7): before a runner serves, it checks its manifests against the open
 * executions of its owner types and refuses to start when it could not replay some; otherwise it
 * records its manifests as accepted, each with an accepted time strictly later than any earlier
 * acceptance of that workflow, so the newest deployment is always the most recently accepted and an
 * execution started by a newer deployment is recognized as such. Runners starting together are
 * serialized by an advisory lock, so two deployments never both pass a check the other would fail.
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { IncompatibleDeployment } from "../errors.js"
import type { CanonicalOwner } from "../model/canonicalManifest.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { recordAcceptedManifest } from "../storage/manifestStore.js"
import {
  nothingChanged,
  readLatestAccepted,
  readManifestsInUse,
  readOpenExecutions,
  servedOwners,
  startupProblems,
  workflowKey,
} from "./startupCheck.js"

const ACCEPTANCE_LOCK = 4_242_002

/**
 * Checks the runner's manifests against the open executions of its owner types and records them as
 * accepted; returns each workflow's accepted time, keyed `Owner/workflow`. Throws
 * `IncompatibleDeployment`, recording nothing, when some open execution could not be replayed.
 *
 * Pass `owners` (the registrations of the owner types served) so that open executions of a workflow
 * the manifests no longer declare refuse the start too; without them only the served workflows' own
 * executions are judged.
 *
 * When every served workflow was last accepted under the runner's own manifest and every open
 * execution uses a manifest the runner has, nothing changed since a runner of this build accepted
 * them: the full check is skipped (two reads instead of five, none of them of recorded steps).
 *
 * @example
 * const acceptedAt = await acceptManifests(internals, [registration.workflows.fulfill], [registration])
 */
export const acceptManifests = async (
  internals: AkterInternals,
  workflows: readonly WorkflowRegistration[],
  owners?: readonly { readonly owner: string; readonly canonical: CanonicalOwner }[],
): Promise<Map<string, number>> =>
  internals.storage.db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${ACCEPTANCE_LOCK})`.execute(tx)
    const ownerTypes = [...new Set(workflows.map((workflow) => workflow.owner))].sort()
    const latest = await readLatestAccepted(tx, ownerTypes)
    const inUse = await readManifestsInUse(tx, ownerTypes)
    const accepted = new Map<string, number>()
    if (nothingChanged(workflows, latest, inUse)) {
      for (const workflow of workflows) {
        const key = workflowKey(workflow.owner, workflow.name)
        accepted.set(key, latest.get(key)!.acceptedAtMs)
      }
      internals.log.debug("manifests unchanged since their last acceptance", {
        workflows: [...accepted.keys()],
      })
      return accepted
    }
    const served = servedOwners(workflows, owners)
    const problems = startupProblems(await readOpenExecutions(tx, ownerTypes), served, workflows)
    if (problems.length > 0) throw new IncompatibleDeployment(problems)
    for (const workflow of workflows) {
      const key = workflowKey(workflow.owner, workflow.name)
      const previous = latest.get(key)
      accepted.set(
        key,
        previous !== undefined &&
          previous.acceptedAtMs > 0 &&
          previous.hash === workflow.hashes.compatibility
          ? previous.acceptedAtMs
          : await recordAcceptedManifest(
              tx,
              internals.clock,
              workflow,
              previous?.acceptedAtMs ?? 0,
            ),
      )
    }
    internals.log.info("manifests accepted", { workflows: [...accepted.keys()] })
    return accepted
  })
