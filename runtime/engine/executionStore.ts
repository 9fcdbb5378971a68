/**
 * Every statement that touches `akter.executions`. Writers are parts of one statement (see
 * statementParts.ts) — fenced for the engine — and each says which invariant it keeps.
 */
import { sql, type RawBuilder } from "kysely"
import type {
  ExecutionOutcome,
  ExecutionStatusColumn,
  InterruptCause,
  Queryable,
  Row,
} from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import { existsIn, part, type StatementPart } from "../storage/statementParts.js"
import { createOwnerPart, fenceHeld, ownerSequencePart, type FoldedStart } from "../owners/fence.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { MAX_ANNOUNCED_RESULT_BYTES } from "../outbox/notifications.js"
import type { StatementBatcher } from "../storage/statementBatcher.js"
import type { ParentLink } from "./startRequest.js"
import { readStepsOf, stepRow, stepsFromJson, stepsJsonOf, type StepRow } from "./stepStore.js"

/** The execution's row as a pass replays from it, with the pokes its timer counted. */
export type ExecutionRow = Pick<
  Row<"akter.executions">,
  | "execution_id"
  | "tenant"
  | "owner_type"
  | "owner_id"
  | "workflow"
  | "execution_key"
  | "manifest_hash"
  | "input"
  | "caller"
  | "event_cursor"
  | "status"
  | "interrupt"
  | "result"
  | "started_at_ms"
  | "finished_at_ms"
  | "concurrency_key"
  | "concurrency_value"
  | "parent_awaits"
  | "deadline_at_ms"
  | "interrupted_by"
> & {
  /** The pokes its timer counted when the row was read (0 without a timer). */
  readonly pokes: number
}

/** The columns of the execution row a pass replays from (`ExecutionRow` but `pokes`), in order. */
const REPLAYED_COLUMNS = [
  "execution_id",
  "tenant",
  "owner_type",
  "owner_id",
  "workflow",
  "execution_key",
  "manifest_hash",
  "input",
  "caller",
  "event_cursor",
  "status",
  "interrupt",
  "result",
  "started_at_ms",
  "finished_at_ms",
  "concurrency_key",
  "concurrency_value",
  "parent_awaits",
  "deadline_at_ms",
  "interrupted_by",
] as const
/** Those of them that are bytea: as json, base64 text. */
const BYTEA_REPLAYED_COLUMNS: ReadonlySet<string> = new Set(["input", "result"])

/** What a pass reads before it replays: the execution's row and its recorded steps. */
export interface ExecutionSnapshot {
  readonly execution: ExecutionRow
  readonly steps: readonly StepRow[]
}

export interface NewExecution {
  readonly owner: OwnerPlacement
  readonly executionId: string
  readonly workflow: string
  readonly key: string
  readonly manifestHash: string
  readonly input: Buffer
  readonly caller: string
  /** Its caller may await the result in a process that does not run it: the finish notifies. */
  readonly awaited: boolean
  /**
   * Its concurrency group and the limit of the manifest that starts it: the insert admits it
   * (`running`) or queues it. Only under the group's lock (engine/concurrencyGroups.ts), taken by
   * an earlier statement of the same transaction, so that this statement sees every admission and
   * queueing committed before it.
   */
  readonly concurrency?: { readonly group: GroupOfExecutions; readonly limit: number }
  /** The execution whose `start` step started this one. */
  readonly parent?: ParentLink
  /** How long after its start it is interrupted if still open; null: never. */
  readonly deadlineMs: number | null
}

/** A concurrency group: the executions of one workflow and tenant with one key path and value. */
export interface GroupOfExecutions {
  readonly tenant: string
  readonly ownerType: string
  readonly workflow: string
  readonly key: string
  readonly value: string
}

const inGroup = (group: GroupOfExecutions) =>
  sql`owner_type = ${group.ownerType} AND workflow = ${group.workflow}
    AND concurrency_value = ${group.value} AND tenant = ${group.tenant}
    AND concurrency_key = ${group.key}`

