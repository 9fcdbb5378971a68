/**
 * The owner's event log. Sequences are reserved by advancing the owner's `event_sequence` under its
 * row lock (owners/fence.ts `reserveSequencePart`, with the owner row's other statements), so each
 * owner has one gap-free order that waits read after their cursor.
 */
import { sql } from "kysely"
import type { Queryable } from "../storage/database.js"
import { part, type StatementPart } from "../storage/statementParts.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import type { OwnerPlacement } from "../owners/routing.js"

/** Appends the event at its reserved sequence: one gap-free order per owner. */
export const appendEventPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  sequence: number,
  name: string,
  payload: Buffer,
): StatementPart =>
  part(
    "event",
    () => sql`INSERT INTO akter.events (routing_key, tenant, owner_type, owner_id, sequence, name,
        payload, emitted_at_ms)
      VALUES (${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId},
        ${sequence}::bigint, ${name}, ${payload}, ${nowMs(clock)})
      RETURNING sequence`,
  )

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
