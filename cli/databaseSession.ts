/**
 * How the CLI reaches a database: Postgres from a URL (shown without its password), or PGlite in a
 * data directory. Failures to connect and a database without akter's tables become errors that say
 * which database and what to do, so a command can report them and exit 2.
 */
import { sql } from "kysely"
import type { OpenExecutionAggregates } from "../runtime/compatibility/openExecutions.js"
import { readOpenExecutions } from "../runtime/runner/startupCheck.js"
import type { Db } from "../runtime/storage/database.js"
import type { Storage } from "../runtime/storage/openStorage.js"
import type { Progress } from "./slowProgress.js"

/** Postgres when `databaseUrl` is set, else PGlite in `dataDir`. */
export interface DatabaseTarget {
  readonly databaseUrl?: string
  readonly dataDir?: string
}

export const DEFAULT_PGLITE_DIR = ".akter/pglite"

/** The database could not be reached or used; the message names it (without a password). */
export class DatabaseUnavailable extends Error {
  constructor(message: string) {
    super(message)
    this.name = "DatabaseUnavailable"
  }
}

/**
 * A database URL as messages show it: the password replaced by `***`.
 *
 * @example
 * shownUrl("postgres://app:secret@db:5432/shop") // "postgres://app:***@db:5432/shop"
 */
export const shownUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "(unparsable database URL)"
  }
}

/**
 * Checks a `--database-url` value: a `postgres://` or `postgresql://` URL. Returns a message for a
 * usage error, or `undefined` when it is fine.
 */
export const databaseUrlProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `--database-url must be a URL like postgres://user@host:5432/database, not ${JSON.stringify(shownUrl(url))}`
  }
  return parsed.protocol === "postgres:" || parsed.protocol === "postgresql:"
    ? undefined
    : `--database-url must start with postgres:// or postgresql://, not ${parsed.protocol}//`
}

export const describeTarget = (target: DatabaseTarget): string =>
  target.databaseUrl === undefined
    ? `PGlite in ${target.dataDir ?? DEFAULT_PGLITE_DIR}`
    : shownUrl(target.databaseUrl)

const codeOf = (error: unknown): string | undefined =>
  (error as { code?: unknown } | null)?.code === undefined
    ? undefined
    : String((error as { code: unknown }).code)

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Postgres codes of "no such table" and "no such schema": akter was never migrated here. */
const NOT_MIGRATED = new Set(["42P01", "3F000"])

/**
 * Opens the database, proves the connection with one round trip, runs `work`, and closes it. The
 * progress stage names the database while connecting, so a slow network shows on stderr.
 *
 * @example
 * const open = await withDatabase({ databaseUrl }, progress, (storage) => readOpenSnapshot(storage.db))
 */
export const withDatabase = async <A>(
  target: DatabaseTarget,
  progress: Progress,
  work: (storage: Storage) => Promise<A>,
): Promise<A> => {
  const shown = describeTarget(target)
  progress.stage(`connecting to ${shown}`)
  let storage: Storage
  try {
    // Loaded only when a command reaches a database: PGlite takes a while to load.
    const { openStorage } = await import("../runtime/storage/openStorage.js")
    storage = await openStorage(
      target.databaseUrl === undefined
        ? { dataDir: target.dataDir ?? DEFAULT_PGLITE_DIR }
        : { databaseUrl: target.databaseUrl, poolSize: 2 },
    )
    await sql`SELECT 1`.execute(storage.db)
  } catch (error) {
    progress.done()
    throw new DatabaseUnavailable(`cannot connect to ${shown}: ${messageOf(error)}`)
  }
  try {
    return await work(storage)
  } catch (error) {
    if (NOT_MIGRATED.has(codeOf(error) ?? "")) {
      throw new DatabaseUnavailable(
        `${shown} has no akter tables (${messageOf(error)}); run \`akter migrate\` against it first, or check the URL`,
      )
    }
    throw error
  } finally {
    progress.done()
    await storage.close()
  }
}

/**
 * What every open execution recorded, read in one read-only repeatable-read snapshot, so the
 * groups, steps and markers agree with each other.
 */
export const readOpenSnapshot = (db: Db): Promise<OpenExecutionAggregates> =>
  db
    .transaction()
    .setIsolationLevel("repeatable read")
    .setAccessMode("read only")
    .execute((tx) => readOpenExecutions(tx))