/** How many of the group's executions are admitted and unfinished, `except` one of them. */
const admittedIn = (group: GroupOfExecutions, except?: ExecutionKey) =>
  sql<number>`(SELECT count(*) FROM akter.executions
    WHERE ${inGroup(group)} AND status IN ('running', 'suspended')${
      except === undefined
        ? sql``
        : sql` AND NOT (routing_key = ${except.routingKey}::bigint
            AND execution_id = ${except.executionId})`
    })`

/**
 * The status a new execution of a group starts in: `running` when fewer than `limit` of the group
 * run and none waits before it (first in, first out), else `queued`.
 */
const admissionStatus = (group: GroupOfExecutions, limit: number) =>
  sql`CASE WHEN ${admittedIn(group)} < ${limit}::bigint AND NOT EXISTS (
      SELECT 1 FROM akter.executions WHERE ${inGroup(group)} AND status = 'queued')
    THEN 'running' ELSE 'queued' END`

/**
 * Creates the owner if new and inserts the execution with its event cursor at the owner's current
 * sequence, so every event emitted after the start is visible to its waits. A second start of the
 * same id inserts nothing (`inserted` is empty): it attaches, and nothing is rewritten — the parts
 * conditioned on `inserted` (markers, manifest, timer) write nothing either. The deadline is fixed
 * here, from the start's own time, and never moved.
 */
export const insertExecutionParts = (
  clock: DatabaseClock,
  execution: NewExecution,
  /**
   * A runner of this process takes the execution in this statement: a new owner is created
   * activated (generation 1), since the statement cannot advance a row it inserts itself.
   */
  activated = false,
): {
  readonly parts: readonly StatementPart[]
  readonly inserted: string
  /** Returns (`event_sequence`, `generation`) the owner it created, if it was new. */
  readonly ownerCreated: string
} => {
  const { owner } = execution
  const created = createOwnerPart(clock, owner, activated)
  const sequence = ownerSequencePart(owner, created.name)
  const { concurrency } = execution
  const { parent } = execution
  // A child whose parent has ended (or is gone) and takes it down starts interrupted. The parent's
  // row is locked for share: a parent finishing concurrently commits first and is seen finished
  // here, or waits for this insert, and its end's sweep of its children (a later statement) sees
  // the child. Either way the child is interrupted once.
  const parentRow =
    parent === undefined
      ? undefined
      : part(
          "parent_row",
          () => sql`SELECT status FROM akter.executions
            WHERE routing_key = ${parent.routingKey}::bigint
              AND execution_id = ${parent.executionId}
            FOR SHARE`,
        )
  const interrupt =
    parentRow === undefined || parent?.close !== "interrupt"
      ? sql`false`
      : sql`COALESCE((SELECT status = 'finished' FROM ${sql.id(parentRow.name)}), true)`
  const inserted = part(
    "inserted",
    () => sql`INSERT INTO akter.executions (routing_key, execution_id, bucket, tenant, owner_type,
        owner_id, workflow, execution_key, manifest_hash, input, caller, event_cursor, status,
        started_at_ms, awaited, concurrency_key, concurrency_value, queue_order, interrupt,
        parent_routing_key, parent_execution_id, parent_step, parent_awaits, parent_close,
        deadline_at_ms)
      SELECT ${owner.routingKey}::bigint, ${execution.executionId}, ${owner.bucket}, ${owner.tenant},
        ${owner.ownerType}, ${owner.ownerId}, ${execution.workflow}, ${execution.key},
        ${execution.manifestHash}, ${execution.input}, ${execution.caller},
        COALESCE((SELECT max(event_sequence) FROM ${sql.id(sequence.name)}), 0),
        ${concurrency === undefined ? sql`'running'` : admissionStatus(concurrency.group, concurrency.limit)},
        started.at_ms, ${execution.awaited},
        ${concurrency?.group.key ?? null}, ${concurrency?.group.value ?? null},
        ${concurrency === undefined ? null : sql`nextval('akter.queue_order')`}, ${interrupt},
        ${parent?.routingKey ?? null}::bigint, ${parent?.executionId ?? null}::text,
        ${parent?.step ?? null}::text, ${parent?.awaits ?? false}, ${parent?.close ?? null}::text,
        started.at_ms + ${execution.deadlineMs}::bigint
      FROM (SELECT ${nowMs(clock)} AS at_ms) AS started
      ON CONFLICT (routing_key, execution_id) DO NOTHING
      RETURNING event_cursor, started_at_ms, status, deadline_at_ms, interrupt`,
  )
  return {
    parts: [...(parentRow === undefined ? [] : [parentRow]), created, sequence, inserted],
    inserted: inserted.name,
    ownerCreated: created.name,
  }
}

