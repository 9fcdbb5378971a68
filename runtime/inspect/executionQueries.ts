/**
 * The read-only queries behind `akter inspect`: list executions with filters, count them by workflow
 * and status, and show one with its markers, steps and timer. Nothing here writes, so a deployed
 * tool can point it at a production database; stored values are decoded with storedValues.ts, so a
 * corrupt row is reported as a defect of its execution rather than failing the query.
 */
import { sql, type SelectQueryBuilder } from "kysely"
import { InvalidExecutionId } from "../errors.js"
import { decodeExecutionId } from "../model/executionId.js"
import { placeOwner } from "../owners/routing.js"
import { readManifest } from "../storage/manifestStore.js"
import type { InterruptCause } from "../model/exit.js"
import type { ParentClose } from "../model/stepKinds/start.js"
import type {
  Database,
  Db,
  ExecutionStatusColumn,
  Row,
  StepKindColumn,
} from "../storage/database.js"
import {
  inspectExit,
  inspectValue,
  outcomeOf,
  type InspectedExit,
  type InspectedValue,
  type Outcome,
} from "./storedValues.js"

/** `open` is running or suspended. */
export type StatusFilter = ExecutionStatusColumn | "open"

export const STATUS_FILTERS: readonly StatusFilter[] = [
  "queued",
  "running",
  "suspended",
  "finished",
  "open",
]

export interface ExecutionFilter {
  readonly tenant?: string | undefined
  readonly ownerType?: string | undefined
  readonly ownerId?: string | undefined
  /** Owner ids starting with this text (the demo's run prefix). */
  readonly ownerIdPrefix?: string | undefined
  readonly workflow?: string | undefined
  readonly status?: StatusFilter | undefined
  /** Started at or after this time (epoch ms). */
  readonly startedFrom?: number | undefined
  /** Started before this time (epoch ms). */
  readonly startedBefore?: number | undefined
}

/** Where a listing stands: the start time and id of the last execution a page showed. */
export interface ListingPosition {
  readonly startedAtMs: number
  readonly executionId: string
}

export interface ListingOrder {
  /** `newest` first (the default) or `oldest` first; ties go by execution id, the same way. */
  readonly order?: "newest" | "oldest" | undefined
  /** Only executions after this one in the order. */
  readonly after?: ListingPosition | undefined
  /** At most this many (default 50). */
  readonly limit?: number | undefined
}

export interface ExecutionSummary {
  readonly executionId: string
  readonly tenant: string
  readonly ownerType: string
  readonly ownerId: string
  readonly workflow: string
  readonly key: string
  readonly manifestHash: string
  readonly status: ExecutionStatusColumn
  readonly interrupting: boolean
  /** How a finished execution ended; undefined while it is open. */
  readonly outcome: Outcome | undefined
  /**
   * Why it was interrupted, or is being: a client's `request`, or its `deadline`. Undefined when it
   * was not (yet).
   */
  readonly interruptedBy: InterruptCause | undefined
  readonly startedAtMs: number
  readonly finishedAtMs: number | null
  /** When it is interrupted if still open (a workflow with a `deadline:`); null: never. */
  readonly deadlineAtMs: number | null
}

export interface InspectedStep {
  readonly step: string
  readonly attempt: number
  readonly kind: Exclude<StepKindColumn, "version">
  readonly settled: boolean
  /** The recorded exit; undefined while the step is pending. */
  readonly exit: InspectedExit | undefined
  /** sleep: when it is due; wait: its timeout; a failed activity attempt: when the next may start. */
  readonly dueAtMs: number | null
  /** A wait's bookkeeping: the event, the sequence it waits after, the last scanned and the match. */
  readonly wait:
    | {
        readonly event: string
        readonly after: number
        readonly scanned: number | null
        readonly matched: number | null
      }
    | undefined
  readonly startedAtMs: number
  readonly settledAtMs: number | null
  /** start: the execution it started (absent for rows recorded before migration 0009). */
  readonly child: string | undefined
}

/** How a child is linked to its parent: the parent's start step, and what that step declared. */
export interface ChildLink {
  readonly step: string
  /** The step awaits the child's result. */
  readonly awaits: boolean
  /** What the child does when the parent ends first. */
  readonly parentClose: ParentClose
}

