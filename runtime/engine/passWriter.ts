/**
 * The one way a pass writes. Every write is a single statement: the owner's generation fence, the
 * writes held back from earlier steps, the changes to the execution row, and the write itself,
 * composed as CTEs (storage/statementParts.ts) — one round trip, one commit. Writes nothing is
 * waiting for — settling a step whose result the body already has — are held and travel with the
 * pass's next write, so a sequence of activities costs one commit per step: the settle of one step
 * and the pending row of the next commit together. Held writes are never older than a few
 * milliseconds (a timer flushes them), and nothing with an outside effect happens before them: the
 * next activity runs only after the statement that carries them commits. The commonest writes — a
 * settle and the next activity's pending row, under a generation already held, and a pass's first
 * write with the start it carries — go through the runner's step batcher, which sends the like
 * writes of concurrent passes as one statement. A pass's held settles, and its held rows of each
 * kind, travel as one part each, so a pass whose branches ran a thousand steps at once writes them
 * in a statement of a few parts, not a thousand.
 *
 * A failed statement breaks the writer: it rolled back every held write with it, so the pass's
 * memory is ahead of the database, and no later write of that pass may commit.
 */
import { sql, type RawBuilder } from "kysely"
import { faultPoint } from "../faults.js"
import { fenceHeld, fencedGeneration, StaleGeneration, type Activation } from "../owners/fence.js"
import type { DatabaseClock } from "../storage/clock.js"
import type { Db, ExecutionOutcome } from "../storage/database.js"
import { composeStatement, countOf, type StatementPart } from "../storage/statementParts.js"
import {
  executionPatchPart,
  type ExecutionPatch,
  type StartOutcome,
  type UnstartedExecution,
} from "./executionStore.js"
import { beginActivityPart, settleStepsPart, type HeldSettle } from "./stepStore.js"
import { heldParts, type Held } from "../storage/rowsSource.js"
import { submitWrite, type StepBatcher, type StepBatchOutcome } from "./stepBatch.js"

/** A flush of held writes is never later than this. */
export const HELD_WRITE_MAX_MS = 5

export class PassWriterBroken extends Error {
  constructor(readonly failure: unknown) {
    super(`an earlier write of this pass failed: ${String(failure)}`)
    this.name = "PassWriterBroken"
  }
}

export interface PassWrite<A> {
  readonly parts: readonly StatementPart[]
  /** Columns the final select adds, e.g. sql`(SELECT started_at_ms FROM pending_3) AS started_at_ms`. */
  readonly select?: RawBuilder<unknown>
  readonly read?: (row: Readonly<Record<string, unknown>>) => A
  /** The statement's own change to the execution row, merged with held changes. */
  readonly execution?: ExecutionPatch
  /**
   * The write records the result: held writes and execution changes are dropped, since the steps
   * they settle are deleted in the same statement.
   */
  readonly final?: boolean
  /**
   * A statement run first, in the same transaction: a lock the write's statement must see
   * everything committed under (a concurrency group's, engine/concurrencyGroups.ts). The write
   * then passes the `<label>.locked` fault point between the two.
   */
  readonly serializedBy?: RawBuilder<unknown>
  /**
   * The write registers something an emit must see (a wait): its fence updates the owner row
   * instead of only locking it (owners/fence.ts `touchingFence`).
   */
  readonly touchesOwner?: boolean
}

const mergePatches = (a: ExecutionPatch, b: ExecutionPatch): ExecutionPatch => {
  const cursor =
    a.cursor === undefined
      ? b.cursor
      : b.cursor === undefined
        ? a.cursor
        : Math.max(a.cursor, b.cursor)
  const status = b.status ?? a.status
  const adopt = b.adopt ?? a.adopt
  return {
    ...(status === undefined ? {} : { status }),
    ...(cursor === undefined ? {} : { cursor }),
    ...(adopt === undefined ? {} : { adopt }),
  }
}

const isEmptyPatch = (patch: ExecutionPatch) =>
  patch.status === undefined && patch.cursor === undefined && patch.adopt === undefined

/** A start folded into a pass's first write found its execution already there: it attached. */
export class StartAttached extends Error {
  constructor(readonly executionId: string) {
    super(`execution ${executionId} already existed: its start attached, and this pass ends`)
    this.name = "StartAttached"
  }
}

