/**
 * The generation fence. An owner's `generation` is the epoch of the one activation allowed to write
 * its executions; a runner takes it by advancing it, and every engine write first locks the owner row
 * and checks that the generation is still the one it took. A runner that lost the owner — its lease
 * expired, it was paused, another runner activated the owner — commits nothing.
 */
import { sql } from "kysely"
import { faultPoint } from "../faults.js"
import type { StatementPart } from "../storage/statementParts.js"
import type { OwnerPlacement } from "./routing.js"

/** The owner was activated by someone else since this runner took it: the write did not happen. */
export class StaleGeneration extends Error {
  constructor(
    readonly owner: OwnerPlacement,
    readonly held: number | undefined,
  ) {
    super(
      `owner ${owner.ownerType}/${owner.ownerId} is no longer at generation ${held ?? "(activating)"}; this runner lost it`,
    )
    this.name = "StaleGeneration"
  }
}

/** The name every fenced part refers to: `EXISTS (SELECT 1 FROM fence)`. */
export const FENCE = "fence"

const matchesOwner = (owner: OwnerPlacement) =>
  sql`routing_key = ${owner.routingKey}::bigint AND tenant = ${owner.tenant}
    AND owner_type = ${owner.ownerType} AND owner_id = ${owner.ownerId}`

/**
 * The fence of a write under a held generation: the owner row, locked, at that generation — or no
 * row, and then no other part of the statement writes anything. The lock waits out a concurrent
 * activation and re-checks the generation on the row version it committed.
 */
const checkingFence = (owner: OwnerPlacement, generation: number): StatementPart => ({
  name: FENCE,
  sql: sql`SELECT generation AS held FROM akter.owners
    WHERE ${matchesOwner(owner)} AND generation = ${generation}::bigint
    FOR UPDATE`,
})

/**
 * The fence of an activating write: advances the owner's generation, so from this commit on every
 * writer holding an older one is refused, and the statement's other parts write under the new one.
 */
const activatingFence = (owner: OwnerPlacement): StatementPart => ({
  name: FENCE,
  sql: sql`UPDATE akter.owners SET generation = generation + 1
    WHERE ${matchesOwner(owner)}
    RETURNING generation AS held`,
})

/** A fenced statement's outcome: its result, and the generation its fence reported (none: stale). */
export interface FencedOutcome<A> {
  readonly result: A
  readonly generation: number | undefined
}

/**
 * A runner's activation of one owner. It is taken by the first write the runner makes for the
 * owner — that statement advances the generation instead of checking it — and every later write
 * checks the generation it took. A runner that only reads an owner, or finds it cannot replay its
 * executions, never takes it from whoever holds it.
 */
export class Activation {
  /** The generation this runner holds; undefined until its first write commits. */
  private generation: number | undefined = undefined
  private taking: Promise<void> | undefined

  constructor(readonly owner: OwnerPlacement) {}

  get held(): number | undefined {
    return this.generation
  }

  /**
   * Runs one statement behind the fence: the activating fence if the generation is not taken yet
   * (and no other write is taking it: writes wait for one that is), else the checking fence. Throws
   * `StaleGeneration` when the fence found no row, and then nothing was written.
   */
  async fenced<A>(write: (fence: StatementPart) => Promise<FencedOutcome<A>>): Promise<A> {
    while (this.generation === undefined && this.taking !== undefined) {
      await this.taking
    }
    const held = this.generation
    if (held !== undefined) {
      const outcome = await write(checkingFence(this.owner, held))
      if (outcome.generation === undefined) throw new StaleGeneration(this.owner, held)
      return outcome.result
    }
    let done!: () => void
    this.taking = new Promise<void>((resolve) => (done = resolve))
    try {
      faultPoint("activate.before")
      const outcome = await write(activatingFence(this.owner))
      if (outcome.generation === undefined) throw new StaleGeneration(this.owner, undefined)
      faultPoint("activate.after")
      this.generation = outcome.generation
      return outcome.result
    } finally {
      this.taking = undefined
      done()
    }
  }
}
