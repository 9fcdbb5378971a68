/**
 * Timers a runner claimed but will not run. A claim moves a timer a recovery interval ahead (the
 * wait if the runner dies); when the runner instead gives the execution up (a lapsed lease, a drain)
 * it makes the timer due now, so whoever holds the bucket resumes it at once. When the database was
 * lost, the timer is remembered and made due once the database is back.
 */
import type { AkterInternals } from "../akter.js"
import type { Logger } from "../log.js"
import { makeDueNow } from "../outbox/outboxStore.js"
import type { DatabaseHealth } from "./databaseHealth.js"

/** A claimed timer, by its row's key. */
export interface ClaimedTimer {
  readonly routingKey: string
  readonly executionId: string
}

export class TimerHandBack {
  /** Executions whose pass failed for want of the database: made due again once it is back. */
  private readonly resumeWhenBack = new Map<string, ClaimedTimer>()

  constructor(
    private readonly internals: AkterInternals,
    private readonly log: Logger,
    private readonly health: DatabaseHealth,
  ) {}

  /**
   * Makes the timers due now rather than a recovery interval ahead as their claim set them. Best
   * effort: if it fails, the recovery interval still resumes them.
   */
  dueNow(timers: readonly ClaimedTimer[]): Promise<void> {
    return makeDueNow(this.internals.storage.db, this.internals.clock, timers).catch((error) => {
      if (this.health.failed(error)) {
        for (const timer of timers) this.whenBack(timer.routingKey, timer.executionId)
      } else this.log.warn("could not make claimed timers due again", { error: String(error) })
    })
  }

  /** The database was lost under this execution's pass: its timer is made due once it is back. */
  whenBack(routingKey: string, executionId: string): void {
    this.resumeWhenBack.set(executionId, { routingKey, executionId })
  }

  /** The database is back: the timers remembered meanwhile, forgotten here. */
  takeRemembered(): ClaimedTimer[] {
    const timers = [...this.resumeWhenBack.values()]
    this.resumeWhenBack.clear()
    return timers
  }
}
