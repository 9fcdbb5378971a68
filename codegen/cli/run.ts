/**
 * `akter run`: a runner process for an application's workflow implementations. It loads the module
 * (which exports `workflows`, and optionally `registrations`), serves until SIGTERM or SIGINT, and
 * then drains: it hands its work back at once, recording nothing half-done.
 */
import path from "node:path"
import { pathToFileURL } from "node:url"
import { createAkter } from "../../runtime/akter.js"
import type { WorkflowImplementation } from "../../runtime/engine/workflowApi.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import { startRunner } from "../../runtime/runner/runner.js"
import { IncompatibleDeployment } from "../../runtime/errors.js"
import {
  EXIT_INVALID,
  EXIT_OK,
  UsageError,
  parseCommandLine,
  runCommand,
  type CommandSpec,
} from "./commandLine.js"

const spec = {
  name: "run",
  summary:
    "Starts a runner for the workflow implementations a module exports (`export const workflows = [...]`) and serves until SIGTERM or SIGINT, then drains. Exits 2 when its manifests cannot replay executions open in the database (one line per problem) or on any other failure.",
  options: {
    app: { type: "string" },
    "database-url": { type: "string" },
    "data-dir": { type: "string" },
    concurrency: { type: "string" },
    "poll-ms": { type: "string" },
    "recovery-ms": { type: "string" },
    "lease-ms": { type: "string" },
    "pool-size": { type: "string" },
  },
  optionHelp: [
    ["MODULE | --app MODULE", "module exporting `workflows` (and optionally `registrations`)"],
    ["--database-url URL", "Postgres to serve (default: $DATABASE_URL, else embedded PGlite)"],
    [
      "--data-dir DIR",
      "PGlite data directory when no database URL is given (default .akter/pglite)",
    ],
    ["--concurrency N", "passes running at once (default 64)"],
    ["--poll-ms N", "fallback poll interval (default 1000)"],
    [
      "--recovery-ms N",
      "how long a dead runner's work waits before another resumes it (default 30000)",
    ],
    [
      "--lease-ms N",
      "bucket lease: how long a dead runner's buckets wait for a new holder (default 30000)",
    ],
    ["--pool-size N", "Postgres connections of this process (default 10)"],
    ["--help", "show this help"],
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

interface AppModule {
  readonly workflows?: readonly WorkflowImplementation[]
  readonly registrations?: readonly OwnerRegistration[]
  readonly default?: AppModule
}

const loadApp = async (modulePath: string) => {
  const url = pathToFileURL(path.resolve(modulePath)).href
  let loaded: AppModule
  try {
    loaded = (await import(url)) as AppModule
  } catch (error) {
    throw new Error(
      `cannot load ${modulePath}: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  const app =
    loaded.workflows === undefined && loaded.default !== undefined ? loaded.default : loaded
  if (!Array.isArray(app.workflows) || app.workflows.length === 0) {
    throw new Error(
      `${modulePath} must export \`workflows\`: the implementations to serve (Order.fulfill.implement(...), ...)`,
    )
  }
  return { workflows: app.workflows, registrations: app.registrations ?? [] }
}

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const first = args[0]
    const normalized =
      first !== undefined && !first.startsWith("-") ? ["--app", ...args] : [...args]
    const options = parseCommandLine(spec, normalized)
    if (options === undefined) return EXIT_OK
    if (options.app === undefined) throw new UsageError("name the module that exports `workflows`")
    const app = await loadApp(options.app)
    const databaseUrl = options["database-url"] ?? process.env["DATABASE_URL"]
    const concurrency = positiveInteger("concurrency", options.concurrency)
    const pollMs = positiveInteger("poll-ms", options["poll-ms"])
    const recoveryMs = positiveInteger("recovery-ms", options["recovery-ms"])
    const leaseMs = positiveInteger("lease-ms", options["lease-ms"])
    const poolSize = positiveInteger("pool-size", options["pool-size"])
    const akter = await createAkter({
      ...(databaseUrl === undefined ? {} : { databaseUrl }),
      ...(options["data-dir"] === undefined ? {} : { dataDir: options["data-dir"] }),
      ...(poolSize === undefined ? {} : { poolSize }),
    })
    const started = await startRunner({
      akter,
      workflows: app.workflows,
      registrations: app.registrations,
      ...(concurrency === undefined ? {} : { concurrency }),
      ...(pollMs === undefined ? {} : { pollMs }),
      ...(recoveryMs === undefined ? {} : { recoveryMs }),
      ...(leaseMs === undefined ? {} : { leaseMs }),
    }).catch(async (error: unknown) => {
      await akter.close()
      if (error instanceof IncompatibleDeployment) return error
      throw error
    })
    if (started instanceof IncompatibleDeployment) {
      console.error(`akter run: ${started.message}`)
      return EXIT_INVALID
    }
    const runner = started
    await new Promise<void>((resolve) => {
      const stop = () => resolve()
      process.once("SIGTERM", stop)
      process.once("SIGINT", stop)
    })
    await runner.close()
    await akter.close()
    return EXIT_OK
  })
