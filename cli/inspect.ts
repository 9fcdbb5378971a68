/**
 * `akter inspect [EXECUTION_ID]`: lists executions (filtered by owner, workflow, status), or shows
 * one with its owner, key, start manifest, status, markers, every step with its decoded exit, due
 * times and the pending timer. Read-only: it never migrates or writes, so it is safe against a
 * production database. Exit 0 shown, 1 no such execution, 2 bad input or no database.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { sql } from "kysely"
import { InvalidExecutionId, InvalidQuery } from "../runtime/errors.js"
import {
  DEFAULT_LIST_LIMIT,
  hasAkterTables,
  showExecution,
  STATUS_FILTERS,
  type ExecutionFilter,
  type StatusFilter,
} from "../runtime/inspect/executionQueries.js"
import { listingOf, MAX_LIST_LIMIT, pageOfExecutions } from "../runtime/inspect/executionListing.js"
import { renderExecutionDetail, renderExecutionList } from "./renderInspection.js"
import type { Storage } from "../runtime/storage/openStorage.js"
import {
  EXIT_NO,
  EXIT_OK,
  FORMAT_OPTION,
  HELP_LINE,
  outputFormat,
  parseCommandLine,
  runCommand,
  UsageError,
  type CommandSpec,
} from "./commandLine.js"

const DEFAULT_DATA_DIR = ".akter/pglite"

const spec = {
  name: "inspect",
  summary:
    "Lists executions, newest first, a page at a time, or shows one execution with its markers, steps (kind, attempt, decoded exit, due time) and pending timer. Reads only: it never creates, migrates or writes a database.",
  options: {
    execution: { type: "string" },
    tenant: { type: "string" },
    owner: { type: "string" },
    workflow: { type: "string" },
    status: { type: "string" },
    limit: { type: "string" },
    cursor: { type: "string" },
    "database-url": { type: "string" },
    "data-dir": { type: "string" },
    ...FORMAT_OPTION.spec,
  },
  optionHelp: [
    ["EXECUTION_ID", "show this execution (else list executions)"],
    ["--tenant T", "only this tenant's executions (default: every tenant)"],
    ["--owner TYPE/ID", "only this owner's executions (Order/o-1001)"],
    ["--workflow W", "only this workflow (fulfill, or Order.fulfill)"],
    ["--status S", `only executions in this status: ${STATUS_FILTERS.join(", ")}`],
    [
      "--limit N",
      `list at most N executions (default ${DEFAULT_LIST_LIMIT}, at most ${MAX_LIST_LIMIT})`,
    ],
    ["--cursor C", "the next page: the cursor the previous page printed"],
    ["--database-url URL", "Postgres to read (default: $DATABASE_URL, else embedded PGlite)"],
    [
      "--data-dir DIR",
      `PGlite data directory when no database URL is given (default ${DEFAULT_DATA_DIR})`,
    ],
    FORMAT_OPTION.help(
      "json prints the execution, or { executions: [...], nextCursor }, as one JSON object",
    ),
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

const positiveInteger = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed <= 0) {
    throw new UsageError(`--${name} must be a positive integer, not ${JSON.stringify(value)}`)
  }
  return parsed
}

/** `--owner Order/o-1` → owner type and id; the id may itself contain slashes. */
const ownerFilter = (value: string): Pick<ExecutionFilter, "ownerType" | "ownerId"> => {
  const slash = value.indexOf("/")
  if (slash <= 0 || slash === value.length - 1) {
    throw new UsageError(`--owner must be TYPE/ID, like Order/o-1001, not ${JSON.stringify(value)}`)
  }
  return { ownerType: value.slice(0, slash), ownerId: value.slice(slash + 1) }
}

/** `--workflow fulfill` or `--workflow Order.fulfill`. */
const workflowFilter = (value: string): Pick<ExecutionFilter, "ownerType" | "workflow"> => {
  const dot = value.indexOf(".")
  return dot < 0
    ? { workflow: value }
    : { ownerType: value.slice(0, dot), workflow: value.slice(dot + 1) }
}

