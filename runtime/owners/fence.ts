/**
 * The generation fence. An owner's `generation` is the epoch of the one activation allowed to write
 * its executions; a runner takes it by advancing it, and every engine write first locks the owner row
 * and checks that the generation is still the one it took. A runner that lost the owner — its lease
 * expired, it was paused, another runner activated the owner — commits nothing.
 */
import { sql } from "kysely"
import type { Db } from "../storage/database.js"
import type { StatementPart } from "../storage/statementParts.js"
import type { OwnerPlacement } from "./routing.js"

/** The owner was activated by someone else since this runner took it: the write did not happen. */
export class StaleGeneration extends Error {
  constructor(
    readonly owner: OwnerPlacement,
    readonly held: number,
  ) {
    super(
      `owner ${owner.ownerType}/${owner.ownerId} is no longer at generation ${held}; this runner lost it`,
    )
    this.name = "StaleGeneration"
  }
}

export interface Activation {
  readonly owner: OwnerPlacement
  readonly generation: number
}

/**
 * Activates an owner for this runner by advancing its generation; from this commit on, every writer
 * holding an older generation is refused.
 */
export const activateOwner = async (
  db: Db,
  owner: OwnerPlacement,
): Promise<Activation | undefined> => {
  const { rows } = await sql<{ generation: number }>`
    UPDATE akter.owners SET generation = generation + 1
    WHERE routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
      AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId}
    RETURNING generation`.execute(db)
  const row = rows[0]
  return row === undefined ? undefined : { owner, generation: row.generation }
}

/** The name every fenced part refers to: `EXISTS (SELECT 1 FROM fence)`. */
export const FENCE = "fence"

/**
 * The fence as the first part of a single-statement write: the owner row, locked, at the held
 * generation — or no row, and then no other part of the statement writes anything. The lock waits
 * out a concurrent activation and re-checks the generation on the row version it committed.
 */
export const fencePart = (activation: Activation): StatementPart => {
  const { owner } = activation
  return {
    name: FENCE,
    sql: sql`SELECT 1 AS held FROM akter.owners
      WHERE routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
        AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId}
        AND generation = ${activation.generation}::bigint
      FOR UPDATE`,
  }
}
