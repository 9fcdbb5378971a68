/**
 * The interrupt: set the execution's interrupt flag and poke its timer due now, in one statement;
 * the next pass runs the compensations and records `Interrupt`. Interrupting a finished execution
 * changes nothing, so interrupt is idempotent and interrupt racing completion leaves one result.
 * The poke keeps the timer due even if a pass suspends at the same moment.
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import { requestInterruptPart } from "../engine/executionStore.js"
import { armTimerPart } from "../outbox/outboxStore.js"
import { notifyColumn, WAKE_CHANNEL } from "../outbox/notifications.js"
import { composeStatement, countOf, existsIn } from "../storage/statementParts.js"
import type { ResolvedExecution } from "./executionResults.js"

export const interruptExecution = async (
  internals: AkterInternals,
  execution: ResolvedExecution,
): Promise<void> => {
  const { owner, executionId } = execution
  const interrupted = requestInterruptPart(internals.clock, owner.routingKey, executionId)
  const flagged = existsIn(interrupted.name)
  const timer = armTimerPart(internals.clock, owner, executionId, "now", {
    when: flagged,
    poke: true,
  })
  const select =
    internals.storage.backend === "postgres"
      ? sql`${countOf(interrupted.name)} AS flagged, ${notifyColumn(
          WAKE_CHANNEL,
          String(owner.bucket),
          { when: existsIn(interrupted.name) },
        )}`
      : sql`${countOf(interrupted.name)} AS flagged`
  faultPoint("interrupt.before")
  const { rows } = await composeStatement([interrupted, timer], select).execute(
    internals.storage.db,
  )
  faultPoint("interrupt.after")
  if (rows[0]?.["flagged"] === 1) internals.wakeups.wakeBucket(owner.bucket)
}
