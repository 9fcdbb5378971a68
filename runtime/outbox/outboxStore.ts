/**
 * Every statement that touches `akter.outbox`: the one keyed timer of each execution, and the staged
 * starts of other workflows. Rows are claimed with `FOR UPDATE SKIP LOCKED`, and a claim moves the
 * row's due time a recovery interval ahead in the same statement: if the claimer dies, the row comes
 * due again and another runner resumes the work.
 */
import { sql, type RawBuilder } from "kysely"
import type { OutboxKind, Queryable } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import { part, type StatementPart } from "../storage/statementParts.js"
import type { OwnerPlacement } from "../owners/routing.js"

/** `"now"`, or a due time in epoch milliseconds of the database clock. */
export type Due = "now" | number

const dueSql = (clock: DatabaseClock, due: Due) =>
  due === "now" ? nowMs(clock) : sql<number>`${due}::bigint`

/**
 * Arms the execution's timer at `due`, replacing any earlier arming: an execution has at most one
 * timer. `when` conditions the arming on another part of the statement having matched. A `poke`
 * (an emit, an interrupt) marks the timer so that a suspend racing it keeps it due (`respectPoke`,
 * the suspend's arming) instead of moving it later: a resume owed is never dropped.
 */
export const armTimerPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  executionId: string,
  due: Due | RawBuilder<number>,
  options: {
    readonly when: RawBuilder<boolean>
    readonly poke?: boolean
    readonly respectPoke?: boolean
  },
): StatementPart =>
  part(
    "timer",
    () => sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
        due_at_ms, poked)
      SELECT ${owner.routingKey}::bigint, 'timer', ${executionId}, ${owner.bucket}, ${owner.tenant},
        ${owner.ownerType}, ${owner.ownerId},
        ${typeof due === "object" ? due : dueSql(clock, due)}, ${options.poke === true}
      WHERE ${options.when}
      ON CONFLICT (routing_key, kind, id) DO UPDATE
        SET due_at_ms = ${
          options.respectPoke === true
            ? sql`CASE WHEN akter.outbox.poked THEN akter.outbox.due_at_ms ELSE EXCLUDED.due_at_ms END`
            : sql`EXCLUDED.due_at_ms`
        },
        poked = ${options.respectPoke === true ? sql`akter.outbox.poked` : sql`EXCLUDED.poked`},
        attempts = 0
      RETURNING due_at_ms`,
  )

/**
 * Pokes the timers of the executions a part of the statement selected (`execution_id`), due now: an
 * emit waking its waits. A suspend racing it keeps a poked timer due.
 */
export const pokeTimersPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  executions: string,
): StatementPart =>
  part(
    "poked",
    () => sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
        due_at_ms, poked)
      SELECT ${owner.routingKey}::bigint, 'timer', execution_id, ${owner.bucket}, ${owner.tenant},
        ${owner.ownerType}, ${owner.ownerId}, ${nowMs(clock)}, true
      FROM ${sql.id(executions)}
      ON CONFLICT (routing_key, kind, id) DO UPDATE
        SET due_at_ms = EXCLUDED.due_at_ms, poked = true, attempts = 0
      RETURNING id`,
  )

/**
 * Deletes the execution's timer when `when` holds. `respectPoke` (a suspend with nothing to wait
 * for but events) leaves a poked timer in place: the poke is a resume owed.
 */
export const deleteTimerPart = (
  routingKey: string,
  executionId: string,
  options: { readonly when: RawBuilder<boolean>; readonly respectPoke?: boolean },
): StatementPart =>
  part(
    "timer_deleted",
    () => sql`DELETE FROM akter.outbox
      WHERE routing_key = ${routingKey}::bigint AND kind = 'timer' AND id = ${executionId}
        AND ${options.respectPoke === true ? sql`NOT poked` : sql`true`} AND ${options.when}
      RETURNING id`,
  )

/**
 * Stages the start of another workflow in the statement that records the start step, so the
 * started execution exists exactly when the step is recorded (the relay creates it, idempotently
 * by its id).
 */
