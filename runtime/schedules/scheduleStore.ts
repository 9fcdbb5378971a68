/**
 * Every statement on `akter.schedules`: one row per declared schedule, shared by all runners that
 * tick it. A runner claims a due row for a short while to decide its ticks (which to start, skip or
 * queue), starts them by their idempotent keys, and writes the new cursor under its claim; pausing
 * and resuming come from the CLI.
 */
import { sql } from "kysely"
import type { Queryable, Row } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"

export type ScheduleRow = Row<"akter.schedules">

export interface DeclaredSchedule {
  readonly ownerType: string
  readonly schedule: string
  /** Hash of the canonical declaration. */
  readonly definition: string
}

/**
 * Records schedules a runner ticks that have no row yet, their cursor at now: one row per schedule,
 * and a runner starting never resets the state another left (`ON CONFLICT DO NOTHING`).
 */
export const declareSchedules = async (
  db: Queryable,
  clock: DatabaseClock,
  schedules: readonly DeclaredSchedule[],
): Promise<void> => {
  if (schedules.length === 0) return
  await db
    .insertInto("akter.schedules")
    .values(
      schedules.map((schedule) => ({
        owner_type: schedule.ownerType,
        schedule: schedule.schedule,
        definition: schedule.definition,
        next_tick_ms: nowMs(clock),
        queued_tick_ms: null,
        last_execution_id: null,
        last_tick_ms: null,
        claimed_by: null,
        updated_at_ms: nowMs(clock),
      })),
    )
    .onConflict((conflict) => conflict.columns(["owner_type", "schedule"]).doNothing())
    .execute()
}

export interface ScheduleClaim {
  /** The row as it is now (claimed by the caller when `claimed`). */
  readonly row: ScheduleRow
  readonly claimed: boolean
  /** The database's time (offset included) when the claim was tried. */
  readonly nowMs: number
}

/**
 * Claims the schedule for `claimMs` when something is to be decided — a tick is due, its
 * declaration changed, or `wanted` (a queued tick's predecessor finished) — and no other runner's
 * claim holds it: at most one runner decides a schedule's ticks at a time. Returns the row either
 * way, so a runner that did not claim it knows when to look again.
 */
export const claimSchedule = async (
  db: Queryable,
  clock: DatabaseClock,
  runnerId: string,
  declared: DeclaredSchedule,
  claimMs: number,
  wanted: boolean,
): Promise<ScheduleClaim | undefined> => {
  const { rows } = await sql<ScheduleRow & { claimed: boolean; now_ms: number }>`
    WITH now AS (SELECT ${nowMs(clock)} AS ms),
    claim AS (
      UPDATE akter.schedules s
      SET claimed_by = ${runnerId}, claimed_until_ms = now.ms + ${claimMs}::bigint
      FROM now
      WHERE s.owner_type = ${declared.ownerType} AND s.schedule = ${declared.schedule}
        AND NOT s.paused
        AND (s.claimed_until_ms <= now.ms OR s.claimed_by = ${runnerId})
        AND (s.next_tick_ms IS NULL OR s.next_tick_ms <= now.ms
          OR s.definition <> ${declared.definition}
          OR (${wanted}::boolean AND s.queued_tick_ms IS NOT NULL))
      RETURNING s.*)
    SELECT claim.*, true AS claimed, now.ms AS now_ms FROM claim, now
    UNION ALL
    SELECT s.*, false AS claimed, now.ms AS now_ms FROM akter.schedules s, now
    WHERE s.owner_type = ${declared.ownerType} AND s.schedule = ${declared.schedule}
      AND NOT EXISTS (SELECT 1 FROM claim)`.execute(db)
  const found = rows[0]
  if (found === undefined) return undefined
  const { claimed, now_ms, ...row } = found
  return { row, claimed, nowMs: Number(now_ms) }
}

export interface TickDecision {
  readonly definition: string
  readonly nextTickMs: number | null
  readonly queuedTickMs: number | null
  readonly lastExecutionId: string | null
  readonly lastTickMs: number | null
}

/**
 * Records what the claimant decided and releases its claim. Lands only while the row is still the
 * caller's (`claimed_by`): a runner whose claim lapsed and was taken over writes nothing, and its
 * successor decides again, starting by the same keys.
 */
export const recordTicks = async (
  db: Queryable,
  clock: DatabaseClock,
  runnerId: string,
  declared: DeclaredSchedule,
  decision: TickDecision,
): Promise<boolean> => {
  const result = await db
    .updateTable("akter.schedules")
    .set({
      definition: decision.definition,
      next_tick_ms: decision.nextTickMs,
      queued_tick_ms: decision.queuedTickMs,
      last_execution_id: decision.lastExecutionId,
      last_tick_ms: decision.lastTickMs,
      claimed_by: null,
      claimed_until_ms: 0,
      updated_at_ms: nowMs(clock),
    })
    .where("owner_type", "=", declared.ownerType)
    .where("schedule", "=", declared.schedule)
    .where("claimed_by", "=", runnerId)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/**
 * Pauses or resumes a schedule. A pause drops a queued tick; a resume moves the cursor of a paused
 * schedule to now, so ticks that passed while it was paused are not caught up. Returns the row
 * after the change, or undefined when no runner declared such a schedule.
 */
export const setSchedulePaused = async (
  db: Queryable,
  clock: DatabaseClock,
  ownerType: string,
  schedule: string,
  paused: boolean,
): Promise<ScheduleRow | undefined> => {
  const { rows } = await sql<ScheduleRow>`
    UPDATE akter.schedules
    SET paused = ${paused},
      queued_tick_ms = CASE WHEN ${paused}::boolean THEN NULL ELSE queued_tick_ms END,
      next_tick_ms = CASE WHEN paused AND NOT ${paused}::boolean THEN ${nowMs(clock)}
        ELSE next_tick_ms END,
      updated_at_ms = ${nowMs(clock)}
    WHERE owner_type = ${ownerType} AND schedule = ${schedule}
    RETURNING *`.execute(db)
  return rows[0]
}

/** Every schedule's row, by owner type and name. */
export const listSchedules = (db: Queryable): Promise<ScheduleRow[]> =>
  db
    .selectFrom("akter.schedules")
    .selectAll()
    .orderBy("owner_type")
    .orderBy("schedule")
    .execute() as Promise<ScheduleRow[]>
