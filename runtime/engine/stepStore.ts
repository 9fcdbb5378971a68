/**
 * Every statement that touches `akter.steps`. A step row is `(execution, step, attempt)`; `exit` is
 * null while the step is pending. The engine's writes are parts of one fenced statement
 * (statementParts.ts): each runs only when the statement's `fence` found the owner at the held
 * generation, and each says which invariant it keeps.
 */
import { sql, type RawBuilder } from "kysely"
import type { Queryable, StepKindColumn } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import { part, type StatementPart } from "../storage/statementParts.js"
import { FENCE } from "../owners/fence.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { FINISHED_CHANNEL } from "../outbox/wakeups.js"
import type { StatementBatcher } from "../storage/statementBatcher.js"

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

/**
 * The in-memory copy of a step row a pass recorded or is about to: what is given, every other
 * column empty as a fresh row has it.
 */
export const stepRow = (
  row: Pick<StepRow, "step" | "attempt" | "kind" | "started_at_ms"> & Partial<StepRow>,
): StepRow => ({
  exit: null,
  due_at_ms: null,
  wait_event: null,
  wait_after: null,
  scanned: null,
  matched: null,
  version: null,
  settled_at_ms: null,
  ...row,
})

export interface StepKey {
  readonly routingKey: string
  readonly executionId: string
  readonly step: string
  readonly attempt: number
}

const fenced = sql`EXISTS (SELECT 1 FROM ${sql.id(FENCE)})`

const matchesStep = (key: StepKey) =>
  sql`routing_key = ${key.routingKey}::bigint AND execution_id = ${key.executionId}
    AND step = ${key.step} AND attempt = ${key.attempt}`

/**
 * The steps of the given executions (`executionIds[i]` under `routingKeys[i]`), attempts ascending
 * within each step, each row naming its execution.
 */
export const readStepsOf = async (
  db: Queryable,
  routingKeys: readonly string[],
  executionIds: readonly string[],
): Promise<(StepRow & { readonly execution_id: string })[]> => {
  const { rows } = await sql<StepRow & { readonly execution_id: string }>`
    SELECT s.execution_id, s.step, s.attempt, s.kind, s.exit, s.due_at_ms, s.wait_event,
      s.wait_after, s.scanned, s.matched, s.version, s.started_at_ms, s.settled_at_ms
    FROM unnest(${routingKeys}::bigint[], ${executionIds}::text[]) AS k(routing_key, execution_id)
    JOIN akter.steps s ON s.routing_key = k.routing_key AND s.execution_id = k.execution_id
    ORDER BY s.execution_id, s.step, s.attempt`.execute(db)
  return rows
}

/**
 * Records each declared marker's current value once, with the start that inserted the execution
 * named `inserted` (attempt 0, kind `version`): an attaching start records nothing.
 */
export const insertMarkersPart = (
  clock: DatabaseClock,
  routingKey: string,
  executionId: string,
  markers: Readonly<Record<string, number>>,
  inserted: string,
): StatementPart => {
  const entries = Object.entries(markers)
  return part(
    "markers",
    () => sql`INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, version, started_at_ms)
      SELECT ${routingKey}::bigint, ${executionId}, m.name, 0, 'version', m.value, ${nowMs(clock)}
      FROM unnest(${entries.map(([name]) => name)}::text[], ${entries.map(([, value]) => value)}::int[])
        AS m(name, value)
      WHERE EXISTS (SELECT 1 FROM ${sql.id(inserted)})`,
  )
}

/**
 * Inserts the pending row of an activity attempt before it runs, so a rerun after a crash reuses
 * the attempt and the start time its idempotency key derives from. Returns (`started_at_ms`) the
 * attempt's recorded start time, whether this statement inserted the row or an earlier run did.
 */
