/**
 * The batched statement of step writes: the like writes of a runner's concurrent passes — a start
 * folded into a pass's first write, a held settle, the next activity's pending row, a result — sent
 * as one statement, one round trip and one commit (storage/statementBatcher.ts gathers them); and
 * the runner's claim of due work, which rides that statement when one goes (or goes alone). This
 * module only composes: each part's SQL is its table's store's (owners/fence.ts, stepStore.ts,
 * executionStore.ts, outbox/outboxStore.ts, outbox/notifications.ts), and reads the rows `input`
 * and `fenced` name.
 */
import { sql } from "kysely"
import { batchCreateOwnersSql, batchFenceSql } from "../owners/fence.js"
import type { OwnerPlacement } from "../owners/routing.js"
import {
  batchArmStartTimersSql,
  batchDeleteTimersSql,
  claimableSql,
  claimDue,
  claimDueParts,
  claimedJsonSql,
  claimedRowOf,
  pokeParentsSql,
  type ClaimedRow,
} from "../outbox/outboxStore.js"
import {
  FINISHED_CHANNEL,
  finishedPayloadOfRow,
  notification,
  WAKE_CHANNEL,
  wakePayloadOfRow,
} from "../outbox/notifications.js"
import type { DatabaseClock } from "../storage/clock.js"
import { ShapedStatements, Slot, slotClock } from "../storage/shapedStatement.js"
import type { ExecutionOutcome, Queryable } from "../storage/database.js"
import type { StatementBatcher } from "../storage/statementBatcher.js"
import { batchInputShapeSql, hasMarkers, ownerColumns, startColumns } from "./batchInput.js"
import { BIGINT, BYTEA, columnValues, INT, TEXT, type InputColumn } from "../storage/rowsSource.js"
import { batchRecordStartManifestsSql } from "../storage/manifestStore.js"
import {
  batchAwaitingParentsSql,
  batchFinishSql,
  batchInsertExecutionsSql,
  claimedSnapshotColumn,
  type BatchableStart,
} from "./executionStore.js"
import {
  batchBeginSql,
  batchDeleteStepsSql,
  batchInsertMarkersSql,
  batchSettleSql,
  type HeldSettle,
} from "./stepStore.js"

/**
 * One execution's part of a batch of step writes (`writeStepBatch`): under the generation the
 * runner holds, settle the attempt the pass held back and/or begin the next activity attempt, or
 * record the execution's result.
 */
export interface StepBatchWrite {
  readonly owner: OwnerPlacement
  /** The generation the runner holds; null: this write takes the owner (advances it). */
  readonly generation: number | null
  readonly executionId: string
  /**
   * A start this write commits (a runner of this process took it before it existed): the row
   * creates the owner if new, inserts the execution with its markers, manifest and timer, and
   * writes the rest only if it inserted the execution and holds or takes its owner.
   */
  readonly start?: BatchableStart
  readonly settle?: HeldSettle
  readonly begin?: { readonly step: string; readonly attempt: number }
  /** The encoded result to record, with the steps and the timer deleted (nothing else then). */
  readonly finish?: Buffer
  /** How that result ends the execution, recorded beside it (migration 0006). */
  readonly outcome?: ExecutionOutcome
}

/**
 * The runner's claim of due work (runner/claimLoop.ts): due rows of its leased `buckets` and rows
 * wanting a manifest it `serves`, for up to `limit()` passes — read when the statement is composed,
 * since a claim that waits for a statement in flight may find slots freed by then.
 */
export interface StepBatchClaim {
  readonly buckets: readonly number[]
  readonly served: readonly string[]
  readonly recoveryMs: number
  readonly limit: () => number
}

/** What a claim took: the rows, and the limit it claimed under (full: more may be due). */
export interface ClaimAnswer {
  readonly claimed: readonly ClaimedRow[]
  readonly limit: number
}

/** A request to the runner's step batcher: a pass's write, or the claim loop's claim. */
export type StepBatchRequest = StepBatchWrite | { readonly claim: StepBatchClaim }
export type StepBatchAnswer = StepBatchOutcome | ClaimAnswer

