/**
 * The generation fence. An owner's `generation` is the epoch of the one activation allowed to write
 * its executions; a runner takes it by advancing it, and every engine write first locks the owner row
 * and checks that the generation is still the one it took. A runner that lost the owner — its lease
 * expired, it was paused, another runner activated the owner — commits nothing.
 */
import { sql } from "kysely"
import { faultPoint } from "../faults.js"
import { part, type StatementPart } from "../storage/statementParts.js"
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
 * A start folded into the first write of its execution's pass (the runner of the starting process
 * took it): the names of the start's parts that created the owner, if it was new, and that
 * inserted the execution, empty when it already existed.
 */
export interface FoldedStart {
  /** Creates a new owner at generation 1: created by this start, activated by this runner. */
  readonly ownerCreated: string
  readonly inserted: string
}

/** What a statement carrying a folded start did. */
export type FoldedStartOutcome<A> =
  | { readonly kind: "written"; readonly result: A }
  /** The execution existed: the start attaches, and nothing was written. */
  | { readonly kind: "attached" }
  /** The start committed, but the owner's generation had moved: nothing else was written. */
  | { readonly kind: "stale" }

const existsIn = (name: string) => sql`EXISTS (SELECT 1 FROM ${sql.id(name)})`

/**
 * The fence of a folded start under a held generation: the checking fence, found only if the start
 * created the execution, so the statement's other parts never write to an execution it attached to.
 */
const checkingStartFence = (
  owner: OwnerPlacement,
  generation: number,
  start: FoldedStart,
): StatementPart[] => [
  {
    name: FENCE,
    sql: sql`SELECT generation AS held FROM akter.owners
      WHERE ${matchesOwner(owner)} AND generation = ${generation}::bigint
        AND ${existsIn(start.inserted)}
      FOR UPDATE`,
  },
]

/**
 * The fence of a folded start that activates: a new owner was created at generation 1 by the start
 * itself (a sibling part's row is invisible to this statement's update); an existing one is
 * advanced here. Either only if the start created the execution: a start that attaches never
 * takes the owner from whoever holds it.
 */
const activatingStartFence = (owner: OwnerPlacement, start: FoldedStart): StatementPart[] => {
  const advanced = part(
    "advanced",
    () => sql`UPDATE akter.owners SET generation = generation + 1
      WHERE ${matchesOwner(owner)} AND ${existsIn(start.inserted)}
      RETURNING generation`,
  )
  return [
    advanced,
    {
      name: FENCE,
      sql: sql`SELECT generation AS held FROM ${sql.id(start.ownerCreated)}
          WHERE ${existsIn(start.inserted)}
        UNION ALL SELECT generation FROM ${sql.id(advanced.name)}`,
    },
  ]
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
    const outcome = await this.behindFence(
      (held) =>
        write(held === undefined ? activatingFence(this.owner) : checkingFence(this.owner, held)),
      (outcome) => outcome.generation,
    )
    if (outcome.generation === undefined) throw new StaleGeneration(this.owner, this.generation)
    return outcome.result
  }

  /**
   * Runs the statement carrying a folded start behind the fence the start's parts allow (see
   * `checkingStartFence`, `activatingStartFence`). An attaching start takes nothing and is not
   * stale; a start that committed under a generation this runner no longer holds is.
   */
  async fencedStart<A>(
    start: FoldedStart,
    write: (
      fence: readonly StatementPart[],
    ) => Promise<FencedOutcome<A> & { readonly created: boolean }>,
  ): Promise<FoldedStartOutcome<A>> {
    const outcome = await this.behindFence(
      (held) =>
        write(
          held === undefined
            ? activatingStartFence(this.owner, start)
            : checkingStartFence(this.owner, held, start),
        ),
      (outcome) => (outcome.created ? outcome.generation : undefined),
    )
    if (!outcome.created) return { kind: "attached" }
    if (outcome.generation === undefined) return { kind: "stale" }
    return { kind: "written", result: outcome.result }
  }

  /**
   * Runs `write` with the generation held, or takes it: one write at a time takes it, the others
   * wait for it. `taken` says which generation the write took (undefined: none).
   */
  private async behindFence<O>(
    write: (held: number | undefined) => Promise<O>,
    taken: (outcome: O) => number | undefined,
  ): Promise<O> {
    while (this.generation === undefined && this.taking !== undefined) {
      await this.taking
    }
    const held = this.generation
    if (held !== undefined) return write(held)
    let done!: () => void
    this.taking = new Promise<void>((resolve) => (done = resolve))
    try {
      faultPoint("activate.before")
      const outcome = await write(undefined)
      const generation = taken(outcome)
      if (generation !== undefined) {
        faultPoint("activate.after")
        this.generation = generation
      }
      return outcome
    } finally {
      this.taking = undefined
      done()
    }
  }
}