export interface ExecutionDetail extends ExecutionSummary {
  readonly caller: unknown
  readonly eventCursor: number
  readonly input: InspectedValue
  /** The recorded result of a finished execution. */
  readonly result: InspectedExit | undefined
  /** Version markers recorded at start (deleted, like the steps, when the execution finishes). */
  readonly markers: readonly { readonly name: string; readonly value: number }[]
  readonly steps: readonly InspectedStep[]
  /** The execution's timer: when a runner will next look at it. */
  readonly timer: { readonly dueAtMs: number; readonly attempts: number } | undefined
  /** Every stored value of this execution that could not be read back, located. */
  readonly defects: readonly string[]
  /** The execution whose start step started this one. */
  readonly parent: (ChildLink & { readonly executionId: string }) | undefined
  /** Its concurrency group and its place there; undefined when its workflow declares no key. */
  readonly concurrency: ConcurrencyPlace | undefined
}

/**
 * Where an execution of a workflow with `concurrency: { key, limit }` stands in its group (the
 * executions of its tenant and workflow whose input holds the same value at the key path).
 */
export interface ConcurrencyPlace {
  /** The key path it was started under, as the manifest writes it (`customer.id`). */
  readonly key: string
  /** Its input's value at that path, as text: with the path, its group (`c3`). */
  readonly value: string
  /** The limit its start manifest declares; undefined when that manifest is no longer stored. */
  readonly limit: number | undefined
  /** The group's executions admitted now — running or suspended (a sleeper holds its place). */
  readonly admitted: number
  /** The group's executions waiting to be admitted now. */
  readonly queued: number
  /** A queued execution: how many of its group's queued ones are admitted before it; else undefined. */
  readonly queuedAhead: number | undefined
}

export const DEFAULT_LIST_LIMIT = 50

/** A LIKE pattern matching text that starts with `prefix` (its `%`, `_` and `\\` taken literally). */
const startsWith = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

const filtered = <O>(
  query: SelectQueryBuilder<Database, "akter.executions", O>,
  filter: ExecutionFilter,
): SelectQueryBuilder<Database, "akter.executions", O> => {
  let next = query
  if (
    filter.tenant !== undefined &&
    filter.ownerType !== undefined &&
    filter.ownerId !== undefined
  ) {
    // One owner's executions sit under its routing key: the primary key finds them.
    const { routingKey } = placeOwner({
      tenant: filter.tenant,
      ownerType: filter.ownerType,
      ownerId: filter.ownerId,
    })
    next = next.where("routing_key", "=", routingKey)
  }
  if (filter.tenant !== undefined) next = next.where("tenant", "=", filter.tenant)
  if (filter.ownerType !== undefined) next = next.where("owner_type", "=", filter.ownerType)
  if (filter.ownerId !== undefined) next = next.where("owner_id", "=", filter.ownerId)
  if (filter.ownerIdPrefix !== undefined) {
    next = next.where("owner_id", "like", startsWith(filter.ownerIdPrefix))
  }
  if (filter.workflow !== undefined) next = next.where("workflow", "=", filter.workflow)
  if (filter.status === "open") next = next.where("status", "<>", "finished")
  else if (filter.status !== undefined) next = next.where("status", "=", filter.status)
  if (filter.startedFrom !== undefined) {
    next = next.where("started_at_ms", ">=", filter.startedFrom)
  }
  if (filter.startedBefore !== undefined) {
    next = next.where("started_at_ms", "<", filter.startedBefore)
  }
  return next
}

/** The columns an `ExecutionSummary` is made from (the studio's lists select them too). */
export const summaryColumns = [
  "execution_id",
  "tenant",
  "owner_type",
  "owner_id",
  "workflow",
  "execution_key",
  "manifest_hash",
  "status",
  "interrupt",
  "result",
  "started_at_ms",
  "finished_at_ms",
  "deadline_at_ms",
  "interrupted_by",
] as const

export type SummaryRow = Pick<Row<"akter.executions">, (typeof summaryColumns)[number]>

/** An execution's summary from its row's `summaryColumns`. */
export const summaryOf = (row: SummaryRow): ExecutionSummary => {
  const outcome = row.result === null ? undefined : outcomeOf(inspectExit(row.result))
  return {
    executionId: row.execution_id,
    tenant: row.tenant,
    ownerType: row.owner_type,
    ownerId: row.owner_id,
    workflow: row.workflow,
    key: row.execution_key,
    manifestHash: row.manifest_hash,
    status: row.status,
    interrupting: row.interrupt,
    outcome,
    // An interrupt without a recorded cause predates migration 0010: a client asked for it.
    interruptedBy:
      row.interrupted_by ??
      (row.interrupt || outcome === "interrupted" ? ("request" as const) : undefined),
    startedAtMs: row.started_at_ms,
    finishedAtMs: row.finished_at_ms,
    deadlineAtMs: row.deadline_at_ms,
  }
}

