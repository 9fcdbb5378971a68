/**
 * What the rolling-deploy test reads of one order in the database: its step rows and status while
 * it is open, and, from the write audit (test/support/writeAudit.ts), which runner process settled
 * each step, took the owner's fence and finished it — rows that outlive the finish, which deletes
 * the steps. Runner processes are told apart by their connections' `application_name`.
 */
import { sql } from "kysely"
import type { Queryable } from "../../runtime/storage/database.js"
import { readWriteAudit } from "../support/writeAudit.js"

export interface Order {
  readonly ownerId: string
  readonly executionId: string
  /** The release of the client that started it (its start manifest). */
  readonly release: 1 | 2 | 3
}

export interface StepRow {
  readonly step: string
  readonly kind: string
  /** Whether some attempt has a recorded exit. */
  readonly settled: boolean
}

/** The order's step rows (markers included), attempts collapsed, by step name. */
export const stepRows = async (db: Queryable, order: Order): Promise<StepRow[]> => {
  const { rows } = await sql<StepRow>`
    SELECT step, kind, bool_or(exit IS NOT NULL) AS settled FROM akter.steps
    WHERE execution_id = ${order.executionId} GROUP BY step, kind ORDER BY step`.execute(db)
  return rows
}

export const statusOf = async (db: Queryable, order: Order): Promise<string> => {
  const { rows } = await sql<{ status: string }>`
    SELECT status FROM akter.executions WHERE execution_id = ${order.executionId}`.execute(db)
  if (rows[0] === undefined) throw new Error(`no execution ${order.executionId}`)
  return rows[0].status
}

/** Which runner settled each step of the order, by the write audit. */
export const settledBy = async (db: Queryable, order: Order): Promise<Record<string, string>> => {
  const audit = await readWriteAudit(db)
  return Object.fromEntries(
    audit.settles
      .filter((settle) => settle.executionId === order.executionId)
      .map((settle) => [settle.step, settle.writer]),
  )
}

/**
 * Which runner settled each step of the order and, once it finished, which finished it (`finish`).
 * The last step's exit is written either on its own or with the result, in the statement that
 * deletes the steps (a matter of timing); written on its own by the finisher, it is folded into
 * `finish`.
 *
 * @example
 * expect(await recordedBy(db, order, "ship")).toEqual({ reserve: "runner-1", paid: "runner-2", finish: "runner-2" })
 */
export const recordedBy = async (
  db: Queryable,
  order: Order,
  lastStep: string,
): Promise<Record<string, string>> => {
  const { rows } = await sql<{ writer: string }>`
    SELECT writer FROM akter_audit.finishes WHERE execution_id = ${order.executionId}
    ORDER BY id`.execute(db)
  const settled = await settledBy(db, order)
  if (rows.length === 0) return settled
  const finish = rows.map((row) => row.writer).join(", ")
  const { [lastStep]: last, ...before } = settled
  return {
    ...before,
    ...(last === undefined || last === finish ? {} : { [lastStep]: last }),
    finish,
  }
}

/** Which runners took the order's owner, one per generation, by the write audit. */
export const activatedBy = async (
  db: Queryable,
  ownerType: string,
  order: Order,
): Promise<string[]> => {
  const { rows } = await sql<{ writer: string }>`
    SELECT writer FROM akter_audit.activations
    WHERE owner_type = ${ownerType} AND owner_id = ${order.ownerId}
    ORDER BY generation`.execute(db)
  return rows.map((row) => row.writer)
}

/** How many executions are open, and when the oldest of them (or of `orders`) started. */
export const openExecutions = async (
  db: Queryable,
  orders?: readonly Order[],
): Promise<{ count: number; oldest: number | null }> => {
  const among =
    orders === undefined
      ? sql`true`
      : sql`execution_id = ANY(${orders.map((order) => order.executionId)}::text[])`
  const { rows } = await sql<{ count: number; oldest: number | null }>`
    SELECT count(*)::int AS count, min(started_at_ms) AS oldest FROM akter.executions
    WHERE status <> 'finished' AND ${among}`.execute(db)
  return rows[0]!
}

/** The workflow manifests a runner accepted (a start only records its manifest, accepted at 0). */
export const acceptedManifests = async (db: Queryable): Promise<string[]> => {
  const { rows } = await sql<{ manifest_hash: string }>`
    SELECT manifest_hash FROM akter.manifests WHERE accepted_at_ms > 0
    ORDER BY manifest_hash`.execute(db)
  return rows.map((row) => row.manifest_hash)
}
