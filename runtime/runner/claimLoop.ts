/**
 * When a runner claims due work. A poll claims, for as many passes as it has free slots, the due
 * timers of the buckets it leases and of executions anywhere that want a manifest it runs
 * (`FOR UPDATE SKIP LOCKED`, re-armed a recovery interval ahead in the same statement) — riding
 * the runner's next step batch when one is in flight (engine/stepBatch.ts) — and polls again while
 * a claim fills every slot. Polls are started by wake-ups (commits of this process,
 * NOTIFY), by the due times the runner knows of (its own suspends, and one look-up of the next due
 * time after it learns of timers it did not set — of those due within the fallback interval, since
 * the fallback poll looks again), and by a fallback interval, shortened while notifications do not
 * reach the runner. Neither a claim nor a look-up reads a timer due later than it looks.
 */
import type { AkterInternals } from "../akter.js"
import type { Logger } from "../log.js"
import type { ClaimAnswer } from "../engine/stepBatch.js"
import { nextDue, type ClaimedRow } from "../outbox/outboxStore.js"
import { faultPoint } from "../faults.js"
import { timeoutDelay } from "../storage/clock.js"
import type { NotificationStatus } from "../storage/notificationStatus.js"
import type { DatabaseHealth } from "./databaseHealth.js"
import type { LeaseKeeper } from "./leases.js"

/** The poll interval while notifications do not work. */
export const FAST_POLL_MS = 200
/** The soonest a look-ahead schedules the next poll. */
const MIN_LOOK_AHEAD_MS = 5

export interface ClaimLoopOptions {
  readonly internals: AkterInternals
  readonly log: Logger
  readonly health: DatabaseHealth
  readonly leases: Pick<LeaseKeeper, "buckets" | "holds">
  /**
   * Claims due rows of `buckets` (and rows wanting a manifest the runner runs), for up to
   * `limit()` passes, read when the claim is sent; resolves with the rows and the limit used.
   */
  readonly claim: (buckets: readonly number[], limit: () => number) => Promise<ClaimAnswer>
  /** Passes running at once. */
  readonly concurrency: number
  /** The fallback poll interval while notifications work. */
  readonly pollMs: number
  /** Passes running now. */
  readonly running: () => number
  /** The database's time, as the due times are written. */
  readonly now: () => number
  /** Hands a claimed row to whoever runs it. */
  readonly dispatch: (row: ClaimedRow) => void
  /** Tracks a poll until it settles, so a drain waits for it. */
  readonly track: (work: Promise<void>) => void
}

export class ClaimLoop {
  private pollMs: number
  private stopped = false
  private polling = false
  private pollAgain = false
  /** The last claim filled every free slot: more may be due, so a finished pass polls again. */
  private saturated = false
  /**
   * Due times this runner did not set itself (buckets just acquired, or at start) are unknown until
   * looked up once; after that, its own suspends schedule its wake-ups.
   */
  private lookAhead = true
  private pollTimer: ReturnType<typeof setTimeout> | undefined
  private pollTimerAt = Number.POSITIVE_INFINITY
  /** Notifications do not reach the runner: it polls every `FAST_POLL_MS` instead. */
  private degraded = false
  /** A poll is to start once this turn's continuations are done (`pollSoon`). */
  private pollSoonPending = false

  constructor(private readonly options: ClaimLoopOptions) {
    this.pollMs = options.pollMs
  }

  /** Schedules a poll at `at` (local time), keeping only the earliest pending one. */
  pollAt(at: number): void {
    if (this.stopped || at >= this.pollTimerAt) return
    if (this.pollTimer !== undefined) clearTimeout(this.pollTimer)
    this.pollTimerAt = at
    this.pollTimer = setTimeout(
      () => {
        this.pollTimer = undefined
        this.pollTimerAt = Number.POSITIVE_INFINITY
        // Only the earliest due time is kept as a timer: the poll it starts looks up the next one,
        // or a sleep due a moment after another would wait for the fallback poll.
        this.lookAhead = true
        this.poll()
      },
      timeoutDelay(at - Date.now()),
    )
  }

