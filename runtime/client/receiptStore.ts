/**
 * Statements on `akter.receipts`: the command ids already applied to an owner, so a client that
 * retries an emit or an interrupt after losing the reply applies it once.
 */
import { sql } from "kysely"
import type { Tx } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import type { OwnerPlacement } from "../owners/routing.js"

/**
 * Records that a command is being applied, or returns the outcome of its earlier application (then
 * the caller applies nothing). The insert comes first, so of two concurrent retries one inserts and
 * the other waits on the key and then reads the first one's outcome.
 */
export const claimReceipt = async (
  tx: Tx,
  clock: DatabaseClock,
  owner: OwnerPlacement,
  commandId: string,
  kind: string,
): Promise<{ readonly earlier: string | undefined }> => {
  const { rows } = await sql<{ inserted: number }>`
    INSERT INTO akter.receipts (routing_key, tenant, owner_type, owner_id, command_id, kind, outcome,
      created_at_ms)
    VALUES (${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId},
      ${commandId}, ${kind}, '', ${nowMs(clock)})
    ON CONFLICT DO NOTHING
    RETURNING 1 AS inserted`.execute(tx)
  if (rows.length > 0) return { earlier: undefined }
  const earlier = await sql<{ outcome: string }>`
    SELECT outcome FROM akter.receipts
    WHERE routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
      AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId}
      AND command_id = ${commandId}`.execute(tx)
  return { earlier: earlier.rows[0]?.outcome ?? "" }
}

/** Stores the outcome a retried command returns. */
export const completeReceipt = async (
  tx: Tx,
  owner: OwnerPlacement,
  commandId: string,
  outcome: string,
) => {
  await sql`
    UPDATE akter.receipts SET outcome = ${outcome}
    WHERE routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
      AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId}
      AND command_id = ${commandId}`.execute(tx)
}
