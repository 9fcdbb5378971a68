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
import { fenceHeld } from "../owners/fence.js"
import { BYTEA, rowsSource, TEXT, type InputColumn, type RowsWrite } from "../storage/rowsSource.js"

/** `"now"`, or a due time in epoch milliseconds of the database clock. */
export type Due = "now" | number

const dueSql = (clock: DatabaseClock, due: Due) =>
  due === "now" ? nowMs(clock) : sql<number>`${due}::bigint`

/**
 * Arms the execution's timer at `due`, replacing any earlier arming: an execution has at most one
 * timer. `when` conditions the arming on another part of the statement having matched. A `poke`
 * (an emit, an interrupt) counts itself on the timer; a suspend passes the count its pass loaded
 * (`pokesSeen`) and keeps the timer due if a poke came since, instead of moving it later: a resume
 * owed is never dropped.
 */
export const armTimerPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  executionId: string,
  due: Due | RawBuilder<number>,
  options: {
    readonly when: RawBuilder<boolean>
    readonly poke?: boolean
    readonly pokesSeen?: number
  },
): StatementPart =>
  part(
    "timer",
    () => sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
        due_at_ms, pokes)
      SELECT ${owner.routingKey}::bigint, 'timer', ${executionId}, ${owner.bucket}, ${owner.tenant},
        ${owner.ownerType}, ${owner.ownerId},
        ${typeof due === "object" ? due : dueSql(clock, due)}, ${options.poke === true ? 1 : 0}
      WHERE ${options.when}
      ON CONFLICT (routing_key, kind, id) DO UPDATE
        SET due_at_ms = ${
          options.pokesSeen === undefined
            ? sql`EXCLUDED.due_at_ms`
            : sql`CASE WHEN akter.outbox.pokes <> ${options.pokesSeen}::bigint
                THEN akter.outbox.due_at_ms ELSE EXCLUDED.due_at_ms END`
        },
        pokes = akter.outbox.pokes + ${options.poke === true ? 1 : 0},
        attempts = 0, wanted_hash = NULL
      RETURNING due_at_ms`,
  )

/**
 * The timers of the executions a batch's starts inserted (`inserted`): as `armTimerPart` for a
 * start. A folded start's (`folded`, engine/stepBatch.ts) is due a recovery interval ahead
 * (`recovery_ms`) when the batch took the row's owner (`fenced`), as a claim would have set it, or
 * due now when it did not, so a claim runs the execution; a client's (engine/startBatch.ts) is due
 * now.
 */
export const batchArmStartTimersSql = (
  clock: DatabaseClock,
  folded: boolean,
): RawBuilder<unknown> =>
  sql`start_timers AS (
      INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
        due_at_ms, pokes)
      SELECT i.routing_key, 'timer', i.execution_id, i.bucket, i.tenant, i.owner_type, i.owner_id,
        ${
          folded
            ? sql`CASE WHEN i.n IN (SELECT n FROM fenced) THEN ${nowMs(clock)} + i.recovery_ms
          ELSE ${nowMs(clock)} END`
            : nowMs(clock)
        }, 0
      FROM input i JOIN inserted s ON s.routing_key = i.routing_key AND s.execution_id = i.execution_id
      ON CONFLICT (routing_key, kind, id) DO UPDATE
        SET due_at_ms = EXCLUDED.due_at_ms, attempts = 0, wanted_hash = NULL
      RETURNING 1
    )`

/**
 * Pokes the timers of the executions a part of the statement selected (`execution_id`), due now: an
 * emit waking its waits. A suspend racing it keeps a poked timer due. Returns each poked timer's
 * execution, its count of pokes (a pass of this process waiting for it answers them, see
 * outbox/wakeups.ts `takePoked`) and whether it wants a manifest some other runner serves.
 */
export const pokeTimersPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  executions: string,
): StatementPart =>
  part(
    "poked",
    () => sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
        due_at_ms, pokes)
      SELECT ${owner.routingKey}::bigint, 'timer', execution_id, ${owner.bucket}, ${owner.tenant},
        ${owner.ownerType}, ${owner.ownerId}, ${nowMs(clock)}, 1
      FROM ${sql.id(executions)}
      ON CONFLICT (routing_key, kind, id) DO UPDATE
        SET due_at_ms = EXCLUDED.due_at_ms, pokes = akter.outbox.pokes + 1, attempts = 0
      RETURNING id, pokes, wanted_hash IS NOT NULL AS wanted`,
  )

/**
 * Arms, due now, the timers of the executions a part of the statement admitted from their
 * concurrency group's queue (`admitted`: their keys and placement). A queued execution has no
 * timer, so none is replaced; its first claim comes from this one.
 */
