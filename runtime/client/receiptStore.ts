/**
 * Statements on `akter.receipts`: the command ids already applied to an owner, so a client that
 * retries an emit after losing the reply applies it once.
 */
import { sql } from "kysely"
import type { Tx } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import { part, type StatementPart } from "../storage/statementParts.js"
import type { OwnerPlacement } from "../owners/routing.js"

const matchesReceipt = (owner: OwnerPlacement, commandId: string) =>
  sql`routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
    AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId} AND command_id = ${commandId}`

/**
 * Records that a command is being applied; empty when it was applied before (then the statement
 * applies nothing). Of two concurrent retries one inserts, the other waits on the key and finds it.
 */
export const claimReceiptPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  commandId: string,
  kind: string,
): StatementPart =>
  part(
    "receipt",
    () => sql`INSERT INTO akter.receipts (routing_key, tenant, owner_type, owner_id, command_id, kind,
        outcome, created_at_ms)
      VALUES (${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId},
        ${commandId}, ${kind}, '', ${nowMs(clock)})
      ON CONFLICT DO NOTHING
      RETURNING 1 AS claimed`,
  )

/**
 * Records a command applied in one statement with its outcome, the event sequence `reserved` (a
 * part of the same statement) returns; empty when it was applied before, or nothing was reserved.
 */
export const recordReceiptPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  commandId: string,
  kind: string,
  reserved: string,
): StatementPart =>
  part(
    "receipt",
    () => sql`INSERT INTO akter.receipts (routing_key, tenant, owner_type, owner_id, command_id, kind,
        outcome, created_at_ms)
      SELECT ${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId},
        ${commandId}, ${kind}, r.event_sequence::text, ${nowMs(clock)}
      FROM ${sql.id(reserved)} r
      ON CONFLICT DO NOTHING
      RETURNING 1 AS claimed`,
  )

/** Stores the outcome a retried command returns. */
export const completeReceiptPart = (
  owner: OwnerPlacement,
  commandId: string,
  outcome: string,
): StatementPart =>
  part(
    "receipt_done",
    () => sql`UPDATE akter.receipts SET outcome = ${outcome} WHERE ${matchesReceipt(owner, commandId)}
      RETURNING 1`,
  )

/** The outcome of a command applied before (run as its own statement: it sees the earlier commit). */
export const earlierOutcome = async (
  tx: Tx,
  owner: OwnerPlacement,
  commandId: string,
): Promise<string | undefined> => {
  const row = await tx
    .selectFrom("akter.receipts")
    .select("outcome")
    .where("routing_key", "=", owner.routingKey)
    .where("tenant", "=", owner.tenant)
    .where("owner_type", "=", owner.ownerType)
    .where("owner_id", "=", owner.ownerId)
    .where("command_id", "=", commandId)
    .executeTakeFirst()
  return row?.outcome
}

/**
 * Retention: deletes up to `limit` receipts created before `cutoffMs`, skipping rows a writer holds.
 * A client retrying a command after that long applies it anew: the keep period is also the window in
 * which retries are recognized. Returns how many it deleted.
 */
export const pruneExpiredReceipts = async (
  tx: Tx,
  cutoffMs: number,
  limit: number,
): Promise<number> => {
  const { rows } = await sql<{ n: number }>`
    WITH doomed AS (
      SELECT routing_key, tenant, owner_type, owner_id, command_id FROM akter.receipts
      WHERE created_at_ms < ${cutoffMs}::bigint
      ORDER BY created_at_ms
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED),
    deleted AS (
      DELETE FROM akter.receipts r USING doomed
      WHERE r.routing_key = doomed.routing_key AND r.tenant = doomed.tenant
        AND r.owner_type = doomed.owner_type AND r.owner_id = doomed.owner_id
        AND r.command_id = doomed.command_id
      RETURNING 1)
    SELECT count(*)::int AS n FROM deleted`.execute(tx)
  return rows[0]!.n
}