/** The runner's batcher of step writes and claims (storage/statementBatcher.ts over `stepBatchStatement`). */
export type StepBatcher = StatementBatcher<StepBatchRequest, StepBatchAnswer>

/** Sends a pass's write; resolves once its statement committed. */
export const submitWrite = (
  batcher: StepBatcher,
  write: StepBatchWrite,
): Promise<StepBatchOutcome> => batcher.submit(write) as Promise<StepBatchOutcome>

/** Claims due work with the next statement the batcher sends, or alone if none is waiting. */
export const submitClaim = (batcher: StepBatcher, claim: StepBatchClaim): Promise<ClaimAnswer> =>
  batcher.submit({ claim }) as Promise<ClaimAnswer>

export interface StepBatchOutcome {
  /**
   * The owner was at the held generation, or this write took it (locked for the statement); false:
   * nothing written.
   */
  readonly fenced: boolean
  /** The generation the row wrote under: the one held, or the one it took (null: not fenced). */
  readonly generation: number | null
  /** The held settle matched its pending attempt (true when there was none to settle). */
  readonly settled: boolean
  /** The begun attempt's recorded start time, if one was begun. */
  readonly startedAtMs: number | null
  /** The result was recorded (false: the execution had finished already, or no finish asked). */
  readonly finished: boolean
  /** The bucket of the awaiting parent whose timer the finish poked (null: none). */
  readonly parentBucket: number | null
  /** What came of the row's start, when it carried one. */
  readonly start?: StartedRow
}

export interface StartedRow {
  /** The start inserted its execution (false: it existed, and the start attached). */
  readonly created: boolean
  /** The event cursor and deadline the start recorded (null: it attached). */
  readonly eventCursor: number | null
  readonly deadlineAtMs: number | null
}

const numberOrNull = (value: unknown): number | null =>
  value === null || value === undefined ? null : Number(value)

/**
 * Which parts a step batch carries: a bit for each kind of write some row has, one for a lone row,
 * and one for a claim riding it.
 */
const SETTLING = 1
const BEGINNING = 2
const FINISHING = 4
const STARTING = 8
const MARKING = 16
const LONE = 32
const CLAIMING = 64
/** Every shape bit, for tests that go through the shapes (a start's markers need a start). */
export const STEP_BATCH_PARTS = {
  SETTLING,
  BEGINNING,
  FINISHING,
  STARTING,
  MARKING,
  LONE,
  CLAIMING,
} as const

const has = (shape: number, part: number) => (shape & part) !== 0

const stepBatchShape = (writes: readonly StepBatchWrite[], claiming: boolean): number => {
  let shape = (writes.length === 1 ? LONE : 0) | (claiming ? CLAIMING : 0)
  for (const write of writes) {
    if (write.settle !== undefined) shape |= SETTLING
    if (write.begin !== undefined) shape |= BEGINNING
    if (write.finish !== undefined) shape |= FINISHING
    if (write.start !== undefined) shape |= STARTING
    if (hasMarkers(write.start)) shape |= MARKING
  }
  return shape
}

