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
