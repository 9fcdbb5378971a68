/**
 * A runner's bucket leases. On every heartbeat it renews what it holds, counts the live runners,
 * and moves toward an even share: it takes lapsed buckets while it holds fewer than
 * `ceil(buckets / runners)`, and gives back a few when it holds more (a runner joined). A dead
 * runner's buckets lapse after the lease interval and are taken by the others; a drained runner
 * gives them back at once. Runners talk only to Postgres.
 */
import { faultPoint } from "../faults.js"
import type { Logger } from "../log.js"
import type { DatabaseHealth } from "./databaseHealth.js"
import { BUCKET_COUNT } from "../owners/routing.js"
import type { DatabaseClock } from "../storage/clock.js"
import type { Db } from "../storage/database.js"
import {
  acquireLeases,
  forgetDeadRunners,
  forgetRunner,
  heartbeat,
  releaseLeases,
  renewLeases,
} from "./leaseStore.js"

export interface LeaseOptions {
  /** How long a lease lasts without renewal: the longest a dead runner's buckets wait. */
  readonly leaseMs: number
  /** How often leases are renewed and rebalanced. */
  readonly heartbeatMs: number
}

export interface LeaseChange {
  readonly acquired: readonly number[]
  readonly lost: readonly number[]
}

/** A heartbeat unanswered for this long (or the heartbeat interval, if longer) means an outage. */
const SILENCE_MS = 5000

/** Buckets handed back per heartbeat when holding more than the even share, to avoid churn. */
const RELEASE_PER_BEAT = 16

export class LeaseKeeper {
  private readonly held = new Set<number>()
  /** Local time until which the current leases are surely valid (renewal time + lease − margin). */
  private validUntil = 0
  private timer: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private beating: Promise<void> = Promise.resolve()
  /** Live runners in the database, as the last heartbeat counted them. */
  runnersAlive = 0

  constructor(
    private readonly db: Db,
    private readonly clock: DatabaseClock,
    private readonly runnerId: string,
    private readonly options: LeaseOptions,
    private readonly log: Logger,
    /** Called after each change, before released buckets are given back. */
    private readonly onChange: (change: LeaseChange) => Promise<void>,
    /** Told whether each heartbeat reached the database: the runner's outage detector. */
    private readonly health?: DatabaseHealth,
  ) {}

  get buckets(): number[] {
    return [...this.held].sort((a, b) => a - b)
  }

  /** Local time until which the leases held now surely hold, unless renewed. */
  get heldUntil(): number {
    return this.validUntil
  }

  /** Whether this runner may still act for `bucket` (held, and not past its lease by the local clock). */
  holds(bucket: number): boolean {
    return this.held.has(bucket) && Date.now() < this.validUntil
  }

  async start(): Promise<void> {
    await this.beat()
    this.schedule()
  }

  /** Runs one heartbeat now (e.g. another runner just released buckets). */
  nudge(): void {
    this.beating = this.beating.then(() => (this.stopped ? undefined : this.beat())).catch(() => {})
  }

  /** Stops renewing and gives every bucket back at once. */
  async release(): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    await this.beating
    const released = this.buckets
    this.held.clear()
    if (released.length > 0) await this.onChange({ acquired: [], lost: released })
    await releaseLeases(this.db, this.runnerId, released)
    await forgetRunner(this.db, this.runnerId)
    if (released.length > 0) this.log.info("leases released", { released: released.length })
  }

  private schedule() {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      // A heartbeat that hangs (a paused server) is an outage too; the lease still lapses by the
      // local clock meanwhile, so the runner stops writing in time.
      const patienceMs = Math.max(SILENCE_MS, this.options.heartbeatMs)
      const silence = setTimeout(() => this.health?.silent(patienceMs), patienceMs)
      this.beating = this.beat()
        .then(
          () => this.health?.answered(),
          (error) => {
            if (this.health?.failed(error) !== true) {
              this.log.warn("lease heartbeat failed", { error: String(error) })
            }
          },
        )
        .finally(() => {
          clearTimeout(silence)
          this.schedule()
        })
    }, this.options.heartbeatMs)
  }

  private async beat(): Promise<void> {
    if (this.stopped) return
    const { leaseMs } = this.options
    const started = Date.now()
    faultPoint("lease.before")
    const { alive } = await heartbeat(this.db, this.clock, this.runnerId, leaseMs, "{}")
    this.runnersAlive = alive
    const renewed = new Set(await renewLeases(this.db, this.clock, this.runnerId, leaseMs))
    const share = Math.ceil(BUCKET_COUNT / alive)
    const lost = this.buckets.filter((bucket) => !renewed.has(bucket))
    const acquired =
      renewed.size < share
        ? await acquireLeases(this.db, this.clock, this.runnerId, leaseMs, share - renewed.size)
        : []
    const excess =
      renewed.size > share
        ? [...renewed]
            .sort((a, b) => b - a)
            .slice(0, Math.min(RELEASE_PER_BEAT, renewed.size - share))
        : []
    faultPoint("lease.after")
    this.held.clear()
    for (const bucket of renewed) this.held.add(bucket)
    for (const bucket of acquired) this.held.add(bucket)
    for (const bucket of excess) this.held.delete(bucket)
    // Valid from the moment the renewal was sent, minus a margin for clock drift between machines.
    this.validUntil = started + leaseMs - Math.min(1000, leaseMs / 10)
    const gone = [...lost, ...excess]
    if (acquired.length > 0 || gone.length > 0) {
      await this.onChange({ acquired, lost: gone })
      await releaseLeases(this.db, this.runnerId, excess)
      this.log.info("leases changed", {
        acquired: acquired.length,
        lost: lost.length,
        released: excess.length,
        held: this.held.size,
        runners: alive,
      })
    }
    if (Math.random() < 0.05) await forgetDeadRunners(this.db, this.clock, leaseMs * 100)
  }
}