  /**
   * Timers this runner did not set may be due (buckets acquired, notifications missed, the
   * database back): the next poll also looks up the next due time.
   */
  lookUpDueTimes(): void {
    this.lookAhead = true
  }

  /**
   * An execution's passes ended (or a slot was freed): poll when its timer is due, and soon if more
   * may be due.
   */
  passesEnded(dueAt: number | undefined, claimNow: boolean): void {
    if (dueAt !== undefined) this.pollAt(dueAt)
    if (this.saturated || claimNow) this.pollSoon()
  }

  /**
   * Polls once the continuations running now are done. The passes one statement answered end, or
   * give their slots up, one after another in the same turn: polling at the first would claim for
   * one slot and again for the rest; polling after the last claims for all of them at once.
   */
  private pollSoon(): void {
    if (this.pollSoonPending || this.stopped) return
    this.pollSoonPending = true
    setImmediate(() => {
      this.pollSoonPending = false
      this.poll()
    })
  }

  /** Claims and dispatches due work now (or once more after the poll under way). */
  poll(): void {
    if (this.stopped) return
    if (this.polling) {
      this.pollAgain = true
      return
    }
    this.polling = true
    this.options.track(
      this.claimWhileDue()
        .then(() => this.options.health.answered())
        .catch((error) => {
          if (!this.stopped && !this.options.health.failed(error)) {
            this.options.log.error("poll failed", { error: String(error) })
          }
        })
        .finally(() => {
          this.polling = false
          if (!this.stopped) this.pollAt(Date.now() + this.pollMs)
        }),
    )
  }

  private async claimWhileDue(): Promise<void> {
    const { internals, leases, concurrency } = this.options
    const freeSlots = () => Math.max(0, concurrency - this.options.running())
    do {
      this.pollAgain = false
      let free = freeSlots()
      const buckets = leases.buckets.filter((bucket) => leases.holds(bucket))
      let claimed: readonly ClaimedRow[] = []
      if (free > 0) {
        faultPoint("claim.before")
        // What each claimed execution's pass replays from comes back with the claim.
        ;({ claimed, limit: free } = await this.options.claim(buckets, freeSlots))
        faultPoint("claim.after")
      }
      for (const row of claimed) {
        internals.metrics.timerClaimed(row.lagMs)
        this.options.dispatch(row)
      }
      this.saturated = free === 0 || claimed.length === free
      if (claimed.length === free && free > 0) this.pollAgain = true
      if (this.lookAhead && !this.pollAgain && free > 0 && buckets.length > 0) {
        this.lookAhead = false
        const due = await nextDue(internals.storage.db, internals.clock, buckets, this.pollMs)
        // A row already due that this claim did not get is locked by another claimer: look again
        // shortly rather than spin.
        if (due !== null) {
          this.pollAt(Date.now() + Math.max(MIN_LOOK_AHEAD_MS, due - this.options.now()))
        }
      }
    } while (this.pollAgain && !this.stopped)
  }

  /** Whether notifications reach the runner: while they do not, it polls every `FAST_POLL_MS`. */
  notificationsChanged(status: NotificationStatus): void {
    if (status.state === "unavailable" && !this.degraded) {
      this.degraded = true
      this.pollMs = Math.min(this.options.pollMs, FAST_POLL_MS)
      this.options.log.warn(
        `notifications do not reach this runner; polling every ${this.pollMs} ms instead`,
        { reason: status.reason },
      )
      this.pollAt(Date.now() + this.pollMs)
    } else if (status.state === "working" && this.degraded) {
      this.degraded = false
      this.pollMs = this.options.pollMs
      this.options.log.info("notifications work again", { pollMs: this.pollMs })
    }
  }

  /** Claims nothing more; a poll under way ends after its current claim. */
  stop(): void {
    this.stopped = true
    if (this.pollTimer !== undefined) clearTimeout(this.pollTimer)
  }
}
