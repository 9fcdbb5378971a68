/**
 * Every statement that touches `akter.steps`. A step row is `(execution, step, attempt)`; `exit` is
 * null while the step is pending. The engine's writes are parts of one fenced statement
 * (statementParts.ts): each runs only when the statement's `fence` found the owner at the held
 * generation, and each says which invariant it keeps.
 */
import { sql, type RawBuilder } from "kysely"
import type { Queryable, Row } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import { existsIn, part, type StatementPart } from "../storage/statementParts.js"
import {
  BIGINT,
  BYTEA,
  INT,
  rowsSource,
  TEXT,
  type InputColumn,
  type RowsWrite,
} from "../storage/rowsSource.js"
import { fenceHeld } from "../owners/fence.js"
import type { OwnerPlacement } from "../owners/routing.js"

/** A step row as a pass replays from it (its execution's key aside). */
export type StepRow = Omit<Row<"akter.steps">, "routing_key" | "execution_id">

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
  child_id: null,
  ...row,
})

export interface StepKey {
  readonly routingKey: string
  readonly executionId: string
  readonly step: string
  readonly attempt: number
}

const matchesStep = (key: StepKey) =>
  sql`routing_key = ${key.routingKey}::bigint AND execution_id = ${key.executionId}
    AND step = ${key.step} AND attempt = ${key.attempt}`