/** The input's columns of a shape (only the parts some row needs); picks read `writes`. */
const stepBatchColumns = (
  shape: number,
  writes: readonly StepBatchWrite[],
): InputColumn<StepBatchWrite>[] => {
  const columns: InputColumn<StepBatchWrite>[] = [
    ...ownerColumns<StepBatchWrite>(),
    ["generation", BIGINT, (w) => w.generation],
    ["execution_id", TEXT, (w) => w.executionId],
  ]
  if (has(shape, STARTING)) {
    columns.push(...startColumns(writes, (w) => w.start, has(shape, MARKING)), [
      "recovery_ms",
      BIGINT,
      (w) => w.start?.recoveryMs ?? null,
    ])
  }
  if (has(shape, SETTLING)) {
    columns.push(
      ["settle_step", TEXT, (w) => w.settle?.step ?? null],
      ["settle_attempt", INT, (w) => w.settle?.attempt ?? null],
      ["exit", BYTEA, (w) => w.settle?.exit ?? null],
      ["retry_at_ms", BIGINT, (w) => w.settle?.retryAtMs ?? null],
      ["matched", BIGINT, (w) => w.settle?.matched ?? null],
    )
  }
  if (has(shape, BEGINNING)) {
    columns.push(
      ["begin_step", TEXT, (w) => w.begin?.step ?? null],
      ["begin_attempt", INT, (w) => w.begin?.attempt ?? null],
    )
  }
  if (has(shape, FINISHING)) {
    columns.push(
      ["result", BYTEA, (w) => w.finish ?? null],
      ["outcome", TEXT, (w) => w.outcome ?? null],
    )
  }
  return columns
}

/** The slots of a step batch: the clock's offset, whether to notify, then the input's columns. */
const OFFSET_SLOT = 0
const NOTIFY_SLOT = 1
const FIRST_INPUT_SLOT = 2

interface StepBatchRow {
  fenced: boolean
  generation: number | null
  settled: boolean
  started_at_ms: number | null
  finished: boolean
  parent_bucket?: number | null
  event_cursor?: number | null
  deadline_at_ms?: number | null
  created?: boolean
  claimed_rows?: Record<string, unknown>[] | null
}

