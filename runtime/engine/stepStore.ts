/**
 * Every statement that touches `akter.steps`. Engine writers run inside a fenced transaction; each
 * says which invariant it keeps. A step row is `(execution, step, attempt)`; `exit` is null while the
 * step is pending.
 */
import { sql } from "kysely"
import type { Queryable, StepKindColumn, Tx } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import type { OwnerPlacement } from "../owners/routing.js"

export interface StepRow {
  readonly step: string
  readonly attempt: number
  readonly kind: StepKindColumn
  readonly exit: Buffer | null
  readonly due_at_ms: number | null
  readonly wait_event: string | null
  readonly wait_after: number | null
  readonly scanned: number | null
  readonly matched: number | null
  readonly version: number | null
  readonly started_at_ms: number
  readonly settled_at_ms: number | null
}

export interface StepKey {
  readonly routingKey: string
  readonly executionId: string
  readonly step: string
  readonly attempt: number
}

export const readSteps = async (
  db: Queryable,
  routingKey: string,
  executionId: string,
): Promise<StepRow[]> =>
  db
    .selectFrom("akter.steps")
    .select([
      "step",
      "attempt",
      "kind",
      "exit",
      "due_at_ms",
      "wait_event",
      "wait_after",
      "scanned",
      "matched",
      "version",
      "started_at_ms",
      "settled_at_ms",
    ])
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .orderBy("step")
    .orderBy("attempt")
    .execute()

/** Records each declared marker's current value once, at start (attempt 0, kind `version`). */
export const insertMarkers = async (
  tx: Tx,
  clock: DatabaseClock,
  routingKey: string,
  executionId: string,
  markers: Readonly<Record<string, number>>,
) => {
  const entries = Object.entries(markers)
  if (entries.length === 0) return
  await sql`
    INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, version, started_at_ms)
    SELECT ${routingKey}::bigint, ${executionId}, m.name, 0, 'version', m.value, ${nowMs(clock)}
    FROM unnest(${entries.map(([name]) => name)}::text[], ${entries.map(([, value]) => value)}::int[])
      AS m(name, value)`.execute(tx)
}

/**
 * Inserts the pending row of an activity attempt before it runs, so a rerun after a crash reuses
 * the attempt and the start time its idempotency key derives from. Returns the attempt's recorded
 * start time, whether this call inserted the row or an earlier run did.
 */
export const beginActivityAttempt = async (
  tx: Tx,
  clock: DatabaseClock,
  key: StepKey,
): Promise<number> => {
  const { rows } = await sql<{ started_at_ms: number }>`
    WITH inserted AS (
      INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, started_at_ms)
      VALUES (${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, 'activity',
        ${nowMs(clock)})
      ON CONFLICT (routing_key, execution_id, step, attempt) DO NOTHING
      RETURNING started_at_ms)
    SELECT started_at_ms FROM inserted
    UNION ALL
    SELECT started_at_ms FROM akter.steps
    WHERE routing_key = ${key.routingKey}::bigint AND execution_id = ${key.executionId}
      AND step = ${key.step} AND attempt = ${key.attempt}`.execute(tx)
  return rows[0]!.started_at_ms
}

export interface Settled {
  /** The exit now recorded: ours, or the one another writer recorded first. */
  readonly exit: Buffer
  readonly due_at_ms: number | null
  /** Whether this call's exit is the recorded one. */
  readonly won: boolean
}

/**
 * Settles a pending step. Exactly one writer settles a step: the update matches only while
 * `exit IS NULL`, and a loser reads the winner's exit instead of its own. `retryAtMs` records, on a
 * failed attempt, when the next attempt may start; `matched`, on a wait, the event it took.
 */
