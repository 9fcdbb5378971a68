/**
 * Timers a runner armed itself and fires from memory. When a pass of this runner parks an
 * execution on a timer due soon (within `LOCAL_TIMER_HORIZON_MS`, and before the bucket's lease
 * would lapse), the runner keeps a local timer; when it fires, the runner claims that row by the
 * claim every poll makes (outbox/outboxStore.ts `claimDueTimers`: due, in a bucket it leases, moved
 * a recovery interval ahead, `SKIP LOCKED`) and runs the pass. The database stays the truth: a
 * local timer only makes the claim happen on time. A row claimed or re-armed since is not claimed
 * again; a lost lease, a drain or a crash drop the local timers, and the persisted due time brings
 * whoever holds the bucket then to it by its normal claim.
 *
 * A fired timer goes ahead of new work: while fired timers wait for a free slot, the runner takes
 * no start of its own process (runner/localStartAcceptor.ts), its polls count their slots as
 * taken, and each pass that ends gives its slot to them first.
 *
 * The timer of a pass waiting in memory (engine/pass.ts `Residency`) is kept the same way, and
 * fires into the pass instead of a claim: the pass resumes where it parked, taking the slot.
 */
import type { ClaimedRow } from "../outbox/outboxStore.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { localNow, timeoutDelay } from "../storage/clock.js"

/** How far ahead a timer is kept in memory; later ones wait for the claim loop's polls. */
export const LOCAL_TIMER_HORIZON_MS = 10_000

interface LocalTimer {
  readonly routingKey: string
  readonly executionId: string
  readonly bucket: number
  /** Local time (`localNow()`) it is due. */
  readonly dueAt: number
  /**
   * When it fires: a claimed timer a millisecond after `dueAt`, since the database's clock, which
   * judges the claim, is estimated to about that; a resume at the wall-clock millisecond
   * (`Date.now()`) from which the pass's own estimate of the database's clock reads the due time,
   * which is what the pass compares its due times with (storage/clock.ts `wallTimeWhenEstimated`).
   */
  readonly firesAt: number
  /** Resumes the pass waiting in memory for this timer; none: the row is claimed. */
  readonly resume: (() => void) | undefined
  timeout: ReturnType<typeof setTimeout> | undefined
}

export interface LocalTimersOptions {
  /** Whether the runner leases the bucket, and until when (local time) its lease surely holds. */
  readonly holds: (bucket: number) => boolean
  readonly leaseValidUntil: () => number
  /** Slots free for passes now. */
  readonly free: () => number
  /** Claims the timers that are due and still this runner's; the claimed rows. */
  readonly claim: (
    timers: readonly { readonly routingKey: string; readonly executionId: string }[],
  ) => Promise<ClaimedRow[]>
  /** Runs a claimed row's pass, as a poll's claim does. */
  readonly dispatch: (row: ClaimedRow) => void
  /**
   * Fired timers whose claim did not return them (claimed elsewhere, re-armed, or not yet due by
   * the database's clock) or failed: the claim loop looks their rows up again.
   */
  readonly unclaimed: (error?: unknown) => void
  /** Tracks a claim until it settles, so a drain waits for it. */
  readonly track: (work: Promise<void>) => void
}

export class LocalTimers {
  private readonly kept = new Map<string, LocalTimer>()
  /** Fired, not yet claimed: earliest due first. */
  private fired: LocalTimer[] = []
  /** Timers whose claim is under way: their slots are taken. */
  private claimingCount = 0
  private stopped = false

  constructor(private readonly options: LocalTimersOptions) {}

  /** Fired timers waiting for a slot or being claimed: new work waits behind them. */
  get waiting(): number {
    return this.fired.length + this.claimingCount
  }

  /** Slots the claim under way will fill. */
  get claiming(): number {
    return this.claimingCount
  }

  /**
   * A pass of this runner parked the execution on a timer due at `dueAt` (`localNow()`): kept in
   * memory when it is due within the horizon and the lease holds until then. False when it is not
   * kept, and the claim loop's polls are to bring it.
   */
  keep(owner: OwnerPlacement, executionId: string, dueAt: number): boolean {
    return this.arm(owner, executionId, dueAt, dueAt + 1, undefined)
  }

  /** Whether a timer of this bucket due at `dueAt` (local time) would be kept. */
  mayKeep(bucket: number, dueAt: number): boolean {
    return (
      !this.stopped &&
      dueAt - localNow() <= LOCAL_TIMER_HORIZON_MS &&
      this.options.holds(bucket) &&
      dueAt < this.options.leaseValidUntil()
    )
  }

