/**
 * The generation fence. An owner's `generation` is the epoch of the one activation allowed to write
 * its executions; a runner takes it by advancing it, and every engine write first locks the owner row
 * and checks that the generation is still the one it took. A runner that lost the owner — its lease
 * expired, it was paused, another runner activated the owner — commits nothing.
 */
import { sql } from "kysely"
import type { Db, Tx } from "../storage/database.js"
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

/**
 * Locks the owner row and checks the generation, as the first statement of a write transaction.
 * Holding this lock is also what orders an engine write against event appends on the same owner.
 */
export const checkFence = async (tx: Tx, activation: Activation): Promise<void> => {
  const { owner } = activation
  const { rows } = await sql<{ generation: number }>`
    SELECT generation FROM akter.owners
    WHERE routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
      AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId}
    FOR UPDATE`.execute(tx)
  if (rows[0]?.generation !== activation.generation) {
    throw new StaleGeneration(owner, activation.generation)
  }
}

/** Runs `write` in one transaction behind the fence: it commits only under the held generation. */
export const fenced = <A>(
  db: Db,
  activation: Activation,
  write: (tx: Tx) => Promise<A>,
): Promise<A> =>
  db.transaction().execute(async (tx) => {
    await checkFence(tx, activation)
    return write(tx)
  })