/**
 * Admits the next queued executions of the group of an execution the statement finishes (`finished`
 * names the part that finished it; nothing is admitted when it found nothing): the oldest first,
 * as many as `limit` allows beside the group's other admitted executions (`null`: the runner's
 * manifest declares no limit any more, and every queued one is admitted). At most `limit` of a
 * group run at once: this statement runs under the group's lock, taken by an earlier statement of
 * its transaction, so it counts every admission committed before it. Returns the admitted
 * executions' keys and placement, for their timers.
 */
export const admitQueuedPart = (
  group: GroupOfExecutions,
  finishing: ExecutionKey,
  limit: number | null,
  finished: string,
): StatementPart =>
  part(
    "admitted",
    () => sql`UPDATE akter.executions e SET status = 'running'
      FROM (
        SELECT routing_key, execution_id FROM akter.executions
        WHERE ${inGroup(group)} AND status = 'queued'
        ORDER BY queue_order
        LIMIT ${
          limit === null
            ? sql`ALL`
            : sql`GREATEST(0, ${limit}::bigint - ${admittedIn(group, finishing)})`
        }
      ) next
      WHERE e.routing_key = next.routing_key AND e.execution_id = next.execution_id
        AND e.status = 'queued' AND ${existsIn(finished)}
      RETURNING e.routing_key, e.execution_id, e.bucket, e.tenant, e.owner_type, e.owner_id`,
  )

/** What came of a start a runner took into its pass: the pass's first write commits it. */
export type StartOutcome =
  | "created"
  /** The execution existed; nothing was written. */
  | "attached"
  /** The pass ended before its first write committed: nothing was written, the caller starts it. */
  | "not-taken"

/** A start's parts in a pass's statement, and the names of those the statement reads. */
export interface FoldedStartParts {
  readonly head: readonly StatementPart[]
  readonly tail: readonly StatementPart[]
  readonly names: FoldedStart
}

/**
 * A start a runner of the starting process takes: nothing is written yet; the first write of the
 * execution's pass carries the start — as a row of a step batch, or as its parts (`head`, then
 * the fence, then `tail`).
 */
export interface UnstartedExecution {
  /** The execution as the start will record it; its event cursor and start time come with the write. */
  readonly snapshot: ExecutionSnapshot
  /**
   * The start as parts of the pass's own statement (its head before the fence, its tail after),
   * composed when first asked for: a start that goes as a row of a step batch never is.
   */
  readonly parts: () => FoldedStartParts
  /**
   * The start as a row of a step batch (engine/stepBatch.ts), when it can go as one: no parent,
   * no concurrency group, nothing to commit alongside. Undefined: only as the parts above.
   */
  readonly batchable?: BatchableStart
  /** Told what came of the start; only the first telling counts (a pass that ends tells again). */
  readonly settled: (outcome: StartOutcome) => void
}

/**
 * What a batched row needs to write a start (engine/stepBatch.ts, engine/startBatch.ts): the
 * execution's columns beyond its owner and id, and the markers and manifest it starts under.
 */
export interface BatchedStartFields {
  readonly workflow: string
  readonly key: string
  readonly manifestHash: string
  /** The manifest as stored (storage/manifestStore.ts), recorded if new. */
  readonly manifest: string
  readonly input: Buffer
  readonly caller: string
  /** How long after its start it is interrupted if still open; null: never. */
  readonly deadlineMs: number | null
  /** Each declared marker at its current value (may be empty). */
  readonly markers: Readonly<Record<string, number>>
}