/** The statement of a shape, with slots for its values (storage/shapedStatement.ts). */
export const composeStepBatch = (shape: number) => {
  const clock = slotClock(OFFSET_SLOT)
  const notify = new Slot(NOTIFY_SLOT)
  const settling = has(shape, SETTLING)
  const beginning = has(shape, BEGINNING)
  const finishing = has(shape, FINISHING)
  const columns = stepBatchColumns(shape, [])
  const input = batchInputShapeSql(columns, has(shape, LONE), FIRST_INPUT_SLOT)
  /** The parts that write or lock (or read those that do): a riding claim runs after them all. */
  const ran = ["locked", "advanced", "fence", "fenced"]
  // A start's execution is inserted whether or not the fence holds (a start that finds its owner
  // taken commits with its timer due now); the fence then needs `inserted` and `owner_created`.
  const parts = has(shape, STARTING)
    ? [
        input,
        batchCreateOwnersSql(clock, true),
        batchInsertExecutionsSql(clock, false),
        ...batchFenceSql(true),
        batchRecordStartManifestsSql(),
        batchArmStartTimersSql(clock, true),
        ...(has(shape, MARKING) ? [batchInsertMarkersSql(clock)] : []),
      ]
    : [input, ...batchFenceSql()]
  if (has(shape, STARTING)) {
    ran.push("owner_created", "inserted", "manifests_recorded", "start_timers")
    if (has(shape, MARKING)) ran.push("markers")
  }
  if (settling) {
    parts.push(batchSettleSql(clock))
    ran.push("settled")
  }
  if (beginning) {
    parts.push(batchBeginSql(clock, settling))
    ran.push("begun")
  }
  if (finishing) {
    ran.push(
      "finished",
      "steps_deleted",
      "timer_deleted",
      "notified",
      "parents",
      "parents_poked",
      "parents_woken",
    )
    parts.push(
      batchFinishSql(clock),
      batchDeleteStepsSql(),
      batchDeleteTimersSql(),
      sql`notified AS (${notification(FINISHED_CHANNEL, finishedPayloadOfRow, {
        from: sql`finished f`,
        when: sql`f.awaited AND ${notify}::boolean`,
      })})`,
      batchAwaitingParentsSql(),
      pokeParentsSql(clock, "parents", "parents_poked"),
      // Runners of other processes hear of the parents' due timers at once (Postgres).
      sql`parents_woken AS (${notification(WAKE_CHANNEL, sql`w.payload`, {
        from: sql`(SELECT DISTINCT ${wakePayloadOfRow} AS payload FROM parents_poked) w`,
        when: sql`${notify}::boolean`,
      })})`,
    )
  }
  const claiming = has(shape, CLAIMING)
  if (claiming) {
    const slot = FIRST_INPUT_SLOT + columns.length
    parts.push(
      claimDueParts(
        clock,
        claimableSql(sql`${new Slot(slot)}`, sql`${new Slot(slot + 1)}`),
        sql<number>`${new Slot(slot + 2)}::int`,
        sql<number>`${new Slot(slot + 3)}`,
        // Read once each before the claim's scan begins: every other part has run to its end.
        sql<boolean>`(${sql.join(
          ran.map((name) => sql`(SELECT count(*) FROM ${sql.id(name)})`),
          sql` + `,
        )}) >= 0`,
      ),
    )
  }
  // A plain SELECT part runs only when referred to: this is what sends the notifications.
  const notifiedColumn = finishing
    ? sql`, (SELECT count(*) FROM notified) + (SELECT count(*) FROM parents_woken) AS notified,
        (SELECT pp.bucket FROM finished f JOIN parents_poked pp
          ON pp.routing_key = f.parent_routing_key AND pp.id = f.parent_execution_id
          WHERE f.n = i.n) AS parent_bucket`
    : sql``
  const startedColumns = has(shape, STARTING)
    ? sql`, (SELECT s.event_cursor FROM inserted s
          WHERE s.routing_key = i.routing_key AND s.execution_id = i.execution_id) AS event_cursor,
        (SELECT s.deadline_at_ms FROM inserted s
          WHERE s.routing_key = i.routing_key AND s.execution_id = i.execution_id) AS deadline_at_ms,
        EXISTS (SELECT 1 FROM inserted s
          WHERE s.routing_key = i.routing_key AND s.execution_id = i.execution_id) AS created`
    : sql``
  return sql<StepBatchRow>`WITH ${sql.join(parts)}
    SELECT i.n IN (SELECT n FROM fenced) AS fenced,
      (SELECT f.held FROM fenced f WHERE f.n = i.n) AS generation,
      ${settling ? sql`i.settle_step IS NULL OR i.n IN (SELECT n FROM settled)` : sql`true`} AS settled,
      ${
        beginning
          ? sql`(SELECT b.started_at_ms FROM begun b WHERE b.execution_id = i.execution_id)`
          : sql`NULL::bigint`
      } AS started_at_ms,
      ${finishing ? sql`i.n IN (SELECT n FROM finished)` : sql`false`} AS finished${notifiedColumn}${startedColumns}${
        claiming
          ? sql`, CASE WHEN i.n = 1 THEN ${claimedJsonSql(claimedSnapshotColumn)} END AS claimed_rows`
          : sql``
      }
    FROM input i ORDER BY i.n`
}

const stepBatches = new ShapedStatements("step batch", composeStepBatch)

/**
 * Settles and begins activity attempts and records results of many executions in one statement —
 * one round trip and one commit for every pass that was waiting to write — with the guarantees of
 * the one-execution parts: each row writes only under its owner's held generation, or takes the
 * owner by advancing it (the owners are locked in one order, so two batches never deadlock);
 * exactly one writer settles an attempt (`exit IS NULL`); the next attempt is begun only if the
 * held settle matched, as when a failed settle aborted its statement; exactly one result is
 * recorded (status not yet finished), with the steps and the timer deleted, an awaiting parent's
 * timer poked and, where a caller elsewhere awaits it, a notification (`notify`: Postgres). A row
 * that carries a start creates its owner if new and inserts its execution with its markers,
 * manifest and timer whether or not its fence holds (as the start statement does), and writes
 * anything past that only if it inserted the execution: a start that attaches takes nothing. The
 * text depends only on which kinds of write the rows carry and whether one execution writes or
 * more, so each shape is composed and compiled once here (storage/shapedStatement.ts) and prepared
 * once per connection.
 */
