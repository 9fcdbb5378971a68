/**
 * What a studio may change, each an audited call of what a client does: interrupting an execution
 * is the client's own interrupt (runtime/client/interruptExecution.ts: flag and timer in one
 * statement, idempotent); making a timer due now is a poke of the execution's timer; pausing and
 * resuming a schedule is the schedule store's, as `akter schedule pause|resume`. Every action
 * is logged through the handle's logger with the studio's name for who asked.
 */
import { sql } from "kysely"
import { internalsOf, type Akter } from "../runtime/akter.js"
import { interruptExecution } from "../runtime/client/interruptExecution.js"
import { ForeignTenant, InvalidExecutionId } from "../runtime/errors.js"
import { decodeExecutionId } from "../runtime/model/executionId.js"
import { placeOwner, type OwnerPlacement } from "../runtime/owners/routing.js"
import { sendNotification, WAKE_CHANNEL } from "../runtime/outbox/notifications.js"
import { openExecutionPart } from "../runtime/engine/executionStore.js"
import { pendingStepsDueNowPart } from "../runtime/engine/stepStore.js"
import { pokeTimerDueNowPart } from "../runtime/outbox/outboxStore.js"
import { setSchedulePaused, type ScheduleRow } from "../runtime/schedules/scheduleStore.js"
import { composeStatement, countOf, existsIn } from "../runtime/storage/statementParts.js"
import { studioPage, type StudioFilter } from "./studioQueries.js"

export interface ActionContext {
  readonly akter: Akter
  /** The tenant this studio is restricted to, if any. */
  readonly tenant: string | undefined
  /** Who asked, for the audit line: the studio's name and the client's address. */
  readonly actor: string
}

/** An execution id this studio may act on, decoded and placed. */
export const placeExecution = (
  executionId: string,
  tenant: string | undefined,
): { readonly executionId: string; readonly owner: OwnerPlacement; readonly key: string } => {
  const address = decodeExecutionId(executionId)
  if (address instanceof InvalidExecutionId) throw address
  if (tenant !== undefined && address.tenant !== tenant) throw new ForeignTenant(executionId)
  return { executionId, owner: placeOwner(address), key: address.key }
}

/** Interrupts one execution (the client's interrupt); a finished one is left as it is. */
export const interruptOne = async (context: ActionContext, executionId: string): Promise<void> => {
  const internals = internalsOf(context.akter)
  await interruptExecution(internals, placeExecution(executionId, context.tenant))
  internals.log.info("studio: interrupt", { executionId, actor: context.actor })
}

/**
 * Makes an open execution's pending due times due now: its pending sleep ends, its pending wait
 * times out, its failed activity's next attempt may start, and its timer wakes a runner for it.
 * One statement of the executions', steps' and outbox's parts, only while the execution is open
 * and only moving due times earlier, with the timer poked (its count raised) so that a pass suspending at this moment keeps it due rather
 * than move it later — the rule every emit and interrupt follows. Returns whether anything was due
 * later.
 */
export const makeTimerDueNow = async (
  context: ActionContext,
  executionId: string,
): Promise<boolean> => {
  const internals = internalsOf(context.akter)
  const { owner } = placeExecution(executionId, context.tenant)
  const open = openExecutionPart(owner, executionId)
  const steps = pendingStepsDueNowPart(internals.clock, owner, executionId, existsIn(open.name))
  const timer = pokeTimerDueNowPart(internals.clock, owner, executionId, existsIn(open.name))
  const { rows } = await composeStatement(
    [open, steps, timer],
    sql`${countOf(steps.name)} AS steps, ${countOf(timer.name)} AS timers`,
  ).execute(internals.storage.db)
  const moved = { steps: Number(rows[0]?.["steps"] ?? 0), timers: Number(rows[0]?.["timers"] ?? 0) }
  if (moved.steps + moved.timers === 0) return false
  if (internals.storage.backend === "postgres") {
    await sendNotification(internals.storage.db, WAKE_CHANNEL, String(owner.bucket))
  }
  internals.wakeups.wakeBucket(owner.bucket)
  internals.log.info("studio: due now", { executionId, actor: context.actor, ...moved })
  return true
}

const BULK_PAGE = 500

/** The filter a bulk interrupt walks: the page's filter, narrowed to open executions. */
export const openPartOf = (filter: StudioFilter): StudioFilter | undefined => {
  if (filter.outcome !== undefined || filter.status === "finished") return undefined
  return { ...filter, status: filter.status ?? "open" }
}

/**
 * Interrupts every open execution matching `filter`, a page at a time, and returns how many it
 * asked to stop. Each is the client's interrupt, so one finished meanwhile is left as it is.
 */
export const interruptMatching = async (
  context: ActionContext,
  filter: StudioFilter,
): Promise<number> => {
  const open = openPartOf(filter)
  if (open === undefined) return 0
  const internals = internalsOf(context.akter)
  let interrupted = 0
  let after: Parameters<typeof studioPage>[2]
  for (;;) {
    const page = await studioPage(internals.storage.db, open, after, BULK_PAGE)
    for (const execution of page.executions) {
      if (execution.interrupting) continue
      await interruptExecution(internals, placeExecution(execution.executionId, context.tenant))
      interrupted += 1
    }
    if (page.next === undefined) break
    after = page.next
  }
  internals.log.info("studio: bulk interrupt", {
    actor: context.actor,
    interrupted,
    filter: JSON.stringify(filter),
  })
  return interrupted
}

/**
 * Pauses or resumes a schedule with the schedule store's own statement (`akter schedule
 * pause|resume` runs the same): a pause drops a queued tick, a resume starts from the next tick
 * without catching up. Returns the row after the change, or undefined when no runner declared
 * such a schedule.
 */
export const pauseSchedule = async (
  context: ActionContext,
  ownerType: string,
  schedule: string,
  paused: boolean,
): Promise<ScheduleRow | undefined> => {
  const internals = internalsOf(context.akter)
  const row = await setSchedulePaused(
    internals.storage.db,
    internals.clock,
    ownerType,
    schedule,
    paused,
  )
  internals.log.info(`studio: schedule ${paused ? "pause" : "resume"}`, {
    ownerType,
    schedule,
    actor: context.actor,
    found: row !== undefined,
  })
  return row
}