/**
 * The statement of `queryExecutions`, unexecuted (tests read its plan). The order is stable —
 * start time, then execution id — and every filter leads an index ending in it (migration 0005),
 * so a page reads only its own rows however deep it is.
 */
export const executionListQuery = (
  db: Db,
  filter: ExecutionFilter = {},
  listing: ListingOrder = {},
) => {
  const direction = listing.order === "oldest" ? "asc" : "desc"
  let query = filtered(db.selectFrom("akter.executions").select(summaryColumns), filter)
  if (listing.after !== undefined) {
    const { startedAtMs, executionId } = listing.after
    query = query.where((eb) =>
      eb(
        eb.refTuple("started_at_ms", "execution_id"),
        direction === "desc" ? "<" : ">",
        eb.tuple(startedAtMs, executionId),
      ),
    )
  }
  return query
    .orderBy("started_at_ms", direction)
    .orderBy("execution_id", direction)
    .limit(listing.limit ?? DEFAULT_LIST_LIMIT)
}

/**
 * Executions matching `filter`, newest (or oldest) first, after a position.
 *
 * @example
 * const open = await queryExecutions(db, { workflow: "fulfill", status: "open" }, { limit: 20 })
 */
export const queryExecutions = async (
  db: Db,
  filter: ExecutionFilter = {},
  listing: ListingOrder = {},
): Promise<ExecutionSummary[]> =>
  (await executionListQuery(db, filter, listing).execute()).map((row) => summaryOf(row))

/** How many executions match `filter`, by status: one grouped count over the filter's index. */
export const countByStatus = async (
  db: Db,
  filter: ExecutionFilter = {},
): Promise<Record<ExecutionStatusColumn, number>> => {
  const rows = await filtered(
    db
      .selectFrom("akter.executions")
      .select("status")
      .select((eb) => eb.fn.countAll<number>().as("count")),
    filter,
  )
    .groupBy("status")
    .execute()
  const counts = { queued: 0, running: 0, suspended: 0, finished: 0 }
  for (const row of rows) counts[row.status] = Number(row.count)
  return counts
}

export interface ExecutionCount {
  readonly ownerType: string
  readonly workflow: string
  readonly status: ExecutionStatusColumn
  /** Set for finished executions. */
  readonly outcome: Outcome | undefined
  readonly count: number
}

/**
 * How many executions match `filter`, by owner type, workflow, status and (finished) outcome.
 * Finished executions' results are decoded to tell the outcome, so narrow the filter on a large
 * database, or pass `outcomes: false` to count finished executions without reading their results.
 *
 * @example
 * const counts = await tallyExecutions(db, { ownerIdPrefix: "demo-3f2a-" })
 */
export const tallyExecutions = async (
  db: Db,
  filter: ExecutionFilter = {},
  options: { readonly outcomes?: boolean } = {},
): Promise<ExecutionCount[]> => {
  const open =
    filter.status === "finished"
      ? []
      : await filtered(
          db
            .selectFrom("akter.executions")
            .select(["owner_type", "workflow", "status"])
            .select((eb) => eb.fn.countAll<number>().as("count")),
          filter,
        )
          .where("status", "<>", "finished")
          .groupBy(["owner_type", "workflow", "status"])
          .execute()
  const counts = new Map<string, ExecutionCount>()
  for (const row of open) {
    const entry = {
      ownerType: row.owner_type,
      workflow: row.workflow,
      status: row.status,
      outcome: undefined,
      count: Number(row.count),
    }
    counts.set(JSON.stringify([row.owner_type, row.workflow, row.status]), entry)
  }
  if (
    options.outcomes === false &&
    filter.status !== "queued" &&
    filter.status !== "running" &&
    filter.status !== "suspended"
  ) {
    const finished = await filtered(
      db
        .selectFrom("akter.executions")
        .select(["owner_type", "workflow"])
        .select((eb) => eb.fn.countAll<number>().as("count")),
      { ...filter, status: "finished" },
    )
      .groupBy(["owner_type", "workflow"])
      .execute()
    for (const row of finished) {
      counts.set(JSON.stringify([row.owner_type, row.workflow, "finished"]), {
        ownerType: row.owner_type,
        workflow: row.workflow,
        status: "finished",
        outcome: undefined,
        count: Number(row.count),
      })
    }
  } else if (filter.status === undefined || filter.status === "finished") {
    const finished = await filtered(
      db.selectFrom("akter.executions").select(["owner_type", "workflow", "result"]),
      { ...filter, status: "finished" },
    ).execute()
    for (const row of finished) {
      const outcome = outcomeOf(
        row.result === null ? { _tag: "Unreadable", defect: "" } : inspectExit(row.result),
      )
      const key = JSON.stringify([row.owner_type, row.workflow, "finished", outcome])
      const entry = counts.get(key)
      counts.set(key, {
        ownerType: row.owner_type,
        workflow: row.workflow,
        status: "finished",
        outcome,
        count: (entry?.count ?? 0) + 1,
      })
    }
  }
  return [...counts.values()].sort(
    (a, b) =>
      a.ownerType.localeCompare(b.ownerType) ||
      a.workflow.localeCompare(b.workflow) ||
      a.status.localeCompare(b.status) ||
      (a.outcome ?? "").localeCompare(b.outcome ?? ""),
  )
}