/** A start a runner of this process takes, as a row of its step batch. */
export interface BatchableStart extends BatchedStartFields {
  /** The timer is due this far ahead when the batch takes the owner, else now (a claim runs it). */
  readonly recoveryMs: number
}

/**
 * The snapshot of an execution its start has not recorded yet: as the start will insert it, its
 * markers the only steps, its timer not poked. The event cursor is unknown until the start commits
 * (NaN, which no statement accepts); its deadline is estimated from `nowMs`, a little before the
 * one the start records, which only ever makes a pass look at it early.
 */
export const unstartedSnapshot = (
  execution: NewExecution,
  markers: Readonly<Record<string, number>>,
  nowMs: number,
): ExecutionSnapshot => ({
  execution: {
    execution_id: execution.executionId,
    tenant: execution.owner.tenant,
    owner_type: execution.owner.ownerType,
    owner_id: execution.owner.ownerId,
    workflow: execution.workflow,
    execution_key: execution.key,
    manifest_hash: execution.manifestHash,
    input: execution.input,
    caller: execution.caller,
    event_cursor: Number.NaN,
    status: "running",
    interrupt: false,
    result: null,
    started_at_ms: Number.NaN,
    finished_at_ms: null,
    // A runner takes no start of a keyed workflow into its pass (engine/concurrencyGroups.ts).
    concurrency_key: null,
    concurrency_value: null,
    parent_awaits: execution.parent?.awaits ?? false,
    deadline_at_ms: execution.deadlineMs === null ? null : nowMs + execution.deadlineMs,
    interrupted_by: null,
    pokes: 0,
  },
  steps: Object.entries(markers).map(([step, version]) =>
    stepRow({ step, attempt: 0, kind: "version", version, started_at_ms: 0 }),
  ),
})

/** The runner's batcher of snapshot reads (storage/statementBatcher.ts over `readExecutionSnapshots`). */
export type SnapshotReader = StatementBatcher<ExecutionKey, ExecutionSnapshot | undefined>

/** An execution to read, by its row's key. */
export interface ExecutionKey {
  readonly routingKey: string
  readonly executionId: string
}

/**
 * Reads what passes replay from — each execution's row, with the pokes its timer counted in the
 * same snapshot as the interrupt flag (a poke counted here is one the pass sees), and its steps —
 * for many executions at once: two statements whatever their number. Undefined for an execution
 * that does not exist.
 */
export const readExecutionSnapshots = async (
  db: Queryable,
  keys: readonly ExecutionKey[],
): Promise<(ExecutionSnapshot | undefined)[]> => {
  const routingKeys = keys.map((key) => key.routingKey)
  const executionIds = keys.map((key) => key.executionId)
  const [executions, steps] = await Promise.all([
    sql<ExecutionRow>`SELECT ${sql.join(REPLAYED_COLUMNS.map((column) => sql`e.${sql.id(column)}`))},
        COALESCE(o.pokes, 0) AS pokes
      FROM unnest(${routingKeys}::bigint[], ${executionIds}::text[]) AS k(routing_key, execution_id)
      JOIN akter.executions e
        ON e.routing_key = k.routing_key AND e.execution_id = k.execution_id
      LEFT JOIN akter.outbox o
        ON o.routing_key = k.routing_key AND o.kind = 'timer' AND o.id = k.execution_id`.execute(
      db,
    ),
    readStepsOf(db, routingKeys, executionIds),
  ])
  const byId = new Map<string, ExecutionSnapshot>()
  for (const execution of executions.rows) {
    byId.set(execution.execution_id, { execution, steps: [] })
  }
  for (const { execution_id: executionId, ...step } of steps) {
    ;(byId.get(executionId)?.steps as StepRow[] | undefined)?.push(step)
  }
  return keys.map((key) => byId.get(key.executionId))
}