/** The columns of a step row a pass replays from (`StepRow`), in the order they are read. */
const REPLAYED_STEP_COLUMNS = [
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
  "child_id",
] as const

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
    SELECT s.execution_id, ${sql.join(REPLAYED_STEP_COLUMNS.map((column) => sql`s.${sql.id(column)}`))}
    FROM unnest(${routingKeys}::bigint[], ${executionIds}::text[]) AS k(routing_key, execution_id)
    JOIN akter.steps s ON s.routing_key = k.routing_key AND s.execution_id = k.execution_id
    ORDER BY s.execution_id, s.step, s.attempt`.execute(db)
  return rows
}

/**
 * The steps of the execution `execution_id` of `routing_key` (SQL expressions) as a json array, in
 * the order `readStepsOf` reads them, for a statement that reads them beside something else (the
 * claim, engine/executionStore.ts `claimedSnapshotColumn`); `stepsFromJson` decodes it.
 */
export const stepsJsonOf = (
  routingKey: RawBuilder<unknown>,
  executionId: RawBuilder<unknown>,
): RawBuilder<unknown> =>
  sql`COALESCE((SELECT json_agg(json_build_object(${sql.join(
    REPLAYED_STEP_COLUMNS.map(
      (column) =>
        sql`${column}::text, ${column === "exit" ? sql`encode(s.exit, 'base64')` : sql`s.${sql.id(column)}`}`,
    ),
  )}) ORDER BY s.step, s.attempt)
      FROM akter.steps s WHERE s.routing_key = ${routingKey} AND s.execution_id = ${executionId}),
    '[]'::json)`

/** The rows `stepsJsonOf` encoded: the exit back from base64. */
export const stepsFromJson = (steps: unknown): StepRow[] =>
  (steps as (Omit<StepRow, "exit"> & { readonly exit: string | null })[]).map(
    ({ exit, ...row }) => ({ ...row, exit: exit === null ? null : Buffer.from(exit, "base64") }),
  )

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
      WHERE ${existsIn(inserted)}`,
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
      WHERE ${fenceHeld}
      ON CONFLICT (routing_key, execution_id, step, attempt)
        DO UPDATE SET started_at_ms = akter.steps.started_at_ms
      RETURNING started_at_ms`,
  )

/**
 * The one statement that settles step attempts: each row of `source` (aliased `f`: `routing_key`,
 * `execution_id`, `settle_step`, `settle_attempt`, `exit`, `retry_at_ms`, `matched`) settles its
 * pending attempt. Exactly one writer settles a step: the update matches only while
 * `exit IS NULL`, and a writer that expected a row and got none stops. `retry_at_ms` records, on a
 * failed attempt, when the next attempt may start; `matched`, on a wait, the event it took.
 */
const settleFrom = (
  clock: DatabaseClock,
  source: RawBuilder<unknown>,
  when: RawBuilder<boolean>,
  returning: RawBuilder<unknown>,
) => sql`UPDATE akter.steps s
      SET exit = f.exit, settled_at_ms = ${nowMs(clock)},
        due_at_ms = COALESCE(f.retry_at_ms, s.due_at_ms), matched = f.matched
      FROM ${source} f
      WHERE s.routing_key = f.routing_key AND s.execution_id = f.execution_id
        AND s.step = f.settle_step AND s.attempt = f.settle_attempt AND s.exit IS NULL
        AND ${when}
      RETURNING ${returning}`

/**
 * Settles pending attempts of one execution under the statement's fence (see `settleFrom`): each
 * of `settles`, one part however many (a pass's held settles travel together). The statement
 * reports how many rows it settled, and a pass that expected one per settle and got fewer stops.
 */
export const settleStepsPart = (
  clock: DatabaseClock,
  execution: { readonly routingKey: string; readonly executionId: string },
  settles: readonly HeldSettle[],
  /** Settles only if this also holds (a timeout settles only if no unseen event exists). */
  when: RawBuilder<boolean> = sql`true`,
): StatementPart =>
  part("settle", () =>
    settleFrom(
      clock,
      sql`(SELECT ${execution.routingKey}::bigint AS routing_key,
        ${execution.executionId}::text AS execution_id, h.*
        FROM ${rowsSource(SETTLE_COLUMNS, settles, "h")})`,
      sql`${fenceHeld} AND ${when}`,
      sql`s.step`,
    ),
  )

/** The columns of a held settle, as `settleFrom` reads them. */
const SETTLE_COLUMNS: readonly InputColumn<HeldSettle>[] = [
  ["settle_step", TEXT, (settle) => settle.step],
  ["settle_attempt", INT, (settle) => settle.attempt],
  ["exit", BYTEA, (settle) => settle.exit],
  ["retry_at_ms", BIGINT, (settle) => settle.retryAtMs ?? null],
  ["matched", BIGINT, (settle) => settle.matched ?? null],
]

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
 * The batch's settles (engine/stepBatch.ts): each row of `fenced` with a held settle settles it, as
 * `settleFrom` does. Returns the settled rows' `n`.
 */
export const batchSettleSql = (clock: DatabaseClock): RawBuilder<unknown> =>
  sql`settled AS (${settleFrom(clock, sql`fenced`, sql`true`, sql`f.n`)})`

/**
 * The batch's begun activity attempts: as `beginActivityPart`, for each row of `fenced` that begins
 * one — only if its held settle matched (`settling`: the batch has a `settled` part), as when a
 * failed settle aborted its statement. Returns (`execution_id`, `started_at_ms`) the attempts'
 * recorded start times.
 */
export const batchBeginSql = (clock: DatabaseClock, settling: boolean): RawBuilder<unknown> =>
  sql`begun AS (
      INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, started_at_ms)
      SELECT f.routing_key, f.execution_id, f.begin_step, f.begin_attempt, 'activity', ${nowMs(clock)}
      FROM fenced f
      WHERE f.begin_step IS NOT NULL
        ${settling ? sql`AND (f.settle_step IS NULL OR f.n IN (SELECT n FROM settled))` : sql``}
      ON CONFLICT (routing_key, execution_id, step, attempt)
        DO UPDATE SET started_at_ms = akter.steps.started_at_ms
      RETURNING execution_id, started_at_ms
    )`

/**
 * The markers of the executions a batch's folded starts inserted (`inserted`): as
 * `insertMarkersPart`, each declared marker at its current value (`markers`, a JSON object per
 * input row).
 */
export const batchInsertMarkersSql = (clock: DatabaseClock): RawBuilder<unknown> =>
  sql`markers AS (
      INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, version, started_at_ms)
      SELECT i.routing_key, i.execution_id, m.name, 0, 'version', m.value::int, ${nowMs(clock)}
      FROM input i JOIN inserted s ON s.routing_key = i.routing_key AND s.execution_id = i.execution_id
        CROSS JOIN LATERAL jsonb_each_text(i.markers::jsonb) AS m(name, value)
      WHERE i.markers IS NOT NULL
      RETURNING 1
    )`

/** The batch's deletes of the steps of the executions its `finished` part finished. */
export const batchDeleteStepsSql = (): RawBuilder<unknown> =>
  sql`steps_deleted AS (
        DELETE FROM akter.steps s USING finished f
        WHERE s.routing_key = f.routing_key AND s.execution_id = f.execution_id
        RETURNING 1
      )`

/**
 * How long before its write a sleep may be dated as reached: the runner's estimate of the
 * database's clock is trusted this far back, and no further.
 */
export const SLEEP_REACHED_TOLERANCE_MS = 1_000

/**
 * Inserts a pending sleep with its due time, fixed here once: a replay reads it and never moves it.
 * The sleep runs from when the body reached it (`reachedAtMs`, the runner's estimate of the
 * database's clock then), not from when this write commits, which may be later under load: never
 * later than the database's now, nor more than `SLEEP_REACHED_TOLERANCE_MS` before it. Returns
 * (`due_at_ms`) the recorded due time.
 */
export const beginSleepPart = (
  clock: DatabaseClock,
  key: StepKey,
  durationMs: number,
  reachedAtMs?: number,
): StatementPart => {
  const reached =
    reachedAtMs === undefined
      ? nowMs(clock)
      : sql<number>`GREATEST(LEAST(${nowMs(clock)}, ${Math.round(reachedAtMs)}::bigint),
          ${nowMs(clock)} - ${SLEEP_REACHED_TOLERANCE_MS}::bigint)`
  return part(
    "sleep",
    () => sql`INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, due_at_ms,
        started_at_ms)
      SELECT ${key.routingKey}::bigint, ${key.executionId}, ${key.step}, ${key.attempt}, 'sleep',
        ${reached} + ${durationMs}::bigint, ${reached}
      WHERE ${fenceHeld}
      ON CONFLICT (routing_key, execution_id, step, attempt)
        DO UPDATE SET due_at_ms = akter.steps.due_at_ms
      RETURNING due_at_ms`,
  )
}

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
      WHERE ${fenceHeld}
      ON CONFLICT (routing_key, execution_id, step, attempt)
        DO UPDATE SET wait_after = akter.steps.wait_after
      RETURNING wait_after, due_at_ms`,
  )

