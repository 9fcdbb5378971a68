/**
 * Every statement that touches `akter.executions`. Writers run inside a transaction the caller
 * holds (fenced for the engine, owner-locked for clients); each says which invariant it keeps.
 */
import { sql } from "kysely"
import type { ExecutionStatusColumn, Queryable, Tx } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import type { OwnerPlacement } from "../owners/routing.js"

export interface ExecutionRow {
  readonly execution_id: string
  readonly tenant: string
  readonly owner_type: string
  readonly owner_id: string
  readonly workflow: string
  readonly execution_key: string
  readonly manifest_hash: string
  readonly input: Buffer
  readonly caller: string
  readonly event_cursor: number
  readonly status: ExecutionStatusColumn
  readonly interrupt: boolean
  readonly result: Buffer | null
  readonly started_at_ms: number
  readonly finished_at_ms: number | null
}

export interface NewExecution {
  readonly owner: OwnerPlacement
  readonly executionId: string
  readonly workflow: string
  readonly key: string
  readonly manifestHash: string
  readonly input: Buffer
  readonly caller: string
}

/**
 * Inserts a new execution with its event cursor at the owner's current sequence, so every event
 * emitted after the start is visible to its waits. A second start of the same id inserts nothing
 * and returns false: it attaches, and nothing is rewritten.
 */
export const insertExecution = async (
  tx: Tx,
  clock: DatabaseClock,
  execution: NewExecution,
): Promise<boolean> => {
  const { owner } = execution
  const { rows } = await sql<{ inserted: number }>`
    INSERT INTO akter.executions (routing_key, execution_id, bucket, tenant, owner_type, owner_id,
      workflow, execution_key, manifest_hash, input, caller, event_cursor, status, started_at_ms)
    SELECT o.routing_key, ${execution.executionId}, ${owner.bucket}, o.tenant, o.owner_type,
      o.owner_id, ${execution.workflow}, ${execution.key}, ${execution.manifestHash},
      ${execution.input}, ${execution.caller}, o.event_sequence, 'running', ${nowMs(clock)}
    FROM akter.owners o
    WHERE o.routing_key = ${owner.routingKey}::bigint AND o.tenant = ${owner.tenant}
      AND o.owner_type = ${owner.ownerType} AND o.owner_id = ${owner.ownerId}
    ON CONFLICT (routing_key, execution_id) DO NOTHING
    RETURNING 1 AS inserted`.execute(tx)
  return rows.length > 0
}

export const readExecution = async (
  db: Queryable,
  routingKey: string,
  executionId: string,
): Promise<ExecutionRow | undefined> =>
  db
    .selectFrom("akter.executions")
    .select([
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
    ])
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .executeTakeFirst()

export interface ExecutionState {
  readonly status: ExecutionStatusColumn
  readonly interrupt: boolean
  readonly result: Buffer | null
}

export const readExecutionState = async (
  db: Queryable,
  routingKey: string,
  executionId: string,
): Promise<ExecutionState | undefined> =>
  db
    .selectFrom("akter.executions")
    .select(["status", "interrupt", "result"])
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .executeTakeFirst()

/** A replaying execution shows as running, never as suspended. */
export const markRunning = async (tx: Tx, routingKey: string, executionId: string) => {
  await tx
    .updateTable("akter.executions")
    .set({ status: "running" })
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .where("status", "=", "suspended")
    .execute()
}

/** Only a running execution suspends; a finished one stays finished. */
export const markSuspended = async (tx: Tx, routingKey: string, executionId: string) => {
  await tx
    .updateTable("akter.executions")
    .set({ status: "suspended" })
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .where("status", "=", "running")
    .execute()
}

/**
 * Records the result. Exactly one terminal result is recorded: the update matches only while the
 * execution is not finished, and the caller deletes steps and timer only when it matched.
 */
export const finishExecution = async (
  tx: Tx,
  clock: DatabaseClock,
  routingKey: string,
  executionId: string,
  result: Buffer,
): Promise<boolean> => {
  const { rows } = await sql<{ finished: number }>`
    UPDATE akter.executions
    SET status = 'finished', result = ${result}, finished_at_ms = ${nowMs(clock)}
    WHERE routing_key = ${routingKey}::bigint AND execution_id = ${executionId}
      AND status <> 'finished'
    RETURNING 1 AS finished`.execute(tx)
  return rows.length > 0
}

/**
 * Sets the interrupt flag of an open execution; returns false for a finished or unknown one, so an
 * interrupt after completion changes nothing.
 */
export const requestInterrupt = async (
  tx: Tx,
  routingKey: string,
  executionId: string,
): Promise<boolean> => {
  const rows = await tx
    .updateTable("akter.executions")
    .set({ interrupt: true })
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .where("status", "<>", "finished")
    .returning("status")
    .execute()
  return rows.length > 0
}

/** A wait that matched an event moves the execution's cursor past it, never back. */
export const advanceCursor = async (
  tx: Tx,
  routingKey: string,
  executionId: string,
  sequence: number,
) => {
  await sql`
    UPDATE akter.executions SET event_cursor = GREATEST(event_cursor, ${sequence}::bigint)
    WHERE routing_key = ${routingKey}::bigint AND execution_id = ${executionId}`.execute(tx)
}

/** Moves an execution onto the runner's manifest, only from the manifest the runner judged. */
export const adoptManifest = async (
  tx: Tx,
  routingKey: string,
  executionId: string,
  from: string,
  to: string,
) => {
  await tx
    .updateTable("akter.executions")
    .set({ manifest_hash: to })
    .where("routing_key", "=", routingKey)
    .where("execution_id", "=", executionId)
    .where("manifest_hash", "=", from)
    .execute()
}
