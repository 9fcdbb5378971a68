/**
 * Statements on `akter.owners` other than the fence: creating an owner on first use.
 */
import { sql } from "kysely"
import type { Tx } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import type { OwnerPlacement } from "./routing.js"

/** Creates the owner row if this is the owner's first start or event; an existing row is kept. */
export const ensureOwner = async (tx: Tx, clock: DatabaseClock, owner: OwnerPlacement) => {
  await sql`
    INSERT INTO akter.owners (routing_key, tenant, owner_type, owner_id, created_at_ms)
    VALUES (${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId},
      ${nowMs(clock)})
    ON CONFLICT DO NOTHING`.execute(tx)
}