const callerOf = (text: string): { caller: unknown; defect?: string } => {
  try {
    return { caller: JSON.parse(text) }
  } catch {
    return { caller: text, defect: "caller: not JSON" }
  }
}

/**
 * The concurrency group of one execution and its place there, from its row (read under its routing
 * key by `showExecution`): its group's admitted and queued executions counted over the group's
 * index (migration 0007) — a group spans owners, so that count is sent only for an execution that
 * has a group; the limit comes from its start manifest. Undefined when the execution has no group
 * (its workflow declared no key).
 *
 * @example
 * const place = await concurrencyPlace(db, row)
 * // { key: "customerId", value: "c3", limit: 1, admitted: 1, queued: 2, queuedAhead: 1 }
 */
export const concurrencyPlace = async (
  db: Db,
  row: Pick<
    Row<"akter.executions">,
    | "tenant"
    | "owner_type"
    | "workflow"
    | "manifest_hash"
    | "status"
    | "concurrency_key"
    | "concurrency_value"
    | "queue_order"
  >,
): Promise<ConcurrencyPlace | undefined> => {
  const key = row.concurrency_key
  const value = row.concurrency_value
  if (key === null || value === null) return undefined
  const [counts, manifest] = await Promise.all([
    db
      .selectFrom("akter.executions")
      .select((eb) => [
        eb.fn
          .countAll<string>()
          .filterWhere("status", "in", ["running", "suspended"])
          .as("admitted"),
        eb.fn.countAll<string>().filterWhere("status", "=", "queued").as("queued"),
        eb.fn
          .countAll<string>()
          .filterWhere((inner) =>
            inner.and([
              inner("status", "=", "queued"),
              inner("queue_order", "<", row.queue_order ?? 0),
            ]),
          )
          .as("ahead"),
      ])
      .where("owner_type", "=", row.owner_type)
      .where("workflow", "=", row.workflow)
      .where("concurrency_value", "=", value)
      .where("tenant", "=", row.tenant)
      .where("concurrency_key", "=", key)
      .where("status", "<>", "finished")
      .executeTakeFirstOrThrow(),
    readManifest(db, row.owner_type, row.workflow, row.manifest_hash),
  ])
  return {
    key,
    value,
    limit: manifest?.manifest.concurrency?.limit,
    admitted: Number(counts.admitted),
    queued: Number(counts.queued),
    queuedAhead: row.status === "queued" ? Number(counts.ahead) : undefined,
  }
}

/**
 * One execution with everything recorded about it, or undefined when no such execution exists.
 * Throws `InvalidExecutionId` for a string akter did not issue.
 *
 * @example
 * const detail = await showExecution(db, run.executionId)
 * for (const step of detail?.steps ?? []) console.log(step.step, step.attempt, step.exit)
 */