export const armAdmittedTimersPart = (clock: DatabaseClock, admitted: string): StatementPart =>
  part(
    "admitted_timer",
    () => sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
        due_at_ms)
      SELECT routing_key, 'timer', execution_id, bucket, tenant, owner_type, owner_id,
        ${nowMs(clock)}
      FROM ${sql.id(admitted)}
      ON CONFLICT (routing_key, kind, id) DO UPDATE
        SET due_at_ms = EXCLUDED.due_at_ms, attempts = 0, wanted_hash = NULL
      RETURNING bucket`,
  )

/**
 * Pokes the timers of the executions of another part (`routing_key`, `execution_id` and the owner's
 * placement, possibly of several owners), due now: a child's finish waking its awaiting parent, a
 * parent's end waking the children it interrupts. A suspend racing it keeps a poked timer due.
 * Returns each poked timer's bucket.
 */
export const pokePlacedTimersPart = (clock: DatabaseClock, executions: string): StatementPart =>
  part("poked", () => pokePlacedTimersSql(clock, executions))

const pokePlacedTimersSql = (clock: DatabaseClock, executions: string) =>
  sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
        due_at_ms, pokes)
      SELECT routing_key, 'timer', execution_id, bucket, tenant, owner_type, owner_id,
        ${nowMs(clock)}, 1
      FROM ${sql.id(executions)}
      ON CONFLICT (routing_key, kind, id) DO UPDATE
        SET due_at_ms = EXCLUDED.due_at_ms, pokes = akter.outbox.pokes + 1, attempts = 0
      RETURNING routing_key, id, bucket, wanted_hash IS NOT NULL AS wanted`

/**
 * The step batch's pokes of the awaiting parents its finishes found (engine/stepBatch.ts): as
 * `pokePlacedTimersPart`, a CTE named `name` over the one named `parents` (each parent once).
 */
export const pokeParentsSql = (
  clock: DatabaseClock,
  parents: string,
  name: string,
): RawBuilder<unknown> => sql`${sql.id(name)} AS (${pokePlacedTimersSql(clock, parents)})`

/**
 * Deletes the execution's timer when `when` holds. Given `pokesSeen` (a suspend with nothing to
 * wait for but events), it leaves a timer poked since in place: the poke is a resume owed.
 */
export const deleteTimerPart = (
  routingKey: string,
  executionId: string,
  options: { readonly when: RawBuilder<boolean>; readonly pokesSeen?: number },
): StatementPart =>
  part(
    "timer_deleted",
    () => sql`DELETE FROM akter.outbox
      WHERE routing_key = ${routingKey}::bigint AND kind = 'timer' AND id = ${executionId}
        AND ${options.pokesSeen === undefined ? sql`true` : sql`pokes = ${options.pokesSeen}::bigint`}
        AND ${options.when}
      RETURNING id`,
  )

/** The batch's deletes of the timers of the executions its `finished` part finished. */
export const batchDeleteTimersSql = (): RawBuilder<unknown> =>
  sql`timer_deleted AS (
        DELETE FROM akter.outbox o USING finished f
        WHERE o.routing_key = f.routing_key AND o.kind = 'timer' AND o.id = f.execution_id
        RETURNING 1
      )`

/** A start a `start` step stages: the started execution's id and the start's payload. */
export interface StagedStart {
  readonly executionId: string
  readonly payload: Buffer
}

const STAGED_START_COLUMNS: readonly InputColumn<StagedStart>[] = [
  ["id", TEXT, (row) => row.executionId],
  ["payload", BYTEA, (row) => row.payload],
]

/**
 * Stages the starts of other workflows (`heldRow(stagedStarts, …)`) under the statement's fence,
 * in the statement that records their start steps, so a started execution exists exactly when its
 * step is recorded (the relay creates it, idempotently by its id). Each row is due now, under the
 * staging execution's owner (the relay's claim is its bucket's).
 */