export const beginActivityPart = (clock: DatabaseClock, key: StepKey): StatementPart =>
  part(
    "pending",
    () => sql`INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, started_at_ms)
      SELECT ${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, 'activity',
        ${nowMs(clock)}
      FROM ${sql.id(FENCE)}
      ON CONFLICT (routing_key, execution_id, step, attempt)
        DO UPDATE SET started_at_ms = akter.steps.started_at_ms
      RETURNING started_at_ms`,
  )

/**
 * Settles a pending step. Exactly one writer settles a step: the update matches only while
 * `exit IS NULL`; the statement reports how many rows it settled, and a pass that expected one and
 * got none stops. `retryAtMs` records, on a failed attempt, when the next attempt may start;
 * `matched`, on a wait, the event it took.
 */
export const settleStepPart = (
  clock: DatabaseClock,
  key: StepKey,
  exit: Buffer,
  options: {
    readonly retryAtMs?: number
    readonly matched?: number
    /** Settles only if this also holds (a timeout settles only if no unseen event exists). */
    readonly when?: RawBuilder<boolean>
  } = {},
): StatementPart =>
  part(
    "settle",
    () => sql`UPDATE akter.steps
      SET exit = ${exit}, settled_at_ms = ${nowMs(clock)},
        due_at_ms = ${options.retryAtMs === undefined ? sql`due_at_ms` : sql`${options.retryAtMs}::bigint`},
        matched = ${options.matched ?? null}::bigint
      WHERE ${matchesStep(key)} AND exit IS NULL AND ${fenced} AND ${options.when ?? sql`true`}
      RETURNING step`,
  )

/** A settle of one step attempt, held by a pass until its next write. */
export interface HeldSettle {
  readonly step: string
  readonly attempt: number
  readonly exit: Buffer
  /** A failed activity attempt with retries left: when the next attempt may start. */
  readonly retryAtMs?: number
  /** A wait: the sequence of the event it took. */
  readonly matched?: number
}

/**
 * One execution's part of a batch of step writes (`writeStepBatch`): under the generation the
 * runner holds, settle the attempt the pass held back and/or begin the next activity attempt, or
 * record the execution's result.
 */
export interface StepBatchWrite {
  readonly owner: OwnerPlacement
  readonly generation: number
  readonly executionId: string
  readonly settle?: HeldSettle
  readonly begin?: { readonly step: string; readonly attempt: number }
  /** The encoded result to record, with the steps and the timer deleted (nothing else then). */
  readonly finish?: Buffer
}

/** The runner's batcher of step writes (storage/statementBatcher.ts over `writeStepBatch`). */
export type StepBatcher = StatementBatcher<StepBatchWrite, StepBatchOutcome>

export interface StepBatchOutcome {
  /** The owner was at the held generation (locked for the statement); false: nothing written. */
  readonly fenced: boolean
  /** The held settle matched its pending attempt (true when there was none to settle). */
  readonly settled: boolean
  /** The begun attempt's recorded start time, if one was begun. */
  readonly startedAtMs: number | null
  /** The result was recorded (false: the execution had finished already, or no finish asked). */
  readonly finished: boolean
}

/**
 * Settles and begins activity attempts and records results of many executions in one statement —
 * one round trip and one commit for every pass that was waiting to write — with the guarantees of
 * the one-execution parts: each row writes only under its owner's held generation (the owners are
 * locked in one order, so two batches never deadlock); exactly one writer settles an attempt
 * (`exit IS NULL`); the next attempt is begun only if the held settle matched, as when a failed
 * settle aborted its statement; exactly one result is recorded (status not yet finished), with the
 * steps and the timer deleted and, where a caller elsewhere awaits it, a notification (`notify`:
 * Postgres). The text does not depend on the number of executions, so it is prepared once.
 */
