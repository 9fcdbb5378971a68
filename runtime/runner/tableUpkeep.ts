/**
 * Keeps akter's tables vacuumed and analyzed while a runner works, as autovacuum would where it
 * runs (storage/tableUpkeep.ts says what goes wrong without it). The outbox is the table that
 * needs it most: each execution's timer row is inserted at its start, moved by every claim and
 * deleted at its finish, and the claim reads the due rows of its buckets through a bitmap scan,
 * which visits each dead version again on every claim until a vacuum. Under steady load one runner
 * fell from 650 to 280 workflows/s in 150 s on a server without autovacuum (PGlite has none), and
 * with autovacuum's defaults (a visit a minute) by up to a third between visits. And the plans
 * Postgres keeps for akter's statements are made again only when a table they read is vacuumed or
 * analyzed, so a plan made while `owners` was nearly empty scanned all of it on every step batch.
 *
 * So a runner that has worked since it last looked reads every table's counts every few seconds
 * (one statement) and vacuums or analyzes the ones past their thresholds; held there, the same
 * load stayed flat. Runners take turns without coordinating: work that finds another's under way
 * on the table skips it. A failure is logged and the next look comes as scheduled.
 */
import type { AkterInternals } from "../akter.js"
import type { Logger } from "../log.js"
import { readTableActivity, upkeepDue, upkeepTable } from "../storage/tableUpkeep.js"
import type { DatabaseHealth } from "./databaseHealth.js"

/** How often a working runner looks at the counts (jittered by a quarter either way). */
export const TABLE_UPKEEP_CHECK_MS = 5_000

export interface TableUpkeepOptions {
  readonly internals: AkterInternals
  readonly log: Logger
  readonly health: DatabaseHealth
  /** A count that grows as the runner works: an idle runner sends nothing. */
  readonly worked: () => number
  /** Tracks a look under way, so a drain waits for it. */
  readonly track: (work: Promise<void>) => void
}

/** Looks now and then until the returned function is called. */
export const scheduleTableUpkeep = (options: TableUpkeepOptions): (() => void) => {
  const { internals, log, health } = options
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let workedAtLastLook = options.worked()
  const look = async () => {
    const worked = options.worked()
    if (worked === workedAtLastLook) return
    workedAtLastLook = worked
    const db = internals.storage.db
    for (const activity of await readTableActivity(db)) {
      const work = upkeepDue(activity)
      if ((!work.vacuum && !work.analyze) || stopped) continue
      const startedAt = performance.now()
      await upkeepTable(db, activity.table, work)
      log.debug("table upkeep", {
        table: activity.table,
        ...work,
        deadRows: activity.deadRows,
        changedRows: activity.changedRows,
        ms: Math.round(performance.now() - startedAt),
      })
    }
  }
  const scheduleNext = () => {
    if (stopped) return
    timer = setTimeout(
      () => {
        const looking = look()
          .catch((error: unknown) => {
            if (!health.failed(error)) {
              log.warn("vacuuming or analyzing akter's tables failed; tried again later", {
                error: String(error),
              })
            }
          })
          .finally(scheduleNext)
        options.track(looking)
      },
      TABLE_UPKEEP_CHECK_MS * (0.75 + Math.random() / 2),
    )
    timer.unref?.()
  }
  scheduleNext()
  return () => {
    stopped = true
    if (timer !== undefined) clearTimeout(timer)
  }
}