  /**
   * A pass parked the execution on a timer due at `dueAt` and waits in memory: when the timer
   * fires and a slot is free, `resume` is called instead of a claim. False when it is not kept
   * (as `keep`), and the pass is not to wait.
   */
  keepWaiting(
    owner: OwnerPlacement,
    executionId: string,
    dueAt: number,
    resume: () => void,
    /** The wall-clock millisecond from which the pass's estimate reads the due time. */
    resumesAt: number,
  ): boolean {
    return this.arm(owner, executionId, dueAt, resumesAt, resume)
  }

  private arm(
    owner: OwnerPlacement,
    executionId: string,
    dueAt: number,
    firesAt: number,
    resume: (() => void) | undefined,
  ): boolean {
    if (!this.mayKeep(owner.bucket, dueAt)) return false
    this.forget(executionId)
    const timer: LocalTimer = {
      routingKey: owner.routingKey,
      executionId,
      bucket: owner.bucket,
      dueAt,
      firesAt,
      resume,
      timeout: undefined,
    }
    this.schedule(timer)
    this.kept.set(executionId, timer)
    return true
  }

  /**
   * Node counts a timer's delay from a whole millisecond, so it may fire up to one early: one that
   * does waits the rest. A resume is early only while the wall clock has not reached its
   * millisecond, as the pass would judge it.
   */
  private schedule(timer: LocalTimer): void {
    timer.timeout = setTimeout(
      () => {
        const early = (timer.resume === undefined ? localNow() : Date.now()) < timer.firesAt
        if (early) this.schedule(timer)
        else this.fire(timer)
      },
      timeoutDelay(Math.ceil(timer.firesAt - localNow())),
    )
  }

  /** The execution's timer is in other hands (a claim of the poll took it, a pass runs it). */
  forget(executionId: string): void {
    const timer = this.kept.get(executionId)
    if (timer === undefined) return
    clearTimeout(timer.timeout)
    this.kept.delete(executionId)
    const index = this.fired.indexOf(timer)
    if (index >= 0) this.fired.splice(index, 1)
  }

  /** The leases of these buckets were lost: their timers are whoever holds them next's to claim. */
  leasesLost(buckets: readonly number[]): void {
    const lost = new Set(buckets)
    for (const timer of [...this.kept.values()]) {
      if (lost.has(timer.bucket)) this.forget(timer.executionId)
    }
  }

  /** A slot came free: fired timers take it first. */
  slotFreed(): void {
    if (this.fired.length > 0) this.claimFired()
  }

  /** Fires nothing more; the rows keep their due times for the claim loop (of any runner). */
  stop(): void {
    this.stopped = true
    for (const timer of this.kept.values()) clearTimeout(timer.timeout)
    this.kept.clear()
    this.fired = []
  }

  private fire(timer: LocalTimer): void {
    timer.timeout = undefined
    if (this.stopped || this.kept.get(timer.executionId) !== timer) return
    this.fired.push(timer)
    this.fired.sort((a, b) => a.dueAt - b.dueAt)
    this.claimFired()
  }

  /** Claims fired timers, as many as there are free slots, one claim at a time. */
  private claimFired(): void {
    if (this.claimingCount > 0 || this.stopped) return
    const free = this.options.free()
    if (free <= 0) return
    const batch = this.fired.splice(0, free)
    for (const timer of batch) this.kept.delete(timer.executionId)
    // A timer of a bucket no longer leased is left to whoever leases it (a waiting pass of it
    // is ended by the lost lease).
    const held = batch.filter((timer) => this.options.holds(timer.bucket))
    const mine: LocalTimer[] = []
    for (const timer of held) {
      if (timer.resume === undefined) mine.push(timer)
      else timer.resume()
    }
    if (mine.length === 0) {
      if (this.fired.length > 0) this.claimFired()
      return
    }
    this.claimingCount = mine.length
    this.options.track(
      this.options
        .claim(mine)
        .then(
          (rows) => {
            this.claimingCount = 0
            for (const row of rows) this.options.dispatch(row)
            if (rows.length < mine.length) this.options.unclaimed()
          },
          (error: unknown) => {
            this.claimingCount = 0
            this.options.unclaimed(error)
          },
        )
        .finally(() => {
          if (this.fired.length > 0) this.claimFired()
        }),
    )
  }
}