export const writeStepBatch = async (
  db: Queryable,
  clock: DatabaseClock,
  writes: readonly StepBatchWrite[],
  notify: boolean,
): Promise<StepBatchOutcome[]> => {
  const column = <A>(pick: (write: StepBatchWrite) => A) => writes.map(pick)
  // Only the parts some row needs: at most seven statement shapes, each prepared once.
  const settling = writes.some((write) => write.settle !== undefined)
  const beginning = writes.some((write) => write.begin !== undefined)
  const finishing = writes.some((write) => write.finish !== undefined)
  const columns: (readonly [string, RawBuilder<unknown>])[] = [
    ["routing_key", sql`${column((w) => w.owner.routingKey)}::bigint[]`],
    ["tenant", sql`${column((w) => w.owner.tenant)}::text[]`],
    ["owner_type", sql`${column((w) => w.owner.ownerType)}::text[]`],
    ["owner_id", sql`${column((w) => w.owner.ownerId)}::text[]`],
    ["generation", sql`${column((w) => w.generation)}::bigint[]`],
    ["execution_id", sql`${column((w) => w.executionId)}::text[]`],
  ]
  if (settling) {
    columns.push(
      ["settle_step", sql`${column((w) => w.settle?.step ?? null)}::text[]`],
      ["settle_attempt", sql`${column((w) => w.settle?.attempt ?? null)}::int[]`],
      ["exit", sql`${column((w) => w.settle?.exit ?? null)}::bytea[]`],
      ["retry_at_ms", sql`${column((w) => w.settle?.retryAtMs ?? null)}::bigint[]`],
    )
  }
  if (beginning) {
    columns.push(
      ["begin_step", sql`${column((w) => w.begin?.step ?? null)}::text[]`],
      ["begin_attempt", sql`${column((w) => w.begin?.attempt ?? null)}::int[]`],
    )
  }
  if (finishing) columns.push(["result", sql`${column((w) => w.finish ?? null)}::bytea[]`])
  const parts = [
    sql`input AS (
      SELECT * FROM unnest(${sql.join(columns.map(([, array]) => array))})
        WITH ORDINALITY AS i(${sql.join(columns.map(([name]) => sql.id(name)))}, n)
    )`,
    sql`fence AS (
      SELECT o.routing_key, o.tenant, o.owner_type, o.owner_id, o.generation FROM akter.owners o
      WHERE (o.routing_key, o.tenant, o.owner_type, o.owner_id, o.generation) IN (
        SELECT routing_key, tenant, owner_type, owner_id, generation FROM input)
      ORDER BY o.routing_key, o.tenant, o.owner_type, o.owner_id
      FOR UPDATE
    )`,
    sql`fenced AS (
      SELECT i.* FROM input i JOIN fence f ON f.routing_key = i.routing_key
        AND f.tenant = i.tenant AND f.owner_type = i.owner_type AND f.owner_id = i.owner_id
        AND f.generation = i.generation
    )`,
  ]
  if (settling) {
    parts.push(sql`settled AS (
      UPDATE akter.steps s
      SET exit = f.exit, settled_at_ms = ${nowMs(clock)},
        due_at_ms = COALESCE(f.retry_at_ms, s.due_at_ms), matched = NULL
      FROM fenced f
      WHERE s.routing_key = f.routing_key AND s.execution_id = f.execution_id
        AND s.step = f.settle_step AND s.attempt = f.settle_attempt AND s.exit IS NULL
      RETURNING f.n
    )`)
  }
  if (beginning) {
    parts.push(sql`begun AS (
      INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, started_at_ms)
      SELECT f.routing_key, f.execution_id, f.begin_step, f.begin_attempt, 'activity', ${nowMs(clock)}
      FROM fenced f
      WHERE f.begin_step IS NOT NULL
        ${settling ? sql`AND (f.settle_step IS NULL OR f.n IN (SELECT n FROM settled))` : sql``}
      ON CONFLICT (routing_key, execution_id, step, attempt)
        DO UPDATE SET started_at_ms = akter.steps.started_at_ms
      RETURNING execution_id, started_at_ms
    )`)
  }
  if (finishing) {
    parts.push(
      sql`finished AS (
        UPDATE akter.executions e
        SET status = 'finished', result = f.result, finished_at_ms = ${nowMs(clock)}
        FROM fenced f
        WHERE f.result IS NOT NULL AND e.routing_key = f.routing_key
          AND e.execution_id = f.execution_id AND e.status <> 'finished'
        RETURNING f.n, e.routing_key, e.execution_id, e.awaited
      )`,
      sql`steps_deleted AS (
        DELETE FROM akter.steps s USING finished f
        WHERE s.routing_key = f.routing_key AND s.execution_id = f.execution_id
        RETURNING 1
      )`,
      sql`timer_deleted AS (
        DELETE FROM akter.outbox o USING finished f
        WHERE o.routing_key = f.routing_key AND o.kind = 'timer' AND o.id = f.execution_id
        RETURNING 1
      )`,
      sql`notified AS (
        SELECT pg_notify(${FINISHED_CHANNEL}, f.execution_id) FROM finished f
        WHERE f.awaited AND ${notify}::boolean
      )`,
    )
  }
  // A plain SELECT part runs only when referred to: this is what sends the notifications.
  const notifiedColumn = finishing ? sql`, (SELECT count(*) FROM notified) AS notified` : sql``
  const { rows } = await sql<{
    fenced: boolean
    settled: boolean
    started_at_ms: number | null
    finished: boolean
  }>`WITH ${sql.join(parts)}
    SELECT i.n IN (SELECT n FROM fenced) AS fenced,
      ${settling ? sql`i.settle_step IS NULL OR i.n IN (SELECT n FROM settled)` : sql`true`} AS settled,
      ${
        beginning
          ? sql`(SELECT b.started_at_ms FROM begun b WHERE b.execution_id = i.execution_id)`
          : sql`NULL::bigint`
      } AS started_at_ms,
      ${finishing ? sql`i.n IN (SELECT n FROM finished)` : sql`false`} AS finished${notifiedColumn}
    FROM input i ORDER BY i.n`.execute(db)
  return rows.map((row) => ({
    fenced: row.fenced,
    settled: row.settled,
    startedAtMs: row.started_at_ms === null ? null : Number(row.started_at_ms),
    finished: row.finished,
  }))
}

