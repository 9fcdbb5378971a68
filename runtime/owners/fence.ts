/**
 * Every statement on `akter.owners`: the owner's creation, the reservation of its event sequences,
 * and the generation fence. An owner's `generation` is the epoch of the one activation allowed to write
 * its executions; a runner takes it by advancing it, and every engine write first locks the owner row
 * and checks that the generation is still the one it took. A runner that lost the owner — its lease
 * expired, it was paused, another runner activated the owner — commits nothing.
 */
import { sql, type RawBuilder } from "kysely"
import { faultPoint } from "../faults.js"
import { existsIn, part, type StatementPart } from "../storage/statementParts.js"
import type { OwnerPlacement } from "./routing.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"

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

/** The name of the part every fenced part refers to. */
export const FENCE = "fence"

/**
 * The condition every fenced part carries, written here once: the statement's fence found the
 * owner at the held generation (or advanced it). Without it, the part writes nothing.
 */
export const fenceHeld: RawBuilder<boolean> = existsIn(FENCE)

/** A final-select column, `generation`: the generation the fence found or took (null: stale). */
export const fencedGeneration: RawBuilder<unknown> = sql`(SELECT held FROM ${sql.id(FENCE)}) AS generation`

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
 * The checking fence of a write an emit must not miss (a wait's registration): the same check, but
 * the owner row is updated, not only locked, so its version changes at this commit. An emit written
 * as one statement (client/emitEvent.ts) reads the owner in its snapshot and locks it later; a new
 * version between the two tells it a registration may have committed that its snapshot lacks.
 */
const touchingFence = (owner: OwnerPlacement, generation: number): StatementPart => ({
  name: FENCE,
  sql: sql`UPDATE akter.owners SET generation = generation
    WHERE ${matchesOwner(owner)} AND generation = ${generation}::bigint
    RETURNING generation AS held`,
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

/**
 * The fence of a batch of writes (engine/stepBatch.ts), whose `input` part names for each row an
 * owner and the generation its runner holds, or null for a row whose write takes the owner (its
 * runner's first write under a new activation). `locked` locks every owner the batch names — in one
 * order, so two batches never deadlock — `advanced` advances the generation of those some row
 * takes, so from this commit on every writer holding an older one is refused, and `fence` is each
 * locked owner at the generation the statement writes under. `fenced` keeps the input rows whose
 * owner is at the generation they hold (not taken in this batch: a take supersedes them), or that
 * take it; `held` is that generation. A row whose owner moved on is in neither, and writes nothing.
 *
 * With `starting` the batch carries folded starts (engine/stepBatch.ts): a start row takes or
 * checks its owner only if it inserted its execution (`inserted`, engine/executionStore.ts
 * `batchInsertExecutionsSql`) — a start that attaches never takes the owner from whoever holds it
 * — and an owner the batch created (`owner_created`, `batchCreateOwnersSql`: a sibling part's row
 * is invisible to `locked`) is taken at the generation 1 it was created at.
 */
export const batchFenceSql = (starting = false): RawBuilder<unknown>[] => {
  // An input row `i` that starts nothing, or whose start inserted its execution.
  const startInserted = starting
    ? sql`AND (i.workflow IS NULL OR EXISTS (SELECT 1 FROM inserted s
          WHERE s.routing_key = i.routing_key AND s.execution_id = i.execution_id))`
    : sql``
  return [
    sql`locked AS (
      SELECT o.routing_key, o.tenant, o.owner_type, o.owner_id, o.generation FROM akter.owners o
      WHERE (o.routing_key, o.tenant, o.owner_type, o.owner_id) IN (
        SELECT routing_key, tenant, owner_type, owner_id FROM input)
      ORDER BY o.routing_key, o.tenant, o.owner_type, o.owner_id
      FOR UPDATE
    )`,
    sql`advanced AS (
      UPDATE akter.owners o SET generation = o.generation + 1
      FROM locked l
      WHERE o.routing_key = l.routing_key AND o.tenant = l.tenant AND o.owner_type = l.owner_type
        AND o.owner_id = l.owner_id
        AND EXISTS (SELECT 1 FROM input i WHERE i.generation IS NULL
          AND i.routing_key = l.routing_key AND i.tenant = l.tenant
          AND i.owner_type = l.owner_type AND i.owner_id = l.owner_id ${startInserted})
      RETURNING o.routing_key, o.tenant, o.owner_type, o.owner_id, o.generation
    )`,
    sql`fence AS (
      SELECT l.routing_key, l.tenant, l.owner_type, l.owner_id,
        COALESCE(a.generation, l.generation) AS generation, a.generation IS NOT NULL AS taken
      FROM locked l LEFT JOIN advanced a ON a.routing_key = l.routing_key AND a.tenant = l.tenant
        AND a.owner_type = l.owner_type AND a.owner_id = l.owner_id${
          starting
            ? sql`
      UNION ALL SELECT c.routing_key, c.tenant, c.owner_type, c.owner_id, c.generation, true
      FROM owner_created c`
            : sql``
        }
    )`,
    sql`fenced AS (
      SELECT i.*, f.generation AS held FROM input i JOIN fence f ON f.routing_key = i.routing_key
        AND f.tenant = i.tenant AND f.owner_type = i.owner_type AND f.owner_id = i.owner_id
        AND (CASE WHEN i.generation IS NULL THEN f.taken
          ELSE NOT f.taken AND f.generation = i.generation END)
        ${startInserted}
    )`,
  ]
}

/**
 * The owners a batch's starts create, each once, as `createOwnerPart`: at generation 1 when
 * `activated` — a runner of this process takes each start in the same statement (the step batch's
 * folded starts, engine/stepBatch.ts), which cannot advance a row it inserts itself — else at 0
 * (a client's batched starts, engine/startBatch.ts). Returns each owner it created with its
 * `event_sequence` and `generation`; an owner that existed is not returned.
 */
export const batchCreateOwnersSql = (
  clock: DatabaseClock,
  activated: boolean,
): RawBuilder<unknown> =>
  sql`owner_created AS (
      INSERT INTO akter.owners (routing_key, tenant, owner_type, owner_id, created_at_ms, generation)
      SELECT DISTINCT routing_key, tenant, owner_type, owner_id, ${nowMs(clock)},
        ${activated ? sql`1` : sql`0`}
      FROM input WHERE workflow IS NOT NULL
      ON CONFLICT DO NOTHING
      RETURNING routing_key, tenant, owner_type, owner_id, event_sequence, generation
    )`

/**
 * Creates the owner if new, at generation 1 when `activated` (a runner of this process takes the
 * start in this statement, which cannot advance a row it inserts itself), else 0. Returns
 * (`event_sequence`, `generation`) the owner it created; nothing when the owner existed.
 */
export const createOwnerPart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  activated: boolean,
): StatementPart =>
  part(
    "owner_created",
    () => sql`INSERT INTO akter.owners (routing_key, tenant, owner_type, owner_id, created_at_ms,
        generation)
      VALUES (${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId},
        ${nowMs(clock)}, ${activated ? 1 : 0})
      ON CONFLICT DO NOTHING
      RETURNING event_sequence, generation`,
  )

/**
 * The owner's current event sequence, from the part that created it (`created`) or from its row.
 * A sibling part's insert is invisible to this statement's reads: the sequence comes from either.
 * Neither has a row when a concurrent start created the owner after this statement's snapshot;
 * that owner is brand new, so its log starts at 0 for this execution too.
 */
export const ownerSequencePart = (owner: OwnerPlacement, created: string): StatementPart =>
  part(
    "owner_sequence",
    () => sql`SELECT event_sequence FROM ${sql.id(created)}
      UNION ALL SELECT event_sequence FROM akter.owners WHERE ${matchesOwner(owner)}`,
  )

/**
 * Reserves the owner's next event sequence, creating the owner if new, when `when` holds. The
 * update locks the owner row: every suspending execution of the owner is ordered against the
 * emit, and the emit's later statements see every wait registered before. Returns
 * `event_sequence`.
 */
export const reserveSequencePart = (
  clock: DatabaseClock,
  owner: OwnerPlacement,
  when: RawBuilder<boolean>,
  /**
   * A part of the same statement that read the owner's version (`ownerVersionPart`): reserve only
   * if the row locked is still that version — no commit changed the owner between the statement's
   * snapshot and its lock. Otherwise nothing is reserved (the row stays locked).
   */
  unchangedSince?: string,
): StatementPart =>
  part(
    "sequence",
    () => sql`INSERT INTO akter.owners (routing_key, tenant, owner_type, owner_id, event_sequence,
        created_at_ms)
      SELECT ${owner.routingKey}::bigint, ${owner.tenant}, ${owner.ownerType}, ${owner.ownerId}, 1,
        ${nowMs(clock)}
      WHERE ${when}
      ON CONFLICT (routing_key, tenant, owner_type, owner_id)
        DO UPDATE SET event_sequence = akter.owners.event_sequence + 1${
          unchangedSince === undefined
            ? sql``
            : sql`
        WHERE akter.owners.xmin::text = (SELECT version FROM ${sql.id(unchangedSince)})`
        }
      RETURNING event_sequence`,
  )

/**
 * The owner row's version (the transaction that wrote it) as the statement's snapshot has it; no
 * row when the owner is new. For `reserveSequencePart`'s `unchangedSince`.
 */
export const ownerVersionPart = (owner: OwnerPlacement): StatementPart =>
  part(
    "owner_version",
    () => sql`SELECT xmin::text AS version FROM akter.owners WHERE ${matchesOwner(owner)}`,
  )

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
  /**
   * The start committed, but the owner's generation had moved (or the child started interrupted,
   * `startRuns`): nothing else was written.
   */
  | { readonly kind: "stale" }

/**
 * A folded start's pass may write only if the start created the execution running: a child whose
 * parent had already ended starts interrupted (engine/executionStore.ts `insertExecutionParts`),
 * and the pass that took it — which replays from a snapshot of an uninterrupted start — writes
 * nothing; the start commits with its timer due now, and a claim runs the interrupt.
 */
const startRuns = (start: FoldedStart) =>
  sql<boolean>`NOT EXISTS (SELECT 1 FROM ${sql.id(start.inserted)} WHERE interrupt)`

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
        AND ${startRuns(start)}
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
      WHERE ${matchesOwner(owner)} AND ${existsIn(start.inserted)} AND ${startRuns(start)}
      RETURNING generation`,
  )
  return [
    advanced,
    {
      name: FENCE,
      sql: sql`SELECT generation AS held FROM ${sql.id(start.ownerCreated)}
          WHERE ${existsIn(start.inserted)} AND ${startRuns(start)}
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
   * (and no other write is taking it: writes wait for one that is), else the checking fence (which
   * an activating one also is for an emit: it updates the row). Throws
   * `StaleGeneration` when the fence found no row, and then nothing was written.
   */
  async fenced<A>(
    write: (fence: StatementPart) => Promise<FencedOutcome<A>>,
    /** The write registers what an emit must see: its fence updates the owner row (`touchingFence`). */
    touchesOwner = false,
  ): Promise<A> {
    const outcome = await this.behindFence(
      (held) =>
        write(
          held === undefined
            ? activatingFence(this.owner)
            : touchesOwner
              ? touchingFence(this.owner, held)
              : checkingFence(this.owner, held),
        ),
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
   * Runs a row of a batch of writes (engine/stepBatch.ts) under the generation held, or, given none
   * (`held` undefined), as the row that takes it: one write at a time takes it, the others wait
   * for it. `taken` says which generation the row wrote under (undefined: none, it was stale).
   */
  batched<O>(
    write: (held: number | undefined) => Promise<O>,
    taken: (outcome: O) => number | undefined,
  ): Promise<O> {
    return this.behindFence(write, taken)
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