export const stagedStarts: RowsWrite<StagedStart> = {
  part: (clock, { owner }, rows) =>
    part(
      "staged",
      () => sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type,
          owner_id, due_at_ms, payload)
        SELECT ${owner.routingKey}::bigint, 'start', r.id, ${owner.bucket}::int, ${owner.tenant}::text,
          ${owner.ownerType}::text, ${owner.ownerId}::text, now.ms, r.payload
        FROM ${rowsSource(STAGED_START_COLUMNS, rows, "r")}, (SELECT ${nowMs(clock)} AS ms) AS now
        WHERE ${fenceHeld}
        ON CONFLICT (routing_key, kind, id) DO NOTHING
        RETURNING id`,
    ),
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
  /** The timer asks for a runner of a particular manifest (its bucket's runner could not replay it). */
  readonly wanted: boolean
  /** How long past its due time the row was claimed, by the database clock. */
  readonly lagMs: number
  /** The row's pokes when claimed: every emit or interrupt that poked it before is committed. */
  readonly pokes: number
  /**
   * The claim's `ClaimAttachment`, when the claimer asked for one and the row did not change between
   * the statement's snapshot and its claim.
   */
  readonly attached?: unknown
}

/**
 * A column the claim statement also returns for each row it claimed, as `ClaimedRow.attached`: it
 * may refer to the claimed row as `c` (`c.routing_key`, `c.kind`, `c.id`), must not be null, and
 * reads the statement's snapshot, as of before the claim. A runner reads what a pass replays from
 * this way, in the claim's round trip (engine/executionStore.ts `claimedSnapshotColumn`). The
 * snapshot is taken when the statement starts and the row is locked later: a commit in between
 * that changed the row (a suspend that kept it due, an emit's poke) may have written what the
 * snapshot misses, so for such a row nothing is attached, and the claimer reads afresh.
 */
export type ClaimAttachment = RawBuilder<unknown>

/**
 * The parts (`now`, `due`, `claimed`) that claim up to `limit` due rows that `which` selects (a
 * condition on `o`, the outbox row) and move each `recoveryMs` ahead: no other runner sees a
 * claimed row until the claim lapses, and a row another claim holds is skipped rather than waited
 * for. `after`, when given, holds once every other part of the statement has run (engine/
 * stepBatch.ts, where a claim rides a batch of step writes): the claim then takes its locks last,
 * so the statement never waits for a lock while holding rows it claimed, and a row another part
 * changed is skipped (Postgres skips a row the same statement changed when it locks it).
 */
export const claimDueParts = (
  clock: DatabaseClock,
  which: RawBuilder<boolean>,
  limit: number | RawBuilder<number>,
  recoveryMs: number | RawBuilder<number>,
  after?: RawBuilder<boolean>,
): RawBuilder<unknown> =>
  // The due bound is a scalar subquery, not a join with `now`: as a parameter of the plan it is an
  // index condition (outbox_due is bucket, due_at_ms), so a claim reads the due rows of its buckets
  // and none of the timers due later (sleeps, deadlines, retries, recovery intervals), however
  // many there are. Joined, it was a filter over every row of the buckets.
  sql`now AS (SELECT ${nowMs(clock)} AS ms),
    due AS (
      SELECT o.routing_key, o.kind, o.id, (SELECT ms FROM now) - o.due_at_ms AS lag_ms,
        o.xmin AS locked_xmin
      FROM akter.outbox o
      WHERE o.due_at_ms <= (SELECT ms FROM now) AND ${which}${after === undefined ? sql`` : sql` AND ${after}`}
      ORDER BY o.due_at_ms
      LIMIT ${limit}
      FOR UPDATE OF o SKIP LOCKED),
    claimed AS (
      UPDATE akter.outbox o
      SET due_at_ms = (SELECT ms FROM now) + ${recoveryMs}::bigint, attempts = o.attempts + 1
      FROM due
      WHERE o.routing_key = due.routing_key AND o.kind = due.kind AND o.id = due.id
      RETURNING o.routing_key, o.kind, o.id, o.bucket, o.tenant, o.owner_type, o.owner_id,
        o.due_at_ms, o.attempts, o.payload, o.wanted_hash, due.lag_ms, o.pokes, due.locked_xmin)`

/**
 * The due rows of the buckets a runner leases that want no particular manifest, and the rows
 * wanting a manifest it serves (`served`, compatibility hashes), as a claim's `which`.
 */
export const claimableSql = (
  buckets: readonly number[] | RawBuilder<unknown>,
  served: readonly string[] | RawBuilder<unknown>,
): RawBuilder<boolean> => sql<boolean>`((o.bucket = ANY(${buckets}::int[]) AND o.wanted_hash IS NULL)
          OR o.wanted_hash = ANY(${served}::text[]))`

/** `attach` for a claimed row `c`, when the row did not change between snapshot and claim. */
const attachedSql = (attach: ClaimAttachment) =>
  sql`CASE WHEN c.locked_xmin = (SELECT s.xmin FROM akter.outbox s
        WHERE s.routing_key = c.routing_key AND s.kind = c.kind AND s.id = c.id)
      THEN ${attach} END`

/** What a claim returns of a claimed row `c`, by name; the payload is added by each form. */
const claimedColumns = (attach: ClaimAttachment | undefined): [string, RawBuilder<unknown>][] => [
  ["routing_key", sql`c.routing_key::text`],
  ["kind", sql`c.kind`],
  ["id", sql`c.id`],
  ["bucket", sql`c.bucket`],
  ["tenant", sql`c.tenant`],
  ["owner_type", sql`c.owner_type`],
  ["owner_id", sql`c.owner_id`],
  ["due_at_ms", sql`c.due_at_ms`],
  ["attempts", sql`c.attempts`],
  ["wanted_hash", sql`c.wanted_hash`],
  ["lag_ms", sql`c.lag_ms`],
  ["pokes", sql`c.pokes`],
  ...(attach === undefined
    ? []
    : [["attached", attachedSql(attach)] as [string, RawBuilder<unknown>]]),
]

/** The claimed rows as a statement's result rows (`claimedRowOf` reads each). */
const claimedRowsSql = (attach: ClaimAttachment | undefined): RawBuilder<unknown> =>
  sql`SELECT ${sql.join(
    claimedColumns(attach).map(([name, value]) => sql`${value} AS ${sql.id(name)}`),
  )}, c.payload FROM claimed c`

/**
 * The claimed rows as one JSON array (null when none), for a statement whose rows answer
 * something else (engine/stepBatch.ts); `claimedRowOf` reads each element. The payload is base64.
 */
export const claimedJsonSql = (attach: ClaimAttachment | undefined): RawBuilder<unknown> =>
  sql`(SELECT json_agg(json_build_object(${sql.join(
    claimedColumns(attach).map(([name, value]) => sql`${name}::text, ${value}`),
  )}, 'payload', encode(c.payload, 'base64'))) FROM claimed c)`

/** A claimed row as `claimedRowsSql` or an element of `claimedJsonSql` has it. */
export const claimedRowOf = (row: Record<string, unknown>): ClaimedRow => {
  const payload = row["payload"] as Buffer | string | null
  return {
    routingKey: row["routing_key"] as string,
    kind: row["kind"] as OutboxKind,
    id: row["id"] as string,
    bucket: Number(row["bucket"]),
    tenant: row["tenant"] as string,
    ownerType: row["owner_type"] as string,
    ownerId: row["owner_id"] as string,
    claimedDueAtMs: Number(row["due_at_ms"]),
    attempts: Number(row["attempts"]),
    payload: typeof payload === "string" ? Buffer.from(payload, "base64") : payload,
    wanted: row["wanted_hash"] !== null,
    lagMs: Number(row["lag_ms"]),
    pokes: Number(row["pokes"]),
    ...(row["attached"] === null || row["attached"] === undefined
      ? {}
      : { attached: row["attached"] }),
  }
}

/** Claims, in a statement of its own, what `claimDueParts` claims. */
const claimDueWhere = async (
  db: Queryable,
  clock: DatabaseClock,
  which: RawBuilder<boolean>,
  limit: number,
  recoveryMs: number,
  attach: ClaimAttachment | undefined,
): Promise<ClaimedRow[]> => {
  const { rows } = await sql<Record<string, unknown>>`
    WITH ${claimDueParts(clock, which, limit, recoveryMs)}
    ${claimedRowsSql(attach)}`.execute(db)
  return rows.map(claimedRowOf)
}

/**
 * Claims up to `limit` due rows of the given buckets and moves each `recoveryMs` ahead, in one
 * statement: no other runner sees a claimed row until the claim lapses.
 */
export const claimDue = async (
  db: Queryable,
  clock: DatabaseClock,
  buckets: readonly number[],
  /** Manifests (compatibility hashes) the claimer serves: it also takes timers wanting one of them. */
  served: readonly string[],
  limit: number,
  recoveryMs: number,
  attach?: ClaimAttachment,
): Promise<ClaimedRow[]> => {
  if ((buckets.length === 0 && served.length === 0) || limit <= 0) return []
  return claimDueWhere(db, clock, claimableSql(buckets, served), limit, recoveryMs, attach)
}

/**
 * The claim of `claimDue` for named timers only: those of `timers` that are due now, in one of the
 * given buckets and wanting no other manifest. A runner claims so the timers it armed itself and
 * kept in memory (runner/localTimers.ts); a timer claimed or re-armed since is not due, and is
 * not returned.
 */
export const claimDueTimers = async (
  db: Queryable,
  clock: DatabaseClock,
  timers: readonly { readonly routingKey: string; readonly executionId: string }[],
  buckets: readonly number[],
  recoveryMs: number,
  attach?: ClaimAttachment,
): Promise<ClaimedRow[]> => {
  if (timers.length === 0 || buckets.length === 0) return []
  return claimDueWhere(
    db,
    clock,
    sql<boolean>`((o.bucket = ANY(${buckets}::int[]) AND o.wanted_hash IS NULL)
        AND o.kind = 'timer' AND (o.routing_key, o.id) IN (
          SELECT * FROM unnest(${timers.map((t) => t.routingKey)}::bigint[],
            ${timers.map((t) => t.executionId)}::text[])))`,
    timers.length,
    recoveryMs,
    attach,
  )
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

/**
 * The earliest due time among the given buckets' rows that fall due within `horizonMs` (or are
 * overdue), to sleep until then; null when none does. A runner polls again after its fallback
 * interval anyway and looks again then, so it passes that interval: a later timer is found by a
 * later look, and this one reads only the rows due before it (the bound is an index condition of
 * outbox_due, as in the claim), not every timer its buckets hold. A timer wanting another
 * manifest's runner is not this runner's to wake.
 */
export const nextDue = async (
  db: Queryable,
  clock: DatabaseClock,
  buckets: readonly number[],
  horizonMs: number,
): Promise<number | null> => {
  if (buckets.length === 0) return null
  const { rows } = await sql<{ due: number | null }>`
    SELECT min(o.due_at_ms) AS due FROM akter.outbox o
    WHERE o.bucket = ANY(${buckets}::int[])
      AND o.due_at_ms <= (SELECT ${nowMs(clock)} + ${horizonMs}::bigint)
      AND o.wanted_hash IS NULL`.execute(db)
  return rows[0]?.due ?? null
}

/**
 * Marks an execution's timer as wanting a runner of `manifestHash`, due now: its bucket's runner
 * cannot replay it and stops claiming it, and a runner serving that manifest takes it wherever it
 * is. A hint, not a fenced write — whoever claims the timer judges the execution again — and the
 * next pass that re-arms the timer clears it.
 */
export const markWanted = async (
  db: Queryable,
  clock: DatabaseClock,
  routingKey: string,
  executionId: string,
  manifestHash: string,
): Promise<void> => {
  await db
    .updateTable("akter.outbox")
    .set({ wanted_hash: manifestHash, due_at_ms: nowMs(clock) })
    .where("routing_key", "=", routingKey)
    .where("kind", "=", "timer")
    .where("id", "=", executionId)
    .execute()
}

/**
 * Makes the timers of executions a draining runner abandoned due now, so the runner that takes the
 * buckets resumes them at once rather than after the recovery interval its claims set.
 */
export const makeDueNow = async (
  db: Queryable,
  clock: DatabaseClock,
  timers: readonly { readonly routingKey: string; readonly executionId: string }[],
): Promise<void> => {
  if (timers.length === 0) return
  await sql`
    UPDATE akter.outbox o SET due_at_ms = ${nowMs(clock)}
    FROM unnest(${timers.map((t) => t.routingKey)}::bigint[], ${timers.map((t) => t.executionId)}::text[])
      AS t(routing_key, id)
    WHERE o.routing_key = t.routing_key AND o.kind = 'timer' AND o.id = t.id`.execute(db)
}

/**
 * Retention: deletes the timers of the executions a part of the statement selected for deletion
 * (`executions`: routing_key, execution_id). A finish deletes its timer itself; this covers a timer
 * a crash left beside a finished execution, so no timer outlives its execution.
 */
export const deleteTimersOfPart = (executions: string): StatementPart =>
  part(
    "timers_deleted",
    () => sql`DELETE FROM akter.outbox o USING ${sql.id(executions)} x
      WHERE o.routing_key = x.routing_key AND o.kind = 'timer' AND o.id = x.execution_id
      RETURNING 1`,
  )

/**
 * An operator's "due now": moves the execution's timer due now (never later) and pokes it, so that
 * a pass suspending at this moment keeps it due rather than move it later — the rule every emit and
 * interrupt follows. Only an existing timer moves, and only when `when` holds (the execution open).
 */
export const pokeTimerDueNowPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  executionId: string,
  when: RawBuilder<boolean>,
): StatementPart =>
  part(
    "timer_due",
    () => sql`UPDATE akter.outbox SET due_at_ms = LEAST(due_at_ms, ${nowMs(clock)}), pokes = pokes + 1
      WHERE routing_key = ${owner.routingKey}::bigint AND kind = 'timer' AND id = ${executionId}
        AND ${when}
      RETURNING 1`,
  )
