/**
 * `akter migrate`: brings a database to akter's latest schema with the migrator runners use (one
 * transaction under an advisory lock; an edited or unknown migration stops it before any SQL runs).
 * Postgres from --database-url or $DATABASE_URL, as `akter run` picks it; otherwise embedded PGlite
 * in --data-dir (default .akter/pglite). With `--tenant-isolation ROLE` it then turns on row-level
 * security for applications connecting as ROLE (Postgres only).
 */
import { migrate } from "../runtime/storage/migrator.js"
import { enableTenantIsolation } from "../runtime/storage/tenantIsolation.js"
import { outputFormatOf, runReporting } from "./commandOutput.js"
import {
  DEFAULT_PGLITE_DIR,
  databaseUrlProblem,
  describeTarget,
  withDatabase,
  type DatabaseTarget,
} from "./databaseSession.js"
import { slowProgress } from "./slowProgress.js"
import {
  EXIT_OK,
  HELP_LINE,
  UsageError,
  parseCommandLine,
  type CommandSpec,
} from "./commandLine.js"

const spec = {
  name: "migrate",
  summary:
    "Applies akter's pending migrations to a database, in one transaction. Refuses, changing nothing, when the database has a migration this version of akter does not know or one that was edited after it was applied.",
  options: {
    "database-url": { type: "string" },
    "data-dir": { type: "string" },
    "tenant-isolation": { type: "string" },
    format: { type: "string" },
  },
  optionHelp: [
    ["--database-url URL", "Postgres to migrate (default: $DATABASE_URL, else embedded PGlite)"],
    [
      "--data-dir DIR",
      `PGlite data directory when no database URL is given (default ${DEFAULT_PGLITE_DIR})`,
    ],
    [
      "--tenant-isolation ROLE",
      "then turn on row-level security: connections as ROLE see only the tenant their akter.tenant setting names (Postgres)",
    ],
    [
      "--format text|json",
      "json prints { database, applied, alreadyApplied } (and tenantIsolation: { role })",
    ],
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

export const run = (args: readonly string[]): Promise<number> =>
  runReporting(spec, args, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const format = outputFormatOf(options.format, ["text", "json"] as const)
    const databaseUrl = options["database-url"] ?? (process.env["DATABASE_URL"] || undefined)
    if (databaseUrl !== undefined && options["data-dir"] !== undefined) {
      throw new UsageError("--data-dir is for PGlite; it cannot be combined with a database URL")
    }
    if (databaseUrl !== undefined) {
      const problem = databaseUrlProblem(databaseUrl)
      if (problem !== undefined) throw new UsageError(problem)
    }
    const isolatedRole = options["tenant-isolation"]
    if (isolatedRole !== undefined && databaseUrl === undefined) {
      throw new UsageError(
        "--tenant-isolation needs Postgres (--database-url or $DATABASE_URL): row-level security separates database roles, and embedded PGlite has one",
      )
    }
    if (isolatedRole === "") throw new UsageError("--tenant-isolation needs a role name")
    const target: DatabaseTarget =
      databaseUrl !== undefined
        ? { databaseUrl }
        : { dataDir: options["data-dir"] ?? DEFAULT_PGLITE_DIR }
    const report = await withDatabase(target, slowProgress(spec.name), async (storage) => {
      const migrated = await migrate(storage.db)
      if (isolatedRole !== undefined) {
        await enableTenantIsolation(storage.db, { role: isolatedRole })
      }
      return migrated
    })
    const database = describeTarget(target)
    const tenantIsolation =
      isolatedRole === undefined ? {} : { tenantIsolation: { role: isolatedRole } }
    if (format === "json") {
      console.log(JSON.stringify({ database, ...report, ...tenantIsolation }, null, 2))
      return EXIT_OK
    }
    for (const name of report.applied) console.log(`applied ${name}`)
    console.log(
      report.applied.length === 0
        ? `akter migrate: ${database} is up to date (${report.alreadyApplied.length} migration${report.alreadyApplied.length === 1 ? "" : "s"} applied before)`
        : `akter migrate: ${database} migrated (${report.applied.length} applied, ${report.alreadyApplied.length} before)`,
    )
    if (isolatedRole !== undefined) {
      console.log(
        `akter migrate: tenant isolation on: connections as ${isolatedRole} see only the tenant their akter.tenant setting names`,
      )
    }
    return EXIT_OK
  })
