/**
 * The owner's event log. Sequences are reserved by advancing the owner's `event_sequence` under its
 * row lock, so each owner has one gap-free order that waits read after their cursor.
 */
import { sql } from "kysely"
import type { Queryable, Tx } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import type { OwnerPlacement } from "../owners/routing.js"

/**
 * Appends one event and returns its sequence. Locks the owner row (the increment), which orders the
 * append against every suspending execution of the owner.
 */
export const appendEvent = async (
  tx: Tx,
  clock: DatabaseClock,
  owner: OwnerPlacement,
  name: string,
  payload: Buffer,
): Promise<number> => {
  const { rows } = await sql<{ sequence: number }>`
    WITH reserved AS (
      UPDATE akter.owners SET event_sequence = event_sequence + 1
      WHERE routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
        AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId}
      RETURNING event_sequence)
    INSERT INTO akter.events (routing_key, tenant, owner_type, owner_id, sequence, name, payload,
      emitted_at_ms)
    SELECT ${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId},
      reserved.event_sequence, ${name}, ${payload}, ${nowMs(clock)}
    FROM reserved
    RETURNING sequence`.execute(tx)
  return rows[0]!.sequence
}

export interface LoggedEvent {
  readonly sequence: number
  readonly payload: Buffer
  readonly payload_version: number
}

/** The owner's events of one name after a sequence, oldest first, a page at a time. */
export const eventsAfter = async (
  db: Queryable,
  owner: OwnerPlacement,
  name: string,
  after: number,
  limit: number,
): Promise<LoggedEvent[]> =>
  db
    .selectFrom("akter.events")
    .select(["sequence", "payload", "payload_version"])
    .where("routing_key", "=", owner.routingKey)
    .where("tenant", "=", owner.tenant)
    .where("owner_type", "=", owner.ownerType)
    .where("owner_id", "=", owner.ownerId)
    .where("name", "=", name)
    .where("sequence", ">", after)
    .orderBy("sequence")
    .limit(limit)
    .execute()