/**
 * A step a pass records whole (attempt 1, with no pending attempt before it): a race's winner or
 * a start's execution id, settled the moment it is recorded (`exit`); or an awaiting start,
 * recorded pending (`exit` null) naming its child in the statement that stages the child's start
 * — the child exists exactly when the step is recorded, a replay awaits that child whatever the
 * body passes, and the step settles once, with the child's result (`settleStepsPart`,
 * `exit IS NULL`).
 */
export interface RecordedStep {
  readonly step: string
  readonly kind: "race" | "start"
  readonly exit: Buffer | null
  /** start: the execution it started. */
  readonly childId: string | null
}

const RECORDED_STEP_COLUMNS: readonly InputColumn<RecordedStep>[] = [
  ["step", TEXT, (row) => row.step],
  ["kind", TEXT, (row) => row.kind],
  ["exit", BYTEA, (row) => row.exit],
  ["child_id", TEXT, (row) => row.childId],
]

/**
 * Inserts the recorded steps a pass holds (`heldRow(recordedSteps, …)`), attempt 1, under the
 * statement's fence. A row recorded earlier keeps its exit and child.
 */
export const recordedSteps: RowsWrite<RecordedStep> = {
  part: (clock, execution, rows) =>
    part(
      "recorded",
      () => sql`INSERT INTO akter.steps (routing_key, execution_id, step, attempt, kind, exit,
          started_at_ms, settled_at_ms, child_id)
        SELECT ${execution.owner.routingKey}::bigint, ${execution.executionId}::text, r.step, 1,
          r.kind, r.exit, now.ms,
          CASE WHEN r.exit IS NULL THEN NULL ELSE now.ms END, r.child_id
        FROM ${rowsSource(RECORDED_STEP_COLUMNS, rows, "r")},
          (SELECT ${nowMs(clock)} AS ms) AS now
        WHERE ${fenceHeld}
        ON CONFLICT (routing_key, execution_id, step, attempt) DO NOTHING
        RETURNING step`,
    ),
}

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
        AND s.step = w.step AND s.attempt = 1 AND s.exit IS NULL AND ${fenceHeld}
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
        AND ${existsIn(finished)}
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

/**
 * An operator's "due now": the execution's pending due times move to now, never later — its
 * pending sleep ends, its pending wait times out, its failed activity's next attempt may start.
 * Settled steps keep theirs (`exit IS NULL`), and only when `when` holds (the execution open).
 */
export const pendingStepsDueNowPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  executionId: string,
  when: RawBuilder<boolean>,
): StatementPart =>
  part(
    "steps_due",
    () => sql`UPDATE akter.steps SET due_at_ms = ${nowMs(clock)}
      WHERE routing_key = ${owner.routingKey}::bigint AND execution_id = ${executionId}
        AND exit IS NULL AND due_at_ms > ${nowMs(clock)} AND ${when}
      RETURNING 1`,
  )