export const showExecution = async (
  db: Db,
  executionId: string,
): Promise<ExecutionDetail | undefined> => {
  const address = decodeExecutionId(executionId)
  if (address instanceof InvalidExecutionId) throw address
  const { routingKey } = placeOwner(address)
  const row = await db
    .selectFrom("akter.executions")
    .select([
      ...summaryColumns,
      "input",
      "caller",
      "event_cursor",
      "parent_execution_id",
      "parent_step",
      "parent_awaits",
      "parent_close",
      "concurrency_key",
      "concurrency_value",
      "queue_order",
    ])
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .executeTakeFirst()
  if (row === undefined) return undefined
  const [stepRows, timer] = await Promise.all([
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
        "child_id",
      ])
      .where("routing_key", "=", routingKey)
      .where("execution_id", "=", executionId)
      .orderBy("started_at_ms")
      .orderBy("step")
      .orderBy("attempt")
      .execute(),
    db
      .selectFrom("akter.outbox")
      .select(["due_at_ms", "attempts"])
      .where("routing_key", "=", routingKey)
      .where("kind", "=", "timer")
      .where("id", "=", executionId)
      .executeTakeFirst(),
  ])
  const defects: string[] = []
  const input = inspectValue(row.input)
  if (!input.readable) defects.push(`input: ${input.defect}`)
  const result = row.result === null ? undefined : inspectExit(row.result)
  if (result?._tag === "Unreadable") defects.push(`result: ${result.defect}`)
  const caller = callerOf(row.caller)
  if (caller.defect !== undefined) defects.push(caller.defect)
  const markers: { name: string; value: number }[] = []
  const steps: InspectedStep[] = []
  for (const step of stepRows) {
    if (step.kind === "version") {
      markers.push({ name: step.step, value: step.version ?? 0 })
      continue
    }
    const exit = step.exit === null ? undefined : inspectExit(step.exit)
    if (exit?._tag === "Unreadable") {
      defects.push(`step ${step.step} attempt ${step.attempt}: ${exit.defect}`)
    }
    steps.push({
      step: step.step,
      attempt: step.attempt,
      kind: step.kind,
      settled: step.exit !== null,
      exit,
      dueAtMs: step.due_at_ms,
      wait:
        step.wait_event === null
          ? undefined
          : {
              event: step.wait_event,
              after: step.wait_after ?? 0,
              scanned: step.scanned,
              matched: step.matched,
            },
      startedAtMs: step.started_at_ms,
      settledAtMs: step.settled_at_ms,
      child: step.child_id ?? undefined,
    })
  }
  const concurrency = await concurrencyPlace(db, row)
  return {
    ...summaryOf(row),
    caller: caller.caller,
    eventCursor: row.event_cursor,
    input,
    result,
    markers: markers.sort((a, b) => a.name.localeCompare(b.name)),
    steps,
    timer: timer === undefined ? undefined : { dueAtMs: timer.due_at_ms, attempts: timer.attempts },
    defects,
    concurrency,
    parent:
      row.parent_execution_id === null
        ? undefined
        : {
            executionId: row.parent_execution_id,
            step: row.parent_step ?? "",
            awaits: row.parent_awaits,
            parentClose: row.parent_close ?? "leave",
          },
  }
}

/** A step row as the demo's crash check sees it: which attempt, and whether it was settled. */
export interface RecordedStep {
  readonly executionId: string
  readonly step: string
  readonly attempt: number
  readonly kind: StepKindColumn
  readonly settled: boolean
}

/**
 * Every step row of the executions matching `filter` (markers included), at one moment.
 *
 * @example
 * const atTheCrash = await recordedSteps(db, { ownerIdPrefix: "demo-3f2a-" })
 */
export const recordedSteps = async (
  db: Db,
  filter: ExecutionFilter = {},
): Promise<RecordedStep[]> => {
  const ids = filtered(db.selectFrom("akter.executions").select("execution_id"), filter)
  const rows = await db
    .selectFrom("akter.steps")
    .select(["execution_id", "step", "attempt", "kind"])
    .select((eb) => eb("exit", "is not", null).as("settled"))
    .where("execution_id", "in", ids)
    .execute()
  return rows.map((row) => ({
    executionId: row.execution_id,
    step: row.step,
    attempt: row.attempt,
    kind: row.kind,
    settled: row.settled === true,
  }))
}

/** A `start` step's staged start, waiting in the outbox for a runner to relay it. */
export interface StagedStart {
  readonly executionId: string
  readonly ownerType: string
  readonly ownerId: string
  readonly dueAtMs: number
  readonly attempts: number
}

/** The staged starts of matching owners' executions that no runner has relayed yet. */
export const stagedStarts = async (
  db: Db,
  filter: Pick<ExecutionFilter, "ownerIdPrefix">,
): Promise<StagedStart[]> => {
  let query = db
    .selectFrom("akter.outbox")
    .select(["id", "owner_type", "owner_id", "due_at_ms", "attempts"])
    .where("kind", "=", "start")
  if (filter.ownerIdPrefix !== undefined) {
    query = query.where("owner_id", "like", startsWith(filter.ownerIdPrefix))
  }
  return (await query.orderBy("due_at_ms").limit(100).execute()).map((row) => ({
    executionId: row.id,
    ownerType: row.owner_type,
    ownerId: row.owner_id,
    dueAtMs: row.due_at_ms,
    attempts: row.attempts,
  }))
}

/** Whether akter's tables exist in this database (inspect never migrates). */
export const hasAkterTables = async (db: Db): Promise<boolean> => {
  const { rows } = await sql<{
    found: string | null
  }>`SELECT to_regclass('akter.executions')::text AS found`.execute(db)
  return rows[0]?.found != null
}