export const stageStartPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  startedExecutionId: string,
  payload: Buffer,
  when: RawBuilder<boolean>,
): StatementPart =>
  part(
    "staged",
    () => sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
        due_at_ms, payload)
      SELECT ${owner.routingKey}::bigint, 'start', ${startedExecutionId}, ${owner.bucket},
        ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId}, ${nowMs(clock)}, ${payload}
      WHERE ${when}
      ON CONFLICT (routing_key, kind, id) DO NOTHING
      RETURNING id`,
  )

export interface ClaimedRow {
  readonly routingKey: string
  readonly kind: OutboxKind
  readonly id: string
  readonly bucket: number
  readonly tenant: string
  readonly ownerType: string
  readonly ownerId: string
  /** The due time the claim set: a later delete names it, so a row re-armed since is kept. */
  readonly claimedDueAtMs: number
  readonly attempts: number
  readonly payload: Buffer | null
}

/**
 * Claims up to `limit` due rows of the given buckets and moves each `recoveryMs` ahead, in one
 * statement: no other runner sees a claimed row until the claim lapses.
 */
export const claimDue = async (
  db: Queryable,
  clock: DatabaseClock,
  buckets: readonly number[],
  limit: number,
  recoveryMs: number,
): Promise<ClaimedRow[]> => {
  if (buckets.length === 0 || limit <= 0) return []
  const { rows } = await sql<{
    routing_key: string
    kind: OutboxKind
    id: string
    bucket: number
    tenant: string
    owner_type: string
    owner_id: string
    due_at_ms: number
    attempts: number
    payload: Buffer | null
  }>`
    WITH now AS (SELECT ${nowMs(clock)} AS ms),
    due AS (
      SELECT o.routing_key, o.kind, o.id FROM akter.outbox o, now
      WHERE o.bucket = ANY(${buckets}::int[]) AND o.due_at_ms <= now.ms
      ORDER BY o.due_at_ms
      LIMIT ${limit}
      FOR UPDATE OF o SKIP LOCKED)
    UPDATE akter.outbox o
    SET due_at_ms = (SELECT ms FROM now) + ${recoveryMs}::bigint, attempts = o.attempts + 1,
      poked = false
    FROM due
    WHERE o.routing_key = due.routing_key AND o.kind = due.kind AND o.id = due.id
    RETURNING o.routing_key::text AS routing_key, o.kind, o.id, o.bucket, o.tenant, o.owner_type,
      o.owner_id, o.due_at_ms, o.attempts, o.payload`.execute(db)
  return rows.map((row) => ({
    routingKey: row.routing_key,
    kind: row.kind,
    id: row.id,
    bucket: row.bucket,
    tenant: row.tenant,
    ownerType: row.owner_type,
    ownerId: row.owner_id,
    claimedDueAtMs: row.due_at_ms,
    attempts: row.attempts,
    payload: row.payload,
  }))
}

/**
 * Deletes a claimed row once its work is done — only if it still carries the claim's due time, so a
 * row that was re-armed meanwhile (a new decision) survives.
 */
export const deleteClaimedPart = (row: ClaimedRow): StatementPart =>
  part(
    "claimed_deleted",
    () => sql`DELETE FROM akter.outbox
      WHERE routing_key = ${row.routingKey}::bigint AND kind = ${row.kind} AND id = ${row.id}
        AND due_at_ms = ${row.claimedDueAtMs}::bigint
      RETURNING id`,
  )

/** The earliest due time among the given buckets' rows, to sleep until then. */
export const nextDue = async (
  db: Queryable,
  buckets: readonly number[],
): Promise<number | null> => {
  if (buckets.length === 0) return null
  const row = await db
    .selectFrom("akter.outbox")
    .select((eb) => eb.fn.min("due_at_ms").as("due"))
    .where("bucket", "in", buckets)
    .executeTakeFirst()
  return row?.due ?? null
}