/**
 * Inserts a pending sleep with its due time, fixed here once: a replay reads it and never moves it.
 * Returns (`due_at_ms`) the recorded due time.
 */
export const beginSleepPart = (
  clock: DatabaseClock,
  key: StepKey,
  durationMs: number,
): StatementPart =>
  part(
    "sleep",
    () => sql`INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, due_at_ms,
        started_at_ms)
      SELECT ${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, 'sleep',
        ${nowMs(clock)} + ${durationMs}::bigint, ${nowMs(clock)}
      FROM ${sql.id(FENCE)}
      ON CONFLICT (routing_key, execution_id, step, attempt)
        DO UPDATE SET due_at_ms = akter.steps.due_at_ms
      RETURNING due_at_ms`,
  )

/**
 * Registers a pending wait: it sees the owner's events after `after` (the execution's cursor), and
 * from this commit on an emit of its event makes the execution due. Returns (`wait_after`,
 * `due_at_ms`) the recorded registration.
 */
export const beginWaitPart = (
  clock: DatabaseClock,
  key: StepKey,
  event: string,
  after: number,
  timeoutMs: number | null,
): StatementPart =>
  part(
    "wait",
    () => sql`INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, wait_event,
        wait_after, scanned, due_at_ms, started_at_ms)
      SELECT ${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, 'wait',
        ${event}, ${after}::bigint, ${after}::bigint,
        ${timeoutMs === null ? sql`NULL::bigint` : sql`${nowMs(clock)} + ${timeoutMs}::bigint`},
        ${nowMs(clock)}
      FROM ${sql.id(FENCE)}
      ON CONFLICT (routing_key, execution_id, step, attempt)
        DO UPDATE SET wait_after = akter.steps.wait_after
      RETURNING wait_after, due_at_ms`,
  )

