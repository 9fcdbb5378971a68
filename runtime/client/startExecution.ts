/**
 * The start: create the owner if new, insert the execution with its markers and start manifest,
 * arm its timer due now — one statement. Used by clients and by the relay of staged starts alike;
 * a second start of the same execution id attaches and writes nothing.
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { WorkflowRegistration } from "../model/registration.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { insertExecutionParts } from "../engine/executionStore.js"
import { insertMarkersPart } from "../engine/stepStore.js"
import { armTimerPart } from "../outbox/outboxStore.js"
import { WAKE_CHANNEL } from "../outbox/wakeups.js"
import { recordStartManifestPart } from "../storage/manifestStore.js"
import { composeStatement, countOf, type StatementPart } from "../storage/statementParts.js"

export interface StartRequest {
  readonly owner: OwnerPlacement
  readonly workflow: WorkflowRegistration
  readonly executionId: string
  readonly key: string
  readonly input: Buffer
  readonly caller: string
}

/** The parts of a start statement, and the name of the part that inserted the execution. */
export const startParts = (
  internals: AkterInternals,
  request: StartRequest,
): { readonly parts: readonly StatementPart[]; readonly inserted: string } => {
  const { clock } = internals
  const { parts, inserted } = insertExecutionParts(clock, {
    owner: request.owner,
    executionId: request.executionId,
    workflow: request.workflow.name,
    key: request.key,
    manifestHash: request.workflow.hashes.compatibility,
    input: request.input,
    caller: request.caller,
  })
  const created = sql<boolean>`EXISTS (SELECT 1 FROM ${sql.id(inserted)})`
  const markers: Record<string, number> = {}
  for (const [name, range] of Object.entries(request.workflow.canonical.versions)) {
    markers[name] = range.current
  }
  return {
    inserted,
    parts: [
      ...parts,
      ...(Object.keys(markers).length === 0
        ? []
        : [
            insertMarkersPart(
              clock,
              request.owner.routingKey,
              request.executionId,
              markers,
              inserted,
            ),
          ]),
      recordStartManifestPart(
        request.workflow.canonical,
        request.workflow.hashes.compatibility,
        created,
      ),
      armTimerPart(clock, request.owner, request.executionId, "now", { when: created }),
    ],
  }
}

/** The final select of a start: whether it created the execution, and the wake-up of other processes. */
export const startSelect = (internals: AkterInternals, owner: OwnerPlacement, inserted: string) =>
  internals.storage.backend === "postgres"
    ? sql`${countOf(inserted)} AS created,
        (SELECT pg_notify(${WAKE_CHANNEL}, ${String(owner.bucket)}) FROM ${sql.id(inserted)}) AS notified`
    : sql`${countOf(inserted)} AS created`

/** Starts (or attaches to) an execution in one statement and wakes this process's runners. */
export const startExecution = async (
  internals: AkterInternals,
  request: StartRequest,
): Promise<boolean> => {
  const { parts, inserted } = startParts(internals, request)
  faultPoint("start.before")
  const { rows } = await composeStatement(
    parts,
    startSelect(internals, request.owner, inserted),
  ).execute(internals.storage.db)
  faultPoint("start.after")
  const created = rows[0]?.["created"] === 1
  if (created) internals.wakeups.wakeBucket(request.owner.bucket)
  return created
}
