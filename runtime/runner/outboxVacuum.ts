/**
 * Keeps the outbox free of dead row versions while a runner works. Each execution's timer row is
 * inserted at its start, moved by every claim and deleted at its finish, and every version it
 * leaves behind stays in the table until a vacuum: the claim reads the due rows of its buckets
 * through a bitmap scan, which visits each dead version again on every claim. Under steady load
 * one runner fell from 650 to 280 workflows/s in 150 s on a server without autovacuum (PGlite has
 * none), and with autovacuum's defaults (a visit a minute) by up to a third between visits.
 *
 * So a runner that has worked since it last looked reads the table's count of dead versions every
 * few seconds (one statement) and vacuums it when the count passes a threshold; held there, the
 * same load stayed flat. Runners take turns without coordinating: a vacuum that finds another
 * under way skips (outbox/outboxStore.ts `vacuumOutbox`). A failure is logged and the next look
 * comes as scheduled.
 */
import type { AkterInternals } from "../akter.js"
import type { Logger } from "../log.js"
import { outboxDeadRows, vacuumOutbox } from "../outbox/outboxStore.js"
import type { DatabaseHealth } from "./databaseHealth.js"

/** How often a working runner looks at the count (jittered by a quarter either way). */
export const OUTBOX_VACUUM_CHECK_MS = 5_000
/**
 * The dead versions that start a vacuum: at 650 workflows/s about three seconds' worth, well below
 * the tens of thousands at which claims were measured to slow down.
 */
export const OUTBOX_DEAD_ROWS_LIMIT = 5_000

export interface OutboxVacuumOptions {
  readonly internals: AkterInternals
  readonly log: Logger
  readonly health: DatabaseHealth
  /** A count that grows as the runner works: an idle runner sends nothing. */
  readonly worked: () => number
  /** Tracks a look under way, so a drain waits for it. */
  readonly track: (work: Promise<void>) => void
}

/** Looks now and then until the returned function is called. */
export const scheduleOutboxVacuums = (options: OutboxVacuumOptions): (() => void) => {
  const { internals, log, health } = options
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let workedAtLastLook = options.worked()
  const look = async () => {
    const worked = options.worked()
    if (worked === workedAtLastLook) return
    workedAtLastLook = worked
    const db = internals.storage.db
    const dead = await outboxDeadRows(db)
    if (dead < OUTBOX_DEAD_ROWS_LIMIT || stopped) return
    const startedAt = performance.now()
    await vacuumOutbox(db)
    log.debug("outbox vacuumed", { dead, ms: Math.round(performance.now() - startedAt) })
  }
  const scheduleNext = () => {
    if (stopped) return
    timer = setTimeout(
      () => {
        const looking = look()
          .catch((error: unknown) => {
            if (!health.failed(error)) {
              log.warn("vacuuming the outbox failed; tried again later", { error: String(error) })
            }
          })
          .finally(scheduleNext)
        options.track(looking)
      },
      OUTBOX_VACUUM_CHECK_MS * (0.75 + Math.random() / 2),
    )
    timer.unref?.()
  }
  scheduleNext()
  return () => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
  }
}
