/**
 * The owner's event log. Sequences are reserved by advancing the owner's `event_sequence` under its
 * row lock (owners/fence.ts `reserveSequencePart`, with the owner row's other statements), so each
 * owner has one gap-free order that waits read after their cursor.
 */
import { sql, type RawBuilder } from "kysely"
import type { Queryable } from "../storage/database.js"
import { part, type StatementPart } from "../storage/statementParts.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"
import type { OwnerPlacement } from "../owners/routing.js"

/** Appends the event at its reserved sequence: one gap-free order per owner. */
export const appendEventPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  /** The sequence reserved, or the part of the same statement that reserves it (none: no event). */
  sequence: number | { readonly reservedBy: string },
  name: string,
  payload: Buffer,
): StatementPart =>
  part(
    "event",
    () => sql`INSERT INTO akter.events (routing_key, tenant, owner_type, owner_id, sequence, name,
        payload, emitted_at_ms)
      SELECT ${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId},
        ${typeof sequence === "number" ? sql`${sequence}::bigint` : sql`r.event_sequence`}, ${name},
        ${payload}, ${nowMs(clock)}
      ${typeof sequence === "number" ? sql`` : sql`FROM ${sql.id(sequence.reservedBy)} r`}
      RETURNING sequence`,
  )

export interface LoggedEvent {
  readonly sequence: number
  readonly payload: Buffer
  readonly payload_version: number
}

/**
 * An event an emit of this process committed, handed to a pass of it waiting in memory, with what
 * makes it the next of its name after a wait's cursor: the sequence of the owner's event of that
 * name before it (0 for none). A wait that has scanned at least that far may take it without
 * reading the log, since sequences below it are all taken and committed (each emit reserves its
 * own under the owner's lock, held until it commits).
 */
export interface HandedEvent {
  readonly name: string
  readonly sequence: number
  readonly previous: number
  readonly payload: Buffer
}

/**
 * The sequence of the owner's last event of this name before `sequence` (0 for none), as a
 * statement's column: in a statement whose snapshot sees every emit of the owner before it (one
 * that holds the owner's lock, or checked the owner unchanged since its snapshot).
 */
export const previousOfNameSql = (
  owner: OwnerPlacement,
  name: string,
  sequence: RawBuilder<unknown>,
): RawBuilder<number> =>
  sql<number>`(SELECT coalesce(max(sequence), 0) FROM akter.events
    WHERE routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
      AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId} AND name = ${name}
      AND sequence < ${sequence})`

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

/**
 * Retention: deletes up to `limit` events emitted before `cutoffMs` that no open execution of their
 * owner can still read. A wait reads the events after its registration (`wait_after`), and a wait
 * not yet registered reads those after its execution's cursor, so an event at or below every open
 * execution's cursor and every pending wait's registration is never read again. A settled wait
 * recorded the payload it matched, so replays do not need the event either; executions that start
 * later set their cursor at the owner's last sequence, past every existing event. Rows a writer
 * holds are skipped. Returns how many it deleted.
 */
export const pruneUnreadableEvents = async (
  tx: Queryable,
  cutoffMs: number,
  limit: number,
): Promise<number> => {
  const { rows } = await sql<{ n: number }>`
    WITH doomed AS (
      SELECT ev.routing_key, ev.tenant, ev.owner_type, ev.owner_id, ev.sequence
      FROM akter.events ev
      WHERE ev.emitted_at_ms < ${cutoffMs}::bigint
        AND NOT EXISTS (
          SELECT 1 FROM akter.executions e
          WHERE e.routing_key = ev.routing_key AND e.tenant = ev.tenant
            AND e.owner_type = ev.owner_type AND e.owner_id = ev.owner_id
            AND e.status <> 'finished' AND e.event_cursor < ev.sequence)
        AND NOT EXISTS (
          SELECT 1 FROM akter.steps s
          JOIN akter.executions e
            ON e.routing_key = s.routing_key AND e.execution_id = s.execution_id
          WHERE s.routing_key = ev.routing_key AND s.kind = 'wait' AND s.exit IS NULL
            AND e.tenant = ev.tenant AND e.owner_type = ev.owner_type
            AND e.owner_id = ev.owner_id AND s.wait_after < ev.sequence)
      ORDER BY ev.emitted_at_ms
      LIMIT ${limit}
      FOR UPDATE OF ev SKIP LOCKED),
    deleted AS (
      DELETE FROM akter.events ev USING doomed
      WHERE ev.routing_key = doomed.routing_key AND ev.tenant = doomed.tenant
        AND ev.owner_type = doomed.owner_type AND ev.owner_id = doomed.owner_id
        AND ev.sequence = doomed.sequence
      RETURNING 1)
    SELECT count(*)::int AS n FROM deleted`.execute(tx)
  return rows[0]!.n
}