export const settleStep = async (
  tx: Tx,
  clock: DatabaseClock,
  key: StepKey,
  exit: Buffer,
  options: { readonly retryAtMs?: number; readonly matched?: number } = {},
): Promise<Settled> => {
  const retryAt =
    options.retryAtMs === undefined ? sql`due_at_ms` : sql`${options.retryAtMs}::bigint`
  const { rows } = await sql<{ exit: Buffer; due_at_ms: number | null }>`
    UPDATE akter.steps
    SET exit = ${exit}, settled_at_ms = ${nowMs(clock)}, due_at_ms = ${retryAt},
      matched = ${options.matched ?? null}::bigint
    WHERE routing_key = ${key.routingKey}::bigint AND execution_id = ${key.executionId}
      AND step = ${key.step} AND attempt = ${key.attempt} AND exit IS NULL
    RETURNING exit, due_at_ms`.execute(tx)
  const row = rows[0]
  if (row !== undefined) return { exit: row.exit, due_at_ms: row.due_at_ms, won: true }
  const existing = await tx
    .selectFrom("akter.steps")
    .select(["exit", "due_at_ms"])
    .where("routing_key", "=", key.routingKey)
    .where("execution_id", "=", key.executionId)
    .where("step", "=", key.step)
    .where("attempt", "=", key.attempt)
    .executeTakeFirst()
  if (existing?.exit == null) {
    throw new Error(
      `step ${key.step} attempt ${key.attempt} of ${key.executionId} has no row to settle`,
    )
  }
  return { exit: existing.exit, due_at_ms: existing.due_at_ms, won: false }
}

/**
 * Inserts a pending sleep with its due time, fixed here once: a replay reads it and never moves it.
 * Returns the recorded due time.
 */
export const beginSleep = async (
  tx: Tx,
  clock: DatabaseClock,
  key: StepKey,
  durationMs: number,
): Promise<number> => {
  const { rows } = await sql<{ due_at_ms: number }>`
    WITH inserted AS (
      INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, due_at_ms, started_at_ms)
      VALUES (${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, 'sleep',
        ${nowMs(clock)} + ${durationMs}::bigint, ${nowMs(clock)})
      ON CONFLICT (routing_key, execution_id, step, attempt) DO NOTHING
      RETURNING due_at_ms)
    SELECT due_at_ms FROM inserted
    UNION ALL
    SELECT due_at_ms FROM akter.steps
    WHERE routing_key = ${key.routingKey}::bigint AND execution_id = ${key.executionId}
      AND step = ${key.step} AND attempt = ${key.attempt}`.execute(tx)
  return rows[0]!.due_at_ms
}

export interface WaitRegistration {
  readonly event: string
  readonly after: number
  readonly dueAtMs: number | null
}

/**
 * Registers a pending wait: it sees the owner's events after `after` (the execution's cursor), and
 * an emit of its event re-arms the execution's timer. Returns the recorded registration.
 */
export const beginWait = async (
  tx: Tx,
  clock: DatabaseClock,
  key: StepKey,
  event: string,
  after: number,
  timeoutMs: number | null,
): Promise<WaitRegistration> => {
  const due = timeoutMs === null ? sql`NULL::bigint` : sql`${nowMs(clock)} + ${timeoutMs}::bigint`
  const { rows } = await sql<{ wait_event: string; wait_after: number; due_at_ms: number | null }>`
    WITH inserted AS (
      INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, wait_event,
        wait_after, scanned, due_at_ms, started_at_ms)
      VALUES (${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, 'wait',
        ${event}, ${after}::bigint, ${after}::bigint, ${due}, ${nowMs(clock)})
      ON CONFLICT (routing_key, execution_id, step, attempt) DO NOTHING
      RETURNING wait_event, wait_after, due_at_ms)
    SELECT wait_event, wait_after, due_at_ms FROM inserted
    UNION ALL
    SELECT wait_event, wait_after, due_at_ms FROM akter.steps
    WHERE routing_key = ${key.routingKey}::bigint AND execution_id = ${key.executionId}
      AND step = ${key.step} AND attempt = ${key.attempt}`.execute(tx)
  const row = rows[0]!
  return { event: row.wait_event, after: row.wait_after, dueAtMs: row.due_at_ms }
}