/**
 * The claim's `attached` column (outbox/outboxStore.ts `ClaimAttachment`): what
 * `readExecutionSnapshots` reads of a claimed timer's execution, as json, in the claim's snapshot —
 * so the pokes it reports are counted in the same snapshot as the interrupt flag and the steps, as
 * that read counts them (the claim itself may have seen pokes committed since: a pass then replays
 * once more). An empty object for a staged start, and for a timer whose execution is gone.
 */
export const claimedSnapshotColumn: RawBuilder<unknown> = sql`COALESCE((SELECT json_build_object(
      ${sql.join(
        REPLAYED_COLUMNS.map(
          (column) =>
            sql`${column}::text, ${
              BYTEA_REPLAYED_COLUMNS.has(column)
                ? sql`encode(e.${sql.id(column)}, 'base64')`
                : sql`e.${sql.id(column)}`
            }`,
        ),
      )},
      'pokes', COALESCE(o.pokes, 0), 'steps', ${stepsJsonOf(sql`e.routing_key`, sql`e.execution_id`)})
    FROM akter.executions e
    LEFT JOIN akter.outbox o ON o.routing_key = e.routing_key AND o.kind = 'timer'
      AND o.id = e.execution_id
    WHERE c.kind = 'timer' AND e.routing_key = c.routing_key AND e.execution_id = c.id),
  '{}'::json)`

/** The snapshot `claimedSnapshotColumn` encoded; null when there is no execution. */
export const snapshotFromJson = (value: unknown): ExecutionSnapshot | null => {
  const { steps, ...row } = value as Record<string, unknown>
  if (row["execution_id"] === undefined) return null
  for (const column of BYTEA_REPLAYED_COLUMNS) {
    const encoded = row[column]
    if (typeof encoded === "string") row[column] = Buffer.from(encoded, "base64")
  }
  return { execution: row as unknown as ExecutionRow, steps: stepsFromJson(steps) }
}

export interface ExecutionState {
  readonly status: ExecutionStatusColumn
  readonly interrupt: boolean
  /** Why the interrupt was asked for; null with `interrupt` only for one asked before migration 0010. */
  readonly interrupted_by: InterruptCause | null
  readonly result: Buffer | null
}

/** Reads what concurrent readers of executions' states ask for together (awaited children's). */
export type ExecutionStateReader = StatementBatcher<ExecutionKey, ExecutionState | undefined>

/** The states of several executions in one statement, in the order asked; undefined: no such row. */
export const readExecutionStates = async (
  db: Queryable,
  keys: readonly ExecutionKey[],
): Promise<(ExecutionState | undefined)[]> => {
  const { rows } = await sql<ExecutionState & { readonly execution_id: string }>`
    SELECT e.execution_id, e.status, e.interrupt, e.interrupted_by, e.result
    FROM unnest(${keys.map((key) => key.routingKey)}::bigint[],
      ${keys.map((key) => key.executionId)}::text[]) AS k(routing_key, execution_id)
    JOIN akter.executions e ON e.routing_key = k.routing_key AND e.execution_id = k.execution_id
  `.execute(db)
  const byId = new Map<string, ExecutionState>()
  for (const { execution_id: executionId, ...state } of rows) byId.set(executionId, state)
  return keys.map((key) => byId.get(key.executionId))
}

export const readExecutionState = async (
  db: Queryable,
  routingKey: string,
  executionId: string,
): Promise<ExecutionState | undefined> =>
  db
    .selectFrom("akter.executions")
    .select(["status", "interrupt", "interrupted_by", "result"])
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .executeTakeFirst()

/**
 * Reads the execution for a caller about to wait for its result, and marks it awaited if it is
 * not finished, so that its finish notifies. Marking writes only the first time.
 */
export const readExecutionStateAwaiting = async (
  db: Queryable,
  routingKey: string,
  executionId: string,
): Promise<ExecutionState | undefined> => {
  const { rows } = await sql<ExecutionState>`WITH awaiting AS (
      UPDATE akter.executions SET awaited = true
      WHERE routing_key = ${routingKey}::bigint AND execution_id = ${executionId}
        AND status <> 'finished' AND NOT awaited
      RETURNING 1)
    SELECT status, interrupt, interrupted_by, result FROM akter.executions
    WHERE routing_key = ${routingKey}::bigint AND execution_id = ${executionId}`.execute(db)
  return rows[0]
}