/**
 * Inserts a step that is settled the moment it is recorded (a race's winner, a start's execution
 * id). A row recorded earlier keeps its exit.
 */
export const recordSettledPart = (
  clock: DatabaseClock,
  key: StepKey,
  kind: "race" | "start",
  exit: Buffer,
): StatementPart =>
  part(
    kind,
    () => sql`INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, exit,
        started_at_ms, settled_at_ms)
      SELECT ${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, ${kind},
        ${exit}, ${nowMs(clock)}, ${nowMs(clock)}
      FROM ${sql.id(FENCE)}
      ON CONFLICT (routing_key, execution_id, step, attempt) DO NOTHING
      RETURNING step`,
  )

/**
 * Remembers how far parked waits have evaluated the log (so a resume does not evaluate the same
 * events again); it only moves forward, and only on pending rows.
 */
export const recordScannedPart = (
  routingKey: string,
  executionId: string,
  scanned: readonly { readonly step: string; readonly scanned: number }[],
): StatementPart =>
  part(
    "scanned",
    () => sql`UPDATE akter.steps s SET scanned = GREATEST(s.scanned, w.scanned)
      FROM unnest(${scanned.map((w) => w.step)}::text[], ${scanned.map((w) => w.scanned)}::bigint[])
        AS w(step, scanned)
      WHERE s.routing_key = ${routingKey}::bigint AND s.execution_id = ${executionId}
        AND s.step = w.step AND s.attempt = 1 AND s.exit IS NULL AND ${fenced}
      RETURNING s.step`,
  )

/** A finished execution keeps no steps: they go in the statement that records the result. */
export const deleteStepsPart = (
  routingKey: string,
  executionId: string,
  finished: string,
): StatementPart =>
  part(
    "steps_deleted",
    () => sql`DELETE FROM akter.steps
      WHERE routing_key = ${routingKey}::bigint AND execution_id = ${executionId}
        AND EXISTS (SELECT 1 FROM ${sql.id(finished)})
      RETURNING step`,
  )

/**
 * Whether any of the given waits has an event in the owner's log beyond how far it evaluated: the
 * suspend of a pass checks this, so an event it has not seen keeps the execution due now.
 */
export const unseenEventsPart = (
  owner: OwnerPlacement,
  waits: readonly { readonly event: string; readonly scanned: number }[],
): StatementPart =>
  part(
    "unseen",
    () => sql`SELECT EXISTS (
        SELECT 1 FROM unnest(${waits.map((w) => w.event)}::text[], ${waits.map((w) => w.scanned)}::bigint[])
          AS w(event, scanned)
        JOIN akter.events ev
          ON ev.routing_key = ${owner.routingKey}::bigint AND ev.tenant = ${owner.tenant}
          AND ev.owner_type = ${owner.ownerType} AND ev.owner_id = ${owner.ownerId}
          AND ev.name = w.event AND ev.sequence > w.scanned
      ) AS seen`,
  )

/**
 * Executions of this owner with a pending wait for this event: the ones an emit must wake. Part of
 * a statement that runs after the emit locked the owner, so its snapshot includes every wait
 * registered before the lock.
 */
export const waitingForPart = (owner: OwnerPlacement, event: string): StatementPart =>
  part(
    "waiting",
    () => sql`SELECT DISTINCT s.execution_id FROM akter.steps s
      JOIN akter.executions e ON e.routing_key = s.routing_key AND e.execution_id = s.execution_id
      WHERE s.routing_key = ${owner.routingKey}::bigint AND s.kind = 'wait' AND s.exit IS NULL
        AND s.wait_event = ${event}
        AND e.tenant = ${owner.tenant} AND e.owner_type = ${owner.ownerType}
        AND e.owner_id = ${owner.ownerId} AND e.status <> 'finished'`,
  )
