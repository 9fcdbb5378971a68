/**
 * What autovacuum would do for akter's tables, as statements a runner can send: read how much
 * each table has changed (`pg_stat_user_tables`), and vacuum or analyze the ones past a threshold.
 * Autovacuum does not run on PGlite, may be off on a server (it is on this project's CI machine),
 * and visits a database about once a minute at best.
 *
 * Two things go wrong without it. Dead row versions pile up, and a scan that reads them (the
 * claim's scan of the outbox's due rows) slows with them. And the plans a connection keeps for
 * akter's prepared statements go stale: Postgres plans a statement again only when a table it
 * reads is vacuumed, analyzed or altered, so a plan made while a table was nearly empty (a
 * sequential scan of `owners` under a hash join, say) is kept while the table grows to millions of
 * rows. Shape b run for 50,000 workflows (runner and client in one process) read 50–80 million rows
 * of `owners` that way; analyzed as it grew, 0.4–1.1 million. An analyze gives the planner the
 * table's size and contents and makes every connection plan the statements that read it again.
 */
import { sql } from "kysely"
import type { Queryable } from "./database.js"

/** One table of the `akter` schema, as the database's statistics count it (a second or so behind). */
export interface TableActivity {
  readonly table: string
  readonly liveRows: number
  readonly deadRows: number
  /** Rows inserted, updated or deleted since the table was last analyzed. */
  readonly changedRows: number
}

/** Dead versions that start a vacuum: this many, plus a fifth of the live rows (see below). */
export const VACUUM_DEAD_ROWS = 5_000
export const VACUUM_DEAD_FRACTION = 0.2
/**
 * Tables whose dead versions a hot statement reads however many live rows they hold: their
 * threshold does not grow with the live rows. The claim reads the outbox's due rows through a
 * bitmap scan of `outbox_due`, which visits every dead version among them; with 100,000 timers
 * asleep a fifth would have let 25,000 pile up between vacuums.
 */
const DEAD_ROWS_READ_BY_SCANS: ReadonlySet<string> = new Set(["outbox"])
/** Changed rows that start an analyze: this many, plus a tenth of the live rows. */
export const ANALYZE_CHANGED_ROWS = 1_000
export const ANALYZE_CHANGED_FRACTION = 0.1

/** What a table needs now: autovacuum's rule, with thresholds for a look every few seconds. */
export const upkeepDue = (
  activity: TableActivity,
): { readonly vacuum: boolean; readonly analyze: boolean } => ({
  vacuum:
    activity.deadRows >=
    VACUUM_DEAD_ROWS +
      (DEAD_ROWS_READ_BY_SCANS.has(activity.table) ? 0 : VACUUM_DEAD_FRACTION * activity.liveRows),
  analyze:
    activity.changedRows >= ANALYZE_CHANGED_ROWS + ANALYZE_CHANGED_FRACTION * activity.liveRows,
})

/** Every table of the `akter` schema with its counts: one statement. */
export const readTableActivity = async (db: Queryable): Promise<TableActivity[]> => {
  const { rows } = await sql<{
    table: string
    live: number | string | null
    dead: number | string | null
    changed: number | string | null
  }>`
    SELECT relname AS "table", n_live_tup AS live, n_dead_tup AS dead,
      n_mod_since_analyze AS changed
    FROM pg_stat_user_tables WHERE schemaname = 'akter'`.execute(db)
  return rows.map((row) => ({
    table: row.table,
    liveRows: Number(row.live ?? 0),
    deadRows: Number(row.dead ?? 0),
    changedRows: Number(row.changed ?? 0),
  }))
}

/** One table's counts (`table` without the schema), read as `readTableActivity` reads them all. */
export const readActivityOf = async (db: Queryable, table: string): Promise<TableActivity> => {
  const activity = (await readTableActivity(db)).find((each) => each.table === table)
  if (activity === undefined) throw new Error(`no table akter.${table}`)
  return activity
}

/**
 * Vacuums and/or analyzes `akter.<table>`. Neither changes a row any transaction can see, so
 * nothing an execution holds moves and no fence is needed; `SKIP_LOCKED`: when another runner's
 * (or autovacuum's) work on the table is under way, this does nothing rather than wait for it.
 */
export const upkeepTable = async (
  db: Queryable,
  table: string,
  work: { readonly vacuum: boolean; readonly analyze: boolean },
): Promise<void> => {
  const target = sql.id("akter", table)
  if (work.vacuum) {
    await (
      work.analyze
        ? sql`VACUUM (SKIP_LOCKED, ANALYZE) ${target}`
        : sql`VACUUM (SKIP_LOCKED) ${target}`
    ).execute(db)
  } else if (work.analyze) {
    await sql`ANALYZE (SKIP_LOCKED) ${target}`.execute(db)
  }
}