/**
 * A write that goes as a row of a step batch when it can, and as a statement of the pass's own
 * (built only then) when it cannot.
 */
export interface BatchableWrite<A> {
  /** The activity attempt the write begins, if any (none: a flush of what is held). */
  readonly begin?: { readonly step: string; readonly attempt: number }
  /** The encoded result the write records: a final write. */
  readonly finish?: Buffer
  /** How the recorded result ends the execution (`succeeded`, …): the studio filters by it. */
  readonly outcome?: ExecutionOutcome
  readonly read: (outcome: StepBatchOutcome) => A
  readonly statement: () => PassWrite<A>
}

const isBatchable = <A>(write: PassWrite<A> | BatchableWrite<A>): write is BatchableWrite<A> =>
  "statement" in write

/**
 * Writes a step holds that must commit even if the pass's next write is its result (a start
 * step's record and staged start): unlike a held settle, a final write does not make them moot.
 */
interface HeldEffects {
  /** The labels of their fault points, each once (none: nothing held). */
  readonly labels: Set<string>
  /** Columns the carrying statement's select adds, by key (each once: e.g. one wake per bucket). */
  readonly columns: Map<string, RawBuilder<unknown>>
  /** Called once the statement carrying them has committed. */
  readonly committed: (() => void)[]
}

const emptyEffects = (): HeldEffects => ({
  labels: new Set(),
  columns: new Map(),
  committed: [],
})

export class PassWriter {
  private held: Held[] = []
  private heldSettleNames: string[] = []
  /** Held writes that must commit (`holdWrite`): their labels, final-select columns and callbacks. */
  private effects: HeldEffects = emptyEffects()
  /** Settles held as data: composed into the next statement, or sent as a batch row. */
  private settles: HeldSettle[] = []
  private patch: ExecutionPatch = {}
  /** A start this pass's next write commits (its runner took the execution before it existed). */
  private start: UnstartedExecution | undefined
  /** The write that carries the start, once issued: the first write issued after `holdStart`. */
  private startWrite: Promise<unknown> | undefined
  private onStarted: (eventCursor: number, deadlineAtMs: number | null) => void = () => {}
  private flushTimer: ReturnType<typeof setTimeout> | undefined
  private broken: unknown = undefined
  private chain: Promise<unknown> = Promise.resolve()
  /** Called once when a write fails; the pass abandons itself. */
  onBroken: (cause: unknown) => void = () => {}

  constructor(
    private readonly db: Db,
    private readonly clock: DatabaseClock,
    private readonly activation: Activation,
    private readonly routingKey: string,
    private readonly executionId: string,
    /** Refuses a write before it starts (e.g. the bucket's lease ran out): returns the reason. */
    private readonly guard: () => Error | undefined,
    private readonly batcher: StepBatcher,
  ) {}

  /**
   * Inserts the pending row of an activity attempt (with whatever is held) before it runs, so a
   * rerun after a crash reuses the attempt and the start time its idempotency key derives from.
   * Resolves to the attempt's recorded start time, whether this write or an earlier run began it.
   */
  beginActivity(step: string, attempt: number): Promise<number> {
    return this.write("pending", {
      begin: { step, attempt },
      read: (outcome) => outcome.startedAtMs!,
      statement: () => {
        const pending = beginActivityPart(this.clock, {
          routingKey: this.routingKey,
          executionId: this.executionId,
          step,
          attempt,
        })
        return {
          parts: [pending],
          select: sql`(SELECT started_at_ms FROM ${sql.id(pending.name)}) AS started_at_ms`,
          read: (row) => Number(row["started_at_ms"]),
        }
      },
    })
  }

