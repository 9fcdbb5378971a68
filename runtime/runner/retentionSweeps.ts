/**
 * The retention sweeps a runner runs now and then (retention/sweepRetention.ts): every runner may,
 * and they take turns. The interval is jittered so runners started together do not all sweep at
 * once; a failed sweep is logged and the next one comes as scheduled. Stopping also stops a sweep
 * under way between two batches, so a paced sweep catching up a backlog does not outlive its runner.
 */
import type { AkterInternals } from "../akter.js"
import type { Logger } from "../log.js"
import {
  checkedRetentionOptions,
  sweepRetention,
  type RetentionOptions,
} from "../retention/sweepRetention.js"

const DEFAULT_RETENTION_EVERY_MS = 10 * 60 * 1000

export interface RetentionSchedule {
  /** How long finished executions (and the rest) are kept; the sweep's default if absent. */
  readonly keepMs?: number | undefined
  /** How often to sweep (default 10 minutes), counted from the end of the last sweep. */
  readonly everyMs?: number | undefined
  /** The share of its time a sweep spends deleting (default 0.2); see `RetentionOptions`. */
  readonly dutyCycle?: number | undefined
}

/** What each sweep of the schedule is asked for (the sweep's defaults where it says nothing). */
const sweepOptionsOf = (retention: RetentionSchedule): RetentionOptions => ({
  ...(retention.keepMs === undefined ? {} : { keepMs: retention.keepMs }),
  ...(retention.dutyCycle === undefined ? {} : { dutyCycle: retention.dutyCycle }),
})

const everyMsOf = (retention: RetentionSchedule) => retention.everyMs ?? DEFAULT_RETENTION_EVERY_MS

/**
 * Throws a `RangeError` naming the first option of `retention` out of range (checked when the
 * runner starts, before it accepts anything).
 */
export const checkRetentionSchedule = (retention: RetentionSchedule): void => {
  checkedRetentionOptions(sweepOptionsOf(retention))
  const everyMs = everyMsOf(retention)
  if (!(Number.isFinite(everyMs) && everyMs > 0)) {
    throw new RangeError(`retention everyMs must be a positive number of ms, got ${everyMs}`)
  }
}

/** Schedules sweeps until the returned function is called. */
export const scheduleRetentionSweeps = (
  internals: AkterInternals,
  log: Logger,
  retention: RetentionSchedule,
): (() => void) => {
  const stopping = new AbortController()
  const options: RetentionOptions = { signal: stopping.signal, ...sweepOptionsOf(retention) }
  let timer: ReturnType<typeof setTimeout> | undefined
  const scheduleNext = () => {
    if (stopping.signal.aborted) return
    const everyMs = everyMsOf(retention)
    timer = setTimeout(
      () => {
        sweepRetention(internals, options)
          .then((report) => {
            if (report.executions + report.events + report.receipts + report.manifests > 0) {
              log.info("retention sweep", { ...report })
            }
          })
          .catch((error) => log.error("retention sweep failed", { error: String(error) }))
          .finally(scheduleNext)
      },
      everyMs * (0.75 + Math.random() / 2),
    )
    timer.unref?.()
  }
  scheduleNext()
  return () => {
    stopping.abort()
    if (timer !== undefined) clearTimeout(timer)
  }
}