const statusFilter = (value: string): StatusFilter => {
  if ((STATUS_FILTERS as readonly string[]).includes(value)) return value as StatusFilter
  throw new UsageError(
    `--status must be one of ${STATUS_FILTERS.join(", ")}, not ${JSON.stringify(value)}`,
  )
}

const shownUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.toString()
  } catch {
    return "(unparsable database URL)"
  }
}

/** Opens the database without migrating it, and proves that akter's tables are there. */
const openForReading = async (target: {
  databaseUrl: string | undefined
  dataDir: string
}): Promise<Storage> => {
  const shown =
    target.databaseUrl === undefined ? `PGlite in ${target.dataDir}` : shownUrl(target.databaseUrl)
  // Opening a PGlite directory creates a database there: a read-only command must not.
  if (target.databaseUrl === undefined && !existsSync(join(target.dataDir, "PG_VERSION"))) {
    throw new Error(
      `${shown} holds no database: nothing has run here yet (a runner, createAkter or \`akter migrate\` creates it), or pass --data-dir or --database-url`,
    )
  }
  const { openStorage } = await import("../runtime/storage/openStorage.js")
  let storage: Storage
  try {
    storage = await openStorage(
      target.databaseUrl === undefined
        ? { dataDir: target.dataDir }
        : { databaseUrl: target.databaseUrl, poolSize: 2 },
    )
    await sql`SELECT 1`.execute(storage.db)
  } catch (error) {
    throw new Error(
      `cannot connect to ${shown}: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  if (!(await hasAkterTables(storage.db))) {
    await storage.close()
    throw new Error(
      `${shown} has no akter tables: nothing has run against it yet (a runner or createAkter migrates it), or the URL is not the one your runners use`,
    )
  }
  return storage
}

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const first = args[0]
    const normalized =
      first !== undefined && !first.startsWith("-") ? ["--execution", ...args] : [...args]
    const options = parseCommandLine(spec, normalized)
    if (options === undefined) return EXIT_OK
    const format = outputFormat(options.format)
    const filter: ExecutionFilter = {
      ...(options.workflow === undefined ? {} : workflowFilter(options.workflow)),
      ...(options.owner === undefined ? {} : ownerFilter(options.owner)),
      ...(options.status === undefined ? {} : { status: statusFilter(options.status) }),
      ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
    }
    const limit = positiveInteger("limit", options.limit)
    const execution = options.execution
    const paging = limit !== undefined || options.cursor !== undefined
    if (execution !== undefined && (Object.keys(filter).length > 0 || paging)) {
      throw new UsageError("give an execution id or filters, not both")
    }
    let listing
    try {
      listing = listingOf({ limit, cursor: options.cursor })
    } catch (error) {
      if (error instanceof InvalidQuery) throw new UsageError(error.message)
      throw error
    }
    const storage = await openForReading({
      databaseUrl: options["database-url"] ?? (process.env["DATABASE_URL"] || undefined),
      dataDir: options["data-dir"] ?? DEFAULT_DATA_DIR,
    })
    try {
      const nowMs = Date.now()
      if (execution === undefined) {
        const page = await pageOfExecutions(storage.db, filter, listing)
        if (format === "json") console.log(JSON.stringify(page))
        else {
          console.log(renderExecutionList(page.executions, nowMs))
          if (page.nextCursor !== undefined) {
            console.log(`\nmore: add --cursor ${page.nextCursor}`)
          }
        }
        return EXIT_OK
      }
      let detail
      try {
        detail = await showExecution(storage.db, execution)
      } catch (error) {
        if (error instanceof InvalidExecutionId) throw new UsageError(error.message)
        throw error
      }
      if (detail === undefined) {
        if (format === "json") console.log(JSON.stringify({ found: false, executionId: execution }))
        else console.error(`akter inspect: no execution ${execution} in this database`)
        return EXIT_NO
      }
      console.log(format === "json" ? JSON.stringify(detail) : renderExecutionDetail(detail, nowMs))
      return EXIT_OK
    } finally {
      await storage.close()
    }
  })