/**
 * What a pass changes on its execution's row, merged into one update per statement (a row may be
 * changed only once per statement).
 */
export interface ExecutionPatch {
  /** `running`: a replaying execution shows as running; `suspended`: only a running one suspends. */
  readonly status?: "running" | "suspended"
  /** A wait that matched moves the cursor past its event, never back. */
  readonly cursor?: number
  /** Moves the execution onto the runner's manifest, only from the manifest the runner judged. */
  readonly adopt?: { readonly from: string; readonly to: string }
}

export const executionPatchPart = (
  routingKey: string,
  executionId: string,
  patch: ExecutionPatch,
): StatementPart =>
  part("execution", () => {
    const status =
      patch.status === "running"
        ? sql`CASE WHEN status = 'suspended' THEN 'running' ELSE status END`
        : patch.status === "suspended"
          ? sql`CASE WHEN status = 'running' THEN 'suspended' ELSE status END`
          : sql`status`
    const cursor =
      patch.cursor === undefined
        ? sql`event_cursor`
        : sql`GREATEST(event_cursor, ${patch.cursor}::bigint)`
    const manifest =
      patch.adopt === undefined
        ? sql`manifest_hash`
        : sql`CASE WHEN manifest_hash = ${patch.adopt.from} THEN ${patch.adopt.to} ELSE manifest_hash END`
    return sql`UPDATE akter.executions
      SET status = ${status}, event_cursor = ${cursor}, manifest_hash = ${manifest}
      WHERE routing_key = ${routingKey}::bigint AND execution_id = ${executionId}
        AND status <> 'finished' AND ${fenceHeld}
      RETURNING status`
  })

/**
 * A `RETURNING` column, `announced_result`, of a finish's update: the result `row.result` (the
 * row's new one) when a caller elsewhere awaits it (`row.awaited`: only then does the finish
 * notify), it is at most `MAX_ANNOUNCED_RESULT_BYTES` and the executions table holds no row
 * security, else null. Under tenant isolation (storage/tenantIsolation.ts) every tenant's LISTEN
 * session hears every notification, while its reads see only its own tenant's rows: results then
 * stay in the rows, and callers read them as before. (`awaited` comes first: a finish nobody
 * elsewhere awaits costs no more than before.)
 */
const announcedResult = (row: RawBuilder<unknown>): RawBuilder<unknown> =>
  sql`CASE WHEN ${row}.awaited AND octet_length(${row}.result) <= ${MAX_ANNOUNCED_RESULT_BYTES}::int
      AND NOT (SELECT c.relrowsecurity FROM pg_class c WHERE c.oid = 'akter.executions'::regclass)
    THEN ${row}.result END AS announced_result`

/**
 * Records the result. Exactly one terminal result is recorded: the update matches only while the
 * execution is not finished, and the steps and the timer are deleted only when it matched. Returns
 * (`awaited`) whether a caller elsewhere waits for the result, and the parent link of a child.
 */
export const finishExecutionPart = (
  clock: DatabaseClock,
  routingKey: string,
  executionId: string,
  result: Buffer,
  outcome: ExecutionOutcome,
  /** An interrupt's cause, recorded beside it for the listing; absent for other results. */
  interruptedBy?: InterruptCause,
): StatementPart =>
  part(
    "finished",
    () => sql`UPDATE akter.executions
      SET status = 'finished', result = ${result}, outcome = ${outcome},
        finished_at_ms = ${nowMs(clock)},
        interrupted_by = ${interruptedBy === undefined ? sql`interrupted_by` : sql`${interruptedBy}`}
      WHERE routing_key = ${routingKey}::bigint AND execution_id = ${executionId}
        AND status <> 'finished' AND ${fenceHeld}
      RETURNING awaited, parent_routing_key, parent_execution_id, parent_awaits, execution_id,
        ${announcedResult(sql`akter.executions`)}`,
  )