export const writeStepBatch = async (
  db: Queryable,
  clock: DatabaseClock,
  writes: readonly StepBatchWrite[],
  notify: boolean,
): Promise<StepBatchOutcome[]> => (await writeStepBatchClaiming(db, clock, writes, notify)).outcomes

/**
 * `writeStepBatch`, with a claim riding the statement (`claimDue`'s, with what each claimed row's
 * pass replays from): it claims after every write of the statement has run, so the statement holds
 * the rows it claimed while waiting for no lock, and a row a write of it changed (a poked parent's
 * timer, a finished execution's) is not claimed. One commit for both: if the statement fails,
 * neither took effect.
 */
export const writeStepBatchClaiming = async (
  db: Queryable,
  clock: DatabaseClock,
  writes: readonly StepBatchWrite[],
  notify: boolean,
  claim?: Omit<StepBatchClaim, "limit"> & { readonly limit: number },
): Promise<{ outcomes: StepBatchOutcome[]; claimed: ClaimedRow[] }> => {
  const shape = stepBatchShape(writes, claim !== undefined)
  const { rows } = await stepBatches.execute(db, shape, [
    clock.offsetMs,
    notify,
    ...columnValues(stepBatchColumns(shape, writes), writes),
    ...(claim === undefined ? [] : [claim.buckets, claim.served, claim.limit, claim.recoveryMs]),
  ])
  const outcomes = rows.map((row, index): StepBatchOutcome => ({
    fenced: row.fenced,
    generation: row.generation === null ? null : Number(row.generation),
    settled: row.settled,
    startedAtMs: row.started_at_ms === null ? null : Number(row.started_at_ms),
    finished: row.finished,
    parentBucket:
      row.parent_bucket === null || row.parent_bucket === undefined
        ? null
        : Number(row.parent_bucket),
    ...(writes[index]!.start === undefined
      ? {}
      : {
          start: {
            created: row.created === true,
            eventCursor: numberOrNull(row.event_cursor),
            deadlineAtMs: numberOrNull(row.deadline_at_ms),
          },
        }),
  }))
  return { outcomes, claimed: (rows[0]?.claimed_rows ?? []).map(claimedRowOf) }
}

/**
 * The statement of the runner's step batcher: the writes as one step batch, with the first claim
 * riding it; a claim with no write to ride, or a second claim, goes alone (`claimDue`). A claim
 * for no slots, or for no buckets and no manifests, claims nothing and sends nothing.
 */
export const stepBatchStatement =
  (db: Queryable, clock: DatabaseClock, notify: boolean) =>
  async (requests: readonly StepBatchRequest[]): Promise<StepBatchAnswer[]> => {
    const answers: StepBatchAnswer[] = []
    const writes: StepBatchWrite[] = []
    const claims: number[] = []
    requests.forEach((request, index) => {
      if ("claim" in request) claims.push(index)
      else writes.push(request)
    })
    const claimOf = (index: number) => {
      const { claim } = requests[index] as { readonly claim: StepBatchClaim }
      const limit =
        claim.buckets.length === 0 && claim.served.length === 0 ? 0 : Math.max(0, claim.limit())
      return { ...claim, limit }
    }
    if (writes.length > 0) {
      const riderIndex = claims.shift()
      const rider = riderIndex === undefined ? undefined : claimOf(riderIndex)
      const { outcomes, claimed } = await writeStepBatchClaiming(
        db,
        clock,
        writes,
        notify,
        rider !== undefined && rider.limit > 0 ? rider : undefined,
      )
      let next = 0
      requests.forEach((request, index) => {
        if (!("claim" in request)) answers[index] = outcomes[next++]!
      })
      if (riderIndex !== undefined) answers[riderIndex] = { claimed, limit: rider!.limit }
    }
    for (const index of claims) {
      const claim = claimOf(index)
      const claimed = await claimDue(
        db,
        clock,
        claim.buckets,
        claim.served,
        claim.limit,
        claim.recoveryMs,
        claimedSnapshotColumn,
      )
      answers[index] = { claimed, limit: claim.limit }
    }
    return answers
  }