/** Remembers how far a pending wait has evaluated the log; it only moves forward. */
export const recordScanned = async (tx: Tx, key: StepKey, scanned: number) => {
  await sql`
    UPDATE akter.steps SET scanned = GREATEST(scanned, ${scanned}::bigint)
    WHERE routing_key = ${key.routingKey}::bigint AND execution_id = ${key.executionId}
      AND step = ${key.step} AND attempt = ${key.attempt} AND exit IS NULL`.execute(tx)
}

/**
 * Inserts a step that is settled the moment it is recorded (a race's winner, a start's execution
 * id). If a row exists already, the recorded exit stands and is returned.
 */
export const recordSettledStep = async (
  tx: Tx,
  clock: DatabaseClock,
  key: StepKey,
  kind: "race" | "start",
  exit: Buffer,
): Promise<Buffer> => {
  const { rows } = await sql<{ exit: Buffer }>`
    WITH inserted AS (
      INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, exit, started_at_ms,
        settled_at_ms)
      VALUES (${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, ${kind},
        ${exit}, ${nowMs(clock)}, ${nowMs(clock)})
      ON CONFLICT (routing_key, execution_id, step, attempt) DO UPDATE
        SET exit = COALESCE(akter.steps.exit, EXCLUDED.exit),
          settled_at_ms = COALESCE(akter.steps.settled_at_ms, EXCLUDED.settled_at_ms)
      RETURNING exit)
    SELECT exit FROM inserted`.execute(tx)
  return rows[0]!.exit
}

/** A finished execution keeps no steps: they go in the transaction that records the result. */
export const deleteSteps = async (tx: Tx, routingKey: string, executionId: string) => {
  await tx
    .deleteFrom("akter.steps")
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .execute()
}

/**
 * Executions of this owner with a pending wait for one of these events: the ones an emit must wake.
 */
export const executionsWaitingFor = async (
  tx: Tx,
  owner: OwnerPlacement,
  events: readonly string[],
): Promise<string[]> => {
  const { rows } = await sql<{ execution_id: string }>`
    SELECT DISTINCT s.execution_id FROM akter.steps s
    JOIN akter.executions e
      ON e.routing_key = s.routing_key AND e.execution_id = s.execution_id
    WHERE s.routing_key = ${owner.routingKey}::bigint AND s.kind = 'wait' AND s.exit IS NULL
      AND s.wait_event = ANY(${events}::text[])
      AND e.tenant = ${owner.tenant} AND e.owner_type = ${owner.ownerType}
      AND e.owner_id = ${owner.ownerId} AND e.status <> 'finished'`.execute(tx)
  return rows.map((row) => row.execution_id)
}

/**
 * Whether a pending wait of this execution has an event in the log it has not evaluated yet. Run
 * under the owner lock when suspending: an event committed while the run was suspending is either
 * seen here or sees the pending wait row, so no event is ever lost between the two.
 */
export const hasUnseenEvent = async (
  tx: Tx,
  owner: OwnerPlacement,
  executionId: string,
  steps: readonly string[],
): Promise<boolean> => {
  if (steps.length === 0) return false
  const { rows } = await sql<{ unseen: boolean }>`
    SELECT EXISTS (
      SELECT 1 FROM akter.steps s
      JOIN akter.events ev
        ON ev.routing_key = s.routing_key AND ev.tenant = ${owner.tenant}
        AND ev.owner_type = ${owner.ownerType} AND ev.owner_id = ${owner.ownerId}
        AND ev.name = s.wait_event AND ev.sequence > s.scanned
      WHERE s.routing_key = ${owner.routingKey}::bigint AND s.execution_id = ${executionId}
        AND s.kind = 'wait' AND s.exit IS NULL AND s.step = ANY(${steps}::text[])
    ) AS unseen`.execute(tx)
  return rows[0]?.unseen === true
}