  /**
   * Commits the held writes and then `write`, in one fenced statement (or as one row of a step
   * batch: a batchable write under a generation already held). Writes of one pass are serialized,
   * so they commit in the order the pass issued them. `label` names the write's fault points
   * (`pending.before`, `pending.after`); a write that carries held settles also passes the `settle`
   * points, and one that carries the start the `start` points.
   */
  write<A>(label: string, given: BatchableWrite<A>): Promise<A>
  write<A>(label: string, given: PassWrite<A>): Promise<A>
  write<A>(label: string, given: PassWrite<A> | BatchableWrite<A>): Promise<A> {
    const batched = isBatchable(given) ? given : undefined
    const plain = isBatchable(given) ? undefined : given
    const final = plain?.final === true || batched?.finish !== undefined
    const changesExecution = plain?.execution !== undefined
    const startWaiting = this.start !== undefined && this.startWrite === undefined
    // A statement cannot update the execution row its start inserts (a sibling part's row is
    // invisible to it): a write that changes the execution, the finish among them, goes after a
    // write of its own that records the start.
    if (startWaiting && (final || changesExecution)) this.flush()
    // A final write drops what is held; held writes that must commit go first, in a write of
    // their own (a row they insert would not be seen by the final write's deletes).
    if (final && this.effects.labels.size > 0) this.flush()
    const carriesStart = this.start !== undefined && this.startWrite === undefined
    const run = this.chain.then(async () => {
      // Taken when it runs: a discard in between has already told the start it was not taken.
      const start = carriesStart ? this.takeStart() : undefined
      let startSettled = start === undefined
      const settleStart = (outcome: StartOutcome) => {
        if (startSettled) return
        startSettled = true
        start!.settled(outcome)
      }
      try {
        if (this.broken !== undefined) throw new PassWriterBroken(this.broken)
        const refused = this.guard()
        if (refused !== undefined) throw refused
        const { held, settleNames, settles, patch, effects } = this.takeHeld()
        let execution = final ? {} : mergePatches(patch, plain?.execution ?? {})
        if (start !== undefined && !isEmptyPatch(execution)) {
          // Held for the next write, which sees the row this one inserts (see above).
          this.patchExecution(execution)
          execution = {}
        }
        // A final write drops what is held: the steps it would settle are deleted with it.
        const batchedSettles = final ? [] : settles
        if (final && effects.labels.size > 0) {
          throw new Error("held writes that must commit reached a final write")
        }
        if (
          batched !== undefined &&
          (start === undefined || (start.batchable !== undefined && !final)) &&
          (final || (held.length === 0 && isEmptyPatch(execution))) &&
          batchedSettles.length <= 1 &&
          batchedSettles.every((settle) => settle.matched === undefined)
        ) {
          faultPoint(`${label}.before`)
          if (batchedSettles.length > 0) faultPoint("settle.before")
          if (start !== undefined) faultPoint("start.before")
          // Under the generation held, or, as the activation's first write, taking the owner.
          let generation: number | undefined
          const outcome = await this.activation.batched(
            (held) => {
              generation = held
              return submitWrite(this.batcher, {
                owner: this.activation.owner,
                generation: held ?? null,
                executionId: this.executionId,
                ...(start === undefined ? {} : { start: start.batchable! }),
                ...(batchedSettles[0] === undefined ? {} : { settle: batchedSettles[0] }),
                ...(batched.begin === undefined ? {} : { begin: batched.begin }),
                ...(batched.finish === undefined ? {} : { finish: batched.finish }),
                ...(batched.outcome === undefined ? {} : { outcome: batched.outcome }),
              })
            },
            // A start that attached took nothing (its row is not fenced either).
            (outcome) => outcome.generation ?? undefined,
          )
          if (start !== undefined) {
            if (outcome.start?.created !== true) {
              settleStart("attached")
              throw new StartAttached(this.executionId)
            }
            settleStart("created")
            faultPoint("start.after")
            if (outcome.fenced) {
              this.onStarted(outcome.start.eventCursor!, outcome.start.deadlineAtMs)
            }
          }
          if (!outcome.fenced) throw new StaleGeneration(this.activation.owner, generation)
          if (!outcome.settled) throw new Error("a held settle matched no pending step")
          if (batchedSettles.length > 0) faultPoint("settle.after")
          faultPoint(`${label}.after`)
          return batched.read(outcome)
        }
        const write = plain ?? batched!.statement()
        const startParts = start?.parts()
        // The held settles, as one part however many: it must settle one row for each.
        const settlePart =
          batchedSettles.length === 0
            ? undefined
            : settleStepsPart(
                this.clock,
                { routingKey: this.routingKey, executionId: this.executionId },
                batchedSettles,
              )
        const carried = final
          ? []
          : [
              ...heldParts(
                this.clock,
                { owner: this.activation.owner, executionId: this.executionId },
                held,
              ),
              ...(settlePart === undefined ? [] : [settlePart]),
            ]
        const expected = final
          ? []
          : [...settleNames, ...(settlePart === undefined ? [] : [settlePart.name])]
        const settled =
          expected.length === 0
            ? sql`true`
            : sql`akter.require(NOT ${fenceHeld} OR ${sql.join(
                expected.map((name) => countOf(name)),
                sql` + `,
              )} = ${settleNames.length + batchedSettles.length},
              'a held settle matched no pending step')`
        const startColumns =
          startParts === undefined
            ? sql``
            : sql`, ${countOf(startParts.names.inserted)} AS created,
                (SELECT event_cursor FROM ${sql.id(startParts.names.inserted)}) AS event_cursor,
                (SELECT deadline_at_ms FROM ${sql.id(startParts.names.inserted)}) AS deadline_at_ms`
        // Lock order: the execution row before its outbox rows, as every client statement takes
        // them (an interrupt flags the execution, then pokes its timer). Postgres runs a CTE the
        // select reads when the select reaches it, and the others after the select, the last listed
        // first — so the write's timer parts would lock the outbox row before this patch locked the
        // execution, and a suspend racing an interrupt could deadlock. Reading the patch's count
        // ahead of the write's own columns runs it first.
        const patched = isEmptyPatch(execution)
          ? undefined
          : executionPatchPart(this.routingKey, this.executionId, execution)
        const patchedColumn =
          patched === undefined ? sql`` : sql`, ${countOf(patched.name)} AS patched`
        const effectColumns =
          effects.columns.size === 0 ? sql`` : sql`, ${sql.join([...effects.columns.values()])}`
        const select = sql`${fencedGeneration}${patchedColumn}, ${settled} AS settled${startColumns}${effectColumns}${
          write.select === undefined ? sql`` : sql`, ${write.select}`
        }`
        // The fence parts come after the start's head (they refer to it) and before everything
        // else (every other part refers to the fence).
        const execute = async (fence: readonly StatementPart[]) => {
          const parts: StatementPart[] = [...fence, ...(startParts?.tail ?? []), ...carried]
          if (patched !== undefined) parts.push(patched)
          parts.push(...write.parts)
          // A held settle that matched no pending row aborts the whole statement: nothing commits.
          const statement = composeStatement(parts, select)
          const { serializedBy } = write
          const { rows } =
            serializedBy === undefined
              ? await statement.execute(this.db)
              : await this.db.transaction().execute(async (tx) => {
                  await serializedBy.execute(tx)
                  faultPoint(`${label}.locked`)
                  return statement.execute(tx)
                })
          const result = rows[0] ?? {}
          const held = result["generation"]
          return {
            result,
            generation: held === null || held === undefined ? undefined : Number(held),
          }
        }
        faultPoint(`${label}.before`)
        if (carried.length > 0) faultPoint("settle.before")
        for (const held of effects.labels) faultPoint(`${held}.before`)
        let row: Readonly<Record<string, unknown>>
        if (startParts === undefined) {
          row = await this.activation.fenced(
            (fence) => execute([fence]),
            plain?.touchesOwner === true,
          )
        } else {
          faultPoint("start.before")
          const outcome = await this.activation.fencedStart(startParts.names, async (fence) => {
            const written = await execute([...startParts.head, ...fence])
            return { ...written, created: written.result["created"] === 1 }
          })
          if (outcome.kind === "attached") {
            settleStart("attached")
            throw new StartAttached(this.executionId)
          }
          settleStart("created")
          faultPoint("start.after")
          if (outcome.kind === "stale") {
            throw new StaleGeneration(this.activation.owner, this.activation.held)
          }
          row = outcome.result
          this.onStarted(
            Number(row["event_cursor"]),
            row["deadline_at_ms"] === null ? null : Number(row["deadline_at_ms"]),
          )
        }
        if (carried.length > 0) faultPoint("settle.after")
        for (const held of effects.labels) faultPoint(`${held}.after`)
        faultPoint(`${label}.after`)
        for (const committed of effects.committed) committed()
        return write.read === undefined ? (undefined as A) : write.read(row)
      } catch (error) {
        // Nothing of the start committed with this statement: its caller writes it itself.
        settleStart("not-taken")
        this.break(error)
        throw error
      }
    })
    this.chain = run.catch(() => {})
    if (carriesStart) this.startWrite = this.chain
    return run
  }

