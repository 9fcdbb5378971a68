/**
 * The kysely view of akter's tables (migrations/ are the truth; this mirrors them). `bigint` columns
 * are read as JavaScript numbers: every one holds epoch milliseconds, a sequence or a counter, far
 * below 2^53. The routing key is the exception — it uses all 64 bits — so it is written as a decimal
 * string and never read back as a number (queries that need it select `routing_key::text`).
 */
import type { ColumnType, Generated, Kysely, Selectable, Transaction } from "kysely"
import type { InterruptCause } from "../model/exit.js"
import type { StepKind } from "../model/stepKinds/stepKinds.js"
import type { ParentClose } from "../model/stepKinds/start.js"

/** A decimal string of a signed 64-bit integer. */
export type RoutingKey = string

/** Compared and written as a string; select it only as `routing_key::text` (see above). */
type RoutingKeyColumn = RoutingKey

export interface OwnersTable {
  routing_key: RoutingKeyColumn
  tenant: string
  owner_type: string
  owner_id: string
  generation: Generated<number>
  event_sequence: Generated<number>
  created_at_ms: number
}

export interface EventsTable {
  routing_key: RoutingKeyColumn
  tenant: string
  owner_type: string
  owner_id: string
  sequence: number
  name: string
  payload: Buffer
  payload_version: Generated<number>
  emitted_at_ms: number
}

/** `queued`: waiting for its concurrency group to admit it (migration 0007); no timer, no pass. */
export type ExecutionStatusColumn = "queued" | "running" | "suspended" | "finished"
/** How a finished execution ended, recorded with its result (migration 0006). */
export type ExecutionOutcome = "succeeded" | "failed" | "interrupted" | "defect"
/** Why an execution was interrupted (migration 0010). */
export type { InterruptCause }

export interface ExecutionsTable {
  routing_key: RoutingKeyColumn
  execution_id: string
  bucket: number
  tenant: string
  owner_type: string
  owner_id: string
  workflow: string
  execution_key: string
  manifest_hash: string
  input: Buffer
  caller: string
  event_cursor: number
  status: ExecutionStatusColumn
  interrupt: Generated<boolean>
  result: Buffer | null
  started_at_ms: number
  finished_at_ms: number | null
  /** Set with the result; null while open, and for results recorded before migration 0006. */
  outcome: Generated<ExecutionOutcome | null>
  /** A caller outside the runner's process awaits the result: the finish notifies. */
  awaited: Generated<boolean>
  /** The concurrency key path it started under; null when its workflow declared none (0007). */
  concurrency_key: Generated<string | null>
  /** The value of its input at that path, as text: with the path, its concurrency group. */
  concurrency_value: Generated<string | null>
  /** Its place in its group's queue: admissions take the lowest first. */
  queue_order: Generated<number | null>
  /** The execution whose `start` step started this one (migration 0009); null otherwise. */
  parent_routing_key: Generated<RoutingKeyColumn | null>
  parent_execution_id: Generated<string | null>
  parent_step: Generated<string | null>
  /** The parent's step awaits this execution's result: its finish wakes the parent. */
  parent_awaits: Generated<boolean>
  /** What this execution does when its parent ends: `interrupt` (with it) or `leave` (runs on). */
  parent_close: Generated<ParentClose | null>
  /** When the execution is interrupted if still open (migration 0010); null: no deadline. */
  deadline_at_ms: Generated<number | null>
  /** Why it was interrupted, or is being (migration 0010); null: not, or before 0010 (a request). */
  interrupted_by: Generated<InterruptCause | null>
}

/** A step row's kind: a step kind, or `version` for a version marker's row. */
export type StepKindColumn = StepKind | "version"

export interface StepsTable {
  routing_key: RoutingKeyColumn
  execution_id: string
  step: string
  attempt: number
  kind: StepKindColumn
  exit: Buffer | null
  due_at_ms: number | null
  wait_event: string | null
  wait_after: number | null
  scanned: number | null
  matched: number | null
  version: number | null
  started_at_ms: number
  settled_at_ms: number | null
  /** start: the execution it started (migration 0009). */
  child_id: Generated<string | null>
}

export type OutboxKind = "timer" | "start"

export interface OutboxTable {
  routing_key: RoutingKeyColumn
  kind: OutboxKind
  id: string
  bucket: number
  tenant: string
  owner_type: string
  owner_id: string
  due_at_ms: number
  attempts: Generated<number>
  /** Emits and interrupts that made the timer due (see migration 0003). */
  pokes: Generated<number>
  wanted_hash: Generated<string | null>
  payload: Buffer | null
}

export interface ManifestsTable {
  owner_type: string
  workflow: string
  manifest_hash: string
  manifest: ColumnType<unknown, string, string>
  accepted_at_ms: number
}

export interface ReceiptsTable {
  routing_key: RoutingKeyColumn
  tenant: string
  owner_type: string
  owner_id: string
  command_id: string
  kind: string
  outcome: string
  created_at_ms: number
}

export interface RunnersTable {
  runner_id: string
  started_at_ms: number
  heartbeat_at_ms: number
  info: ColumnType<unknown, string | undefined, string>
}

export interface LeasesTable {
  bucket: number
  runner_id: string | null
  epoch: Generated<number>
  expires_at_ms: Generated<number>
}

export interface SchedulesTable {
  owner_type: string
  schedule: string
  definition: string
  next_tick_ms: number | null
  queued_tick_ms: number | null
  last_execution_id: string | null
  last_tick_ms: number | null
  paused: Generated<boolean>
  claimed_by: string | null
  claimed_until_ms: Generated<number>
  updated_at_ms: number
}

export interface MigrationsTable {
  name: string
  checksum: string
  applied_at_ms: number
}

export interface Database {
  "akter.owners": OwnersTable
  "akter.events": EventsTable
  "akter.executions": ExecutionsTable
  "akter.steps": StepsTable
  "akter.outbox": OutboxTable
  "akter.manifests": ManifestsTable
  "akter.receipts": ReceiptsTable
  "akter.runners": RunnersTable
  "akter.leases": LeasesTable
  "akter.schedules": SchedulesTable
  "akter.migrations": MigrationsTable
}

/**
 * A row of a table as a query reads it — the one row type of each table, derived from its
 * interface above, so a new column is declared once. Modules that read only some columns `Pick`
 * them from it.
 */
export type Row<T extends keyof Database> = Readonly<Selectable<Database[T]>>

export type Db = Kysely<Database>
export type Tx = Transaction<Database>
/** Either the database or a transaction on it: queries that run in both take this. */
export type Queryable = Db | Tx
