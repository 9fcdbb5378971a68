/**
 * Every statement that touches `akter.outbox`: the one keyed timer of each execution, and the staged
 * starts of other workflows. Rows are claimed with `FOR UPDATE SKIP LOCKED`, and a claim moves the
 * row's due time a recovery interval ahead in the same statement: if the claimer dies, the row comes
 * due again and another runner resumes the work.
 */
import { sql } from "kysely"
import type { OutboxKind, Queryable, Tx } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import type { OwnerPlacement } from "../owners/routing.js"

/** `"now"`, or a due time in epoch milliseconds of the database clock. */
export type Due = "now" | number

const dueSql = (clock: DatabaseClock, due: Due) =>
  due === "now" ? nowMs(clock) : sql<number>`${due}::bigint`

/**
 * Arms the execution's timer at `due`, replacing any earlier arming: an execution has at most one
 * timer, and its due time is the latest decision about when the execution must run next.
 */
export const armTimer = async (
  tx: Queryable,
  clock: DatabaseClock,
  owner: OwnerPlacement,
  executionId: string,
  due: Due,
) => {
  await sql`
    INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id, due_at_ms)
    VALUES (${owner.routingKey}::bigint, 'timer', ${executionId}, ${owner.bucket}, ${owner.tenant},
      ${owner.ownerType}, ${owner.ownerId}, ${dueSql(clock, due)})
    ON CONFLICT (routing_key, kind, id) DO UPDATE
      SET due_at_ms = EXCLUDED.due_at_ms, attempts = 0`.execute(tx)
}

/** Arms the timers of several executions of one owner due now (an emit waking its waits). */
export const armTimersNow = async (
  tx: Tx,
  clock: DatabaseClock,
  owner: OwnerPlacement,
  executionIds: readonly string[],
) => {
  if (executionIds.length === 0) return
  await sql`
    INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id, due_at_ms)
    SELECT ${owner.routingKey}::bigint, 'timer', id, ${owner.bucket}, ${owner.tenant},
      ${owner.ownerType}, ${owner.ownerId}, ${nowMs(clock)}
    FROM unnest(${executionIds}::text[]) AS ids(id)
    ON CONFLICT (routing_key, kind, id) DO UPDATE
      SET due_at_ms = EXCLUDED.due_at_ms, attempts = 0`.execute(tx)
}

export const deleteTimer = async (tx: Tx, routingKey: string, executionId: string) => {
  await tx
    .deleteFrom("akter.outbox")
    .where("routing_key", "=", routingKey)
    .where("kind", "=", "timer")
    .where("id", "=", executionId)
    .execute()
}

/**
 * Stages the start of another workflow in the transaction that records the start step, so the
 * started execution exists exactly when the step is recorded (the relay creates it, idempotently
 * by its id).
 */
export const stageStart = async (
  tx: Tx,
  clock: DatabaseClock,
  owner: OwnerPlacement,
  startedExecutionId: string,
  payload: Buffer,
) => {
  await sql`
    INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id, due_at_ms,
      payload)
    VALUES (${owner.routingKey}::bigint, 'start', ${startedExecutionId}, ${owner.bucket},
      ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId}, ${nowMs(clock)}, ${payload})
    ON CONFLICT (routing_key, kind, id) DO NOTHING`.execute(tx)
}

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
    SET due_at_ms = (SELECT ms FROM now) + ${recoveryMs}::bigint, attempts = o.attempts + 1
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
export const deleteClaimed = async (db: Queryable, row: ClaimedRow) => {
  await db
    .deleteFrom("akter.outbox")
    .where("routing_key", "=", row.routingKey)
    .where("kind", "=", row.kind)
    .where("id", "=", row.id)
    .where("due_at_ms", "=", row.claimedDueAtMs)
    .execute()
}

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