  /**
   * Holds a start for the pass's first write (or a flush a few milliseconds from now).
   * `onStarted` is told the execution's event cursor and deadline once they are recorded.
   */
  holdStart(
    start: UnstartedExecution,
    onStarted: (eventCursor: number, deadlineAtMs: number | null) => void,
  ): void {
    this.start = start
    this.onStarted = onStarted
    this.scheduleFlush()
  }

  /** Resolves once the held start is recorded, writing it now if no write carries it yet. */
  startRecorded(): Promise<unknown> {
    if (this.start !== undefined && this.startWrite === undefined) this.flush()
    return this.startWrite ?? Promise.resolve()
  }

  /**
   * Holds parts for the next statement of the pass (or a flush a few milliseconds from now); held
   * rows of one kind of write (storage/rowsSource.ts) go as one part of that statement, however
   * many steps held them. `settles` names the parts that must each settle one pending step.
   */
  hold(parts: readonly Held[], settles: readonly string[] = []): void {
    this.held.push(...parts)
    this.heldSettleNames.push(...settles)
    this.scheduleFlush()
  }

  /**
   * Holds parts that must commit — even when the pass's next write records its result, which then
   * goes after a write of their own — for the next statement (or a flush a few milliseconds from
   * now): a step that needs nothing back from its write, as a start step, lets the writes of a
   * pass's concurrent branches travel together instead of one statement each. `label` names their
   * fault points; `column`, keyed, is added once to the carrying statement's select; `committed`
   * runs once that statement has committed.
   */
  holdWrite(
    label: string,
    parts: readonly Held[],
    options: {
      readonly column?: { readonly key: string; readonly sql: RawBuilder<unknown> }
      readonly committed?: () => void
    } = {},
  ): void {
    this.held.push(...parts)
    this.effects.labels.add(label)
    if (options.column !== undefined && !this.effects.columns.has(options.column.key)) {
      this.effects.columns.set(options.column.key, options.column.sql)
    }
    if (options.committed !== undefined) this.effects.committed.push(options.committed)
    this.scheduleFlush()
  }

