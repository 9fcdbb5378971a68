/**
 * `akter run`: a runner process for an application's workflow implementations. It loads the module
 * (which exports `workflows`, and optionally `registrations`), serves until SIGTERM or SIGINT, and
 * then drains: it hands its work back at once, recording nothing half-done. It exports spans and
 * metrics when the standard OpenTelemetry variables name a collector, and serves its metrics to
 * Prometheus with `--metrics-port`.
 *
 * Production runs the application compiled to JavaScript on plain Node. A TypeScript module is
 * loaded through the project's own TypeScript loader (tsx), when Node cannot load it by itself.
 */
import { createServer, type Server } from "node:http"
import { createRequire } from "node:module"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { createAkter, type Akter } from "../runtime/akter.js"
import { prometheusMetrics } from "../runtime/observability/prometheus.js"
import type { WorkflowImplementation } from "../runtime/engine/workflowApi.js"
import type { OwnerRegistration } from "../runtime/model/registration.js"
import { startRunner } from "../runtime/runner/runner.js"
import { IncompatibleDeployment } from "../runtime/errors.js"
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
    "metrics-port": { type: "string" },
    "metrics-host": { type: "string" },
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
    ["--metrics-port N", "serve Prometheus metrics at http://HOST:N/metrics"],
    ["--metrics-host HOST", "the address the metrics server listens on (default 0.0.0.0)"],
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

const TYPESCRIPT = /\.(c|m)?tsx?$/

/**
 * Imports the application module. Node 20 cannot load TypeScript: a `.ts` module it refuses is
 * loaded again through tsx resolved from the module's own project, or refused with how to run it.
 */
const importApp = async (modulePath: string): Promise<AppModule> => {
  const file = path.resolve(modulePath)
  const url = pathToFileURL(file).href
  try {
    return (await import(url)) as AppModule
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code
    if (!TYPESCRIPT.test(file) || code !== "ERR_UNKNOWN_FILE_EXTENSION") throw error
  }
  let loader: string
  try {
    // tsx's own entry for `node --import tsx`: importing it registers its loader.
    loader = createRequire(file).resolve("tsx")
  } catch {
    throw new Error(
      `${modulePath} is TypeScript, which Node does not run by itself: compile it (\`npx tsc\`, then \`akter run\` the .js file it writes), or install a TypeScript loader in the project (\`npm install --save-dev tsx\`) and akter uses it`,
    )
  }
  await import(pathToFileURL(loader).href)
  // A new URL: the refused import stays refused under its own.
  return (await import(`${url}?loader=tsx`)) as AppModule
}

export const loadApp = async (modulePath: string) => {
  let loaded: AppModule
  try {
    loaded = await importApp(modulePath)
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

/** Serves `GET /metrics` in the Prometheus text format; resolves once listening. */
const serveMetrics = (akter: Akter, port: number, host: string): Promise<Server> =>
  new Promise((resolve, reject) => {
    const server = createServer((request, response) => {
      if (request.method !== "GET" || request.url?.split("?")[0] !== "/metrics") {
        response.writeHead(404).end()
        return
      }
      prometheusMetrics(akter)
        .then((text) => {
          response.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" })
          response.end(text)
        })
        .catch((error: unknown) => {
          response.writeHead(500).end(String(error))
        })
    })
    server.once("error", reject)
    server.listen(port, host, () => resolve(server))
  })

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const first = args[0]
    const normalized =
      first !== undefined && !first.startsWith("-") ? ["--app", ...args] : [...args]
    const options = parseCommandLine(spec, normalized)
    if (options === undefined) return EXIT_OK
    if (options.app === undefined) throw new UsageError("name the module that exports `workflows`")
    const app = await loadApp(options.app)
    const databaseUrl = options["database-url"] ?? (process.env["DATABASE_URL"] || undefined)
    const concurrency = positiveInteger("concurrency", options.concurrency)
    const pollMs = positiveInteger("poll-ms", options["poll-ms"])
    const recoveryMs = positiveInteger("recovery-ms", options["recovery-ms"])
    const leaseMs = positiveInteger("lease-ms", options["lease-ms"])
    const poolSize = positiveInteger("pool-size", options["pool-size"])
    const metricsPort = positiveInteger("metrics-port", options["metrics-port"])
    if (metricsPort === undefined && options["metrics-host"] !== undefined) {
      throw new UsageError("--metrics-host needs --metrics-port")
    }
    // Listening before the runner starts: it logs "runner started" from inside startRunner, and a
    // signal sent on that line must drain it, not kill the process by Node's default.
    const stopRequested = new Promise<void>((resolve) => {
      const stop = () => resolve()
      process.once("SIGTERM", stop)
      process.once("SIGINT", stop)
    })
    const akter = await createAkter({
      databaseUrl,
      dataDir: options["data-dir"],
      poolSize,
      // The standard OpenTelemetry variables decide: nothing is sent without an endpoint.
      telemetry: {},
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
    const metrics =
      metricsPort === undefined
        ? undefined
        : await serveMetrics(akter, metricsPort, options["metrics-host"] ?? "0.0.0.0").catch(
            async (error: unknown) => {
              await runner.close()
              await akter.close()
              throw new Error(`cannot serve metrics on port ${metricsPort}: ${String(error)}`)
            },
          )
    await stopRequested
    metrics?.close()
    await runner.close()
    await akter.close()
    return EXIT_OK
  })
