/**
 * The retention sweeps a runner runs now and then (retention/sweepRetention.ts): every runner may,
 * and they take turns. The interval is jittered so runners started together do not all sweep at
 * once; a failed sweep is logged and the next one comes as scheduled.
 */
import type { AkterInternals } from "../akter.js"
import type { Logger } from "../log.js"
import { sweepRetention } from "../retention/sweepRetention.js"

const DEFAULT_RETENTION_EVERY_MS = 10 * 60 * 1000

export interface RetentionSchedule {
  /** How long finished executions (and the rest) are kept; the sweep's default if absent. */
  readonly keepMs?: number | undefined
  /** How often to sweep (default 10 minutes). */
  readonly everyMs?: number | undefined
}

/** Schedules sweeps until the returned function is called. */
export const scheduleRetentionSweeps = (
  internals: AkterInternals,
  log: Logger,
  retention: RetentionSchedule,
): (() => void) => {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const scheduleNext = () => {
    if (stopped) return
    const everyMs = retention.everyMs ?? DEFAULT_RETENTION_EVERY_MS
    timer = setTimeout(
      () => {
        sweepRetention(
          internals,
          retention.keepMs === undefined ? {} : { keepMs: retention.keepMs },
        )
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
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
  }
}
