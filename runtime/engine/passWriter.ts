/**
 * The one way a pass writes. Every write is a short transaction behind the owner's generation fence.
 * Writes that nothing is waiting for — settling a step whose result the body already has — are held
 * back and committed with the pass's next write, so a sequence of activities costs one commit per
 * step: the settle of one step and the pending row of the next travel together. Held writes are
 * never older than a few milliseconds (a timer flushes them), and nothing with an outside effect
 * happens before them: the next activity runs only after the transaction that carries them commits.
 *
 * A failed transaction breaks the writer: it rolled back every held write with it, so the pass's
 * memory is ahead of the database, and no later write of that pass may commit.
 */
import { faultPoint } from "../faults.js"
import { fenced, type Activation } from "../owners/fence.js"
import type { Db, Tx } from "../storage/database.js"

/** A flush of held writes is never later than this. */
export const HELD_WRITE_MAX_MS = 5

export class PassWriterBroken extends Error {
  constructor(readonly failure: unknown) {
    super(`an earlier write of this pass failed: ${String(failure)}`)
    this.name = "PassWriterBroken"
  }
}

export type HeldWrite = (tx: Tx) => Promise<void>

export class PassWriter {
  private held: HeldWrite[] = []
  private flushTimer: ReturnType<typeof setTimeout> | undefined
  private broken: unknown = undefined
  private chain: Promise<unknown> = Promise.resolve()
  /** Called once when a write fails; the pass abandons itself. */
  onBroken: (cause: unknown) => void = () => {}

  constructor(
    private readonly db: Db,
    private readonly activation: Activation,
    /** Refuses a write before it starts (e.g. the bucket's lease ran out): returns the reason. */
    private readonly guard: () => Error | undefined = () => undefined,
  ) {}

  /**
   * Commits the held writes and then `write`, in one fenced transaction. Writes of one pass are
   * serialized, so they commit in the order the pass issued them. `label` names the write's fault
   * points (`pending.before`, `pending.after`); a write that carries held settles also passes the
   * `settle` points.
   */
  write<A>(label: string, write: (tx: Tx) => Promise<A>): Promise<A> {
    const run = this.chain.then(async () => {
      if (this.broken !== undefined) throw new PassWriterBroken(this.broken)
      const guard = this.guard()
      if (guard !== undefined) {
        this.break(guard)
        throw guard
      }
      const held = this.takeHeld()
      faultPoint(`${label}.before`)
      if (held.length > 0) faultPoint("settle.before")
      try {
        const result = await fenced(this.db, this.activation, async (tx) => {
          for (const heldWrite of held) await heldWrite(tx)
          return write(tx)
        })
        if (held.length > 0) faultPoint("settle.after")
        faultPoint(`${label}.after`)
        return result
      } catch (error) {
        this.break(error)
        throw error
      }
    })
    this.chain = run.catch(() => {})
    return run
  }

  /** Holds a write for the next transaction of the pass (or a flush a few milliseconds from now). */
  hold(write: HeldWrite): void {
    this.held.push(write)
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined
      if (this.held.length > 0) this.write("settle", async () => {}).catch(() => {})
    }, HELD_WRITE_MAX_MS)
  }

  get holding(): boolean {
    return this.held.length > 0
  }

  /** Drops held writes without committing them (an abandoned pass records nothing more). */
  discard(): void {
    this.takeHeld()
  }

  /** Resolves once every issued write has committed or failed. */
  settled(): Promise<void> {
    return this.chain.then(() => {})
  }

  get failure(): unknown {
    return this.broken
  }

  private takeHeld(): HeldWrite[] {
    if (this.flushTimer !== undefined) {
      clearTimeout(this.flushTimer)
      this.flushTimer = undefined
    }
    const held = this.held
    this.held = []
    return held
  }

  private break(cause: unknown) {
    if (this.broken !== undefined) return
    this.broken = cause
    this.onBroken(cause)
  }
}