/**
 * The parent awaiting the execution `finished` (a `finishExecutionPart`) finished, if it is still
 * open: its placement, for the poke of its timer in the same statement. The parent's awaiting
 * step is settled by the parent's own pass, so one writer still settles each step.
 */
export const awaitingParentPart = (finished: string): StatementPart =>
  part("parent", () => awaitingParentsOf(sql.id(finished)))

/** The open parents awaiting the rows of `finished` (a part's name), each once. */
const awaitingParentsOf = (finished: RawBuilder<unknown>) =>
  sql`SELECT DISTINCT p.routing_key, p.execution_id, p.bucket, p.tenant, p.owner_type, p.owner_id
      FROM ${finished} f
      JOIN akter.executions p
        ON p.routing_key = f.parent_routing_key AND p.execution_id = f.parent_execution_id
      WHERE f.parent_awaits AND p.status <> 'finished'`

/**
 * Interrupts the open children of a finished execution whose policy takes them down with it. Each
 * child's result is recorded once whatever the number of interrupts (its finish matches only
 * while it is open), and an interrupt after a child finished changes nothing. Returns each
 * child's placement, for the pokes of their timers.
 */
export const interruptChildrenPart = (routingKey: string, executionId: string): StatementPart =>
  part(
    "children",
    () => sql`UPDATE akter.executions SET interrupt = true
      WHERE parent_routing_key = ${routingKey}::bigint AND parent_execution_id = ${executionId}
        AND parent_close = 'interrupt' AND status <> 'finished'
      RETURNING routing_key, execution_id, bucket, tenant, owner_type, owner_id`,
  )

/**
 * The executions a batch's starts insert (engine/stepBatch.ts, engine/startBatch.ts): as
 * `insertExecutionParts` for a start with no parent and no concurrency group, for each input row
 * that starts one
 * (`workflow` set) — running, its event cursor at its owner's current event sequence (from
 * `owner_created` when the batch created the owner, else from its row), its deadline fixed from its
 * own start time. A start whose execution exists inserts nothing and attaches. Returns each
 * inserted execution's key, `event_cursor` and `deadline_at_ms`.
 */
export const batchInsertExecutionsSql = (
  clock: DatabaseClock,
  /** Whether the input's `awaited` column says which are awaited elsewhere (else none is). */
  awaitedColumn: boolean,
): RawBuilder<unknown> =>
  sql`inserted AS (
      INSERT INTO akter.executions (routing_key, execution_id, bucket, tenant, owner_type, owner_id,
        workflow, execution_key, manifest_hash, input, caller, event_cursor, status, started_at_ms,
        awaited, interrupt, deadline_at_ms)
      SELECT i.routing_key, i.execution_id, i.bucket, i.tenant, i.owner_type, i.owner_id,
        i.workflow, i.execution_key, i.manifest_hash, i.start_input, i.caller,
        COALESCE((SELECT c.event_sequence FROM owner_created c
            WHERE c.routing_key = i.routing_key AND c.tenant = i.tenant
              AND c.owner_type = i.owner_type AND c.owner_id = i.owner_id),
          (SELECT o.event_sequence FROM akter.owners o
            WHERE o.routing_key = i.routing_key AND o.tenant = i.tenant
              AND o.owner_type = i.owner_type AND o.owner_id = i.owner_id), 0),
        'running', started.at_ms, ${awaitedColumn ? sql`i.awaited` : sql`false`}, false,
        started.at_ms + i.deadline_ms
      FROM input i, (SELECT ${nowMs(clock)} AS at_ms) AS started
      WHERE i.workflow IS NOT NULL
      ON CONFLICT (routing_key, execution_id) DO NOTHING
      RETURNING routing_key, execution_id, event_cursor, deadline_at_ms
    )`

/**
 * The batch's results (engine/stepBatch.ts): as `finishExecutionPart`, for each row of `fenced`
 * that records one — exactly one result per execution, the update matching only while it is not
 * finished. Returns the finished rows' `n`, their keys (the steps and timer deleted with them) and
 * whether a caller elsewhere awaits each.
 */