  /** Holds the settle of a pending step attempt for the next write. */
  holdSettle(settle: HeldSettle): void {
    this.settles.push(settle)
    this.scheduleFlush()
  }

  /** Holds a change to the execution row for the next statement. */
  patchExecution(patch: ExecutionPatch): void {
    this.patch = mergePatches(this.patch, patch)
    this.scheduleFlush()
  }

  /** Drops held writes without committing them (an abandoned pass records nothing more). */
  discard(): void {
    this.takeHeld()
    this.takeStart()?.settled("not-taken")
  }

  /** Resolves once every issued write has committed or failed. */
  settled(): Promise<void> {
    return this.chain.then(() => {})
  }

  get failure(): unknown {
    return this.broken
  }

  /** Writes what is held now, as a batch row when it can go as one. */
  private flush(): void {
    this.write("settle", { read: () => undefined, statement: () => ({ parts: [] }) }).catch(
      () => {},
    )
  }

  private scheduleFlush() {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined
      const startWaiting = this.start !== undefined && this.startWrite === undefined
      if (
        this.held.length > 0 ||
        this.settles.length > 0 ||
        !isEmptyPatch(this.patch) ||
        startWaiting
      ) {
        this.flush()
      }
    }, HELD_WRITE_MAX_MS)
  }

  private takeStart(): UnstartedExecution | undefined {
    const start = this.start
    this.start = undefined
    return start
  }

  private takeHeld() {
    if (this.flushTimer !== undefined) {
      clearTimeout(this.flushTimer)
      this.flushTimer = undefined
    }
    const taken = {
      held: this.held,
      settleNames: this.heldSettleNames,
      settles: this.settles,
      patch: this.patch,
      effects: this.effects,
    }
    this.effects = emptyEffects()
    this.held = []
    this.heldSettleNames = []
    this.settles = []
    this.patch = {}
    return taken
  }

  private break(cause: unknown) {
    if (this.broken !== undefined) return
    this.broken = cause
    this.onBroken(cause)
  }
}
