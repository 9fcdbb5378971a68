/**
 * The relay of staged starts: a `start` step stages the start of another execution as an outbox
 * row in the statement that records the step, and a runner that claims the row writes the start
 * (idempotent by the execution's id), removing the row in the same statement, so it is relayed
 * exactly once. A runner of the relaying process that serves the child takes the start into its
 * pass's first write, the row's removal with it (engine/localStarts.ts); otherwise the start is a
 * statement of its own and the child's runner claims its timer. */
import type { AkterInternals } from "../akter.js"
import type { ParentLink, StartRequest } from "../engine/startRequest.js"
import { writeStart } from "../engine/startStatement.js"
import { faultPoint } from "../faults.js"
import type { Logger } from "../log.js"
import type { Caller } from "../model/caller.js"
import type { OwnerRegistration } from "../model/registration.js"
import { concurrencyGroupOf } from "../model/startInput.js"
import { deleteClaimedPart, type ClaimedRow } from "../outbox/outboxStore.js"
import { placeOwner } from "../owners/routing.js"
import { decodeJson, encodeJson } from "../storage/codec.js"
import type { DatabaseHealth } from "./databaseHealth.js"

/** A staged start's payload, as the `start` step wrote it. */
interface StagedStart {
  readonly executionId: string
  readonly ownerType: string
  readonly ownerId: string
  readonly workflow: string
  readonly key: string
  readonly input: unknown
  readonly caller: Caller
  /** The parent and what its step declared of the child (absent in rows staged before 0009). */
  readonly parent?: ParentLink
}

/**
 * Writes the staged start of a claimed row and removes the row. The start and the removal commit
 * together: the start is relayed exactly once, and a failed relay leaves the row for a later claim.
 */
export const relayStagedStart = async (
  internals: AkterInternals,
  log: Logger,
  owners: ReadonlyMap<string, OwnerRegistration>,
  row: ClaimedRow,
): Promise<void> => {
  const staged = decodeJson(row.payload!) as StagedStart
  const workflow = owners.get(staged.ownerType)?.workflows[staged.workflow]
  if (workflow === undefined) {
    log.warn("staged start names a workflow this runner does not know; left for another runner", {
      executionId: staged.executionId,
    })
    return
  }
  const placement = placeOwner({
    tenant: row.tenant,
    ownerType: staged.ownerType,
    ownerId: staged.ownerId,
  })
  const request: StartRequest = {
    owner: placement,
    workflow,
    executionId: staged.executionId,
    key: staged.key,
    input: encodeJson(staged.input),
    caller: JSON.stringify(staged.caller),
    concurrency: concurrencyGroupOf(workflow, staged.input),
    ...(staged.parent === undefined ? {} : { parent: staged.parent }),
  }
  const removed = [deleteClaimedPart(row)]
  faultPoint("relay.before")
  // A runner here that serves the child takes it into its pass's first write, the row's delete
  // alongside: no statement of the relay's own, and no claim of the child's timer.
  const offered = internals.localStarts.offer(request, removed)
  const taken = offered === undefined ? "not-taken" : await offered
  if (taken !== "not-taken") {
    faultPoint("relay.after")
    if (taken === "created") internals.metrics.executionStarted(workflow.owner, workflow.name)
    return
  }
  const created = await writeStart(internals, request, { awaited: false, alongside: removed })
  faultPoint("relay.after")
  if (created) internals.metrics.executionStarted(workflow.owner, workflow.name)
  internals.wakeups.wakeBucket(placement.bucket)
}

/** Relays a claimed staged start, logging a failure (the row stays, and is claimed again). */
export const relayClaimedStart = (
  internals: AkterInternals,
  log: Logger,
  health: DatabaseHealth,
  owners: ReadonlyMap<string, OwnerRegistration>,
  row: ClaimedRow,
): Promise<void> =>
  relayStagedStart(internals, log, owners, row).catch((error) => {
    if (!health.failed(error)) {
      log.error("relaying a staged start failed; it is retried", {
        id: row.id,
        error: String(error),
      })
    }
  })