export const batchFinishSql = (clock: DatabaseClock): RawBuilder<unknown> =>
  sql`finished AS (
        UPDATE akter.executions e
        SET status = 'finished', result = f.result, outcome = f.outcome,
          finished_at_ms = ${nowMs(clock)}
        FROM fenced f
        WHERE f.result IS NOT NULL AND e.routing_key = f.routing_key
          AND e.execution_id = f.execution_id AND e.status <> 'finished'
        RETURNING f.n, e.routing_key, e.execution_id, e.awaited, e.parent_routing_key,
          e.parent_execution_id, e.parent_awaits, ${announcedResult(sql`e`)}
      )`

/**
 * The batch's awaiting parents (engine/stepBatch.ts): as `awaitingParentPart`, for every row of
 * `finished` whose parent awaits it and is open, each parent once (two children of one parent may
 * finish in one batch).
 */
export const batchAwaitingParentsSql = (): RawBuilder<unknown> =>
  sql`parents AS (${awaitingParentsOf(sql`finished`)})`

/**
 * Sets the interrupt flag of an open execution; an interrupt after completion matches nothing and
 * changes nothing. The first request records its cause: `deadline` once the execution's deadline
 * has passed (the deadline interrupts it then in any case), else `request`; a later one keeps it.
 */
export const requestInterruptPart = (
  clock: DatabaseClock,
  routingKey: string,
  executionId: string,
): StatementPart =>
  part(
    "interrupted",
    () => sql`UPDATE akter.executions SET interrupt = true,
        interrupted_by = COALESCE(interrupted_by, CASE WHEN deadline_at_ms <= ${nowMs(clock)}
          THEN 'deadline' ELSE 'request' END)
      WHERE routing_key = ${routingKey}::bigint AND execution_id = ${executionId}
        AND status <> 'finished'
      RETURNING 1 AS interrupted`,
  )

/**
 * Retention: up to `limit` executions that finished before `cutoffMs`, locked for their delete and
 * skipped while a pass or a client holds them. Read by `deleteExpiredExecutionsPart` and by the
 * parts of other stores that delete what a crash could leave beside them (their timer).
 */
export const expiredExecutionsPart = (cutoffMs: number, limit: number): StatementPart =>
  part(
    "expired",
    () => sql`SELECT routing_key, execution_id FROM akter.executions
      WHERE status = 'finished' AND finished_at_ms < ${cutoffMs}::bigint
      ORDER BY finished_at_ms
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`,
  )

/**
 * Retention: deletes the executions `expired` selected. Only finished executions past their keep
 * period are selected, so no pass and no waiting caller can still need them; their steps go with
 * them by the foreign key's cascade.
 */
export const deleteExpiredExecutionsPart = (expired: string): StatementPart =>
  part(
    "executions_deleted",
    () => sql`DELETE FROM akter.executions e USING ${sql.id(expired)} x
      WHERE e.routing_key = x.routing_key AND e.execution_id = x.execution_id
      RETURNING 1`,
  )

/**
 * Holds every writer of executions off until this transaction ends, waiting at most `timeout` for
 * those in flight to commit (then it fails with SQLSTATE 55P03, and the transaction rolls back).
 * Retention takes it before deleting unused manifests: a start records its manifest with `ON
 * CONFLICT DO NOTHING`, which locks no existing manifest row, so without it a start in flight could
 * commit an execution under a manifest the delete saw unused.
 */
export const holdOffExecutionWrites = async (tx: Queryable, timeout: string): Promise<void> => {
  await sql`SELECT set_config('lock_timeout', ${timeout}, true)`.execute(tx)
  await sql`LOCK TABLE akter.executions IN SHARE MODE`.execute(tx)
}

/**
 * The execution if it is still open: other parts of an operator's statement condition on it, so
 * nothing of a finished execution moves.
 */
export const openExecutionPart = (owner: OwnerPlacement, executionId: string): StatementPart =>
  part(
    "open",
    () => sql`SELECT 1 FROM akter.executions
      WHERE routing_key = ${owner.routingKey}::bigint AND execution_id = ${executionId}
        AND status <> 'finished'`,
  )
