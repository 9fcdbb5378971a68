/**
 * `akter dev`: the embedded database for more than one process, with nothing to install. It serves
 * the PGlite data directory over the Postgres wire protocol on a loopback port, runs a runner of the
 * app's workflows against it (as `akter run` would), and prints the `DATABASE_URL` that clients,
 * other runners and `akter inspect` use. SIGINT or SIGTERM drains the runner and closes the
 * database. The directory stays locked while it runs: a process that opens it directly is told the
 * URL instead.
 */
import { createAkter } from "../runtime/akter.js"
import { IncompatibleDeployment } from "../runtime/errors.js"
import { startRunner } from "../runtime/runner/runner.js"
import { serveDataDirectory } from "../runtime/storage/pgliteServer.js"
import {
  EXIT_INVALID,
  EXIT_OK,
  UsageError,
  parseCommandLine,
  runCommand,
  type CommandSpec,
} from "./commandLine.js"
import { loadApp } from "./run.js"

/** The port `akter dev` serves on unless told otherwise: fixed, so the printed URL stays valid. */
export const DEFAULT_DEV_PORT = 54329

const spec = {
  name: "dev",
  summary:
    "Serves the embedded PGlite database over the Postgres wire protocol on 127.0.0.1 and runs a runner for the workflows MODULE exports, until SIGINT or SIGTERM. Prints the DATABASE_URL that clients, other runners and `akter inspect` use while it runs. Exits 2 on failure (a port in use, a directory another process holds, a module that cannot be loaded).",
  options: {
    app: { type: "string" },
    port: { type: "string" },
    "data-dir": { type: "string" },
    "poll-ms": { type: "string" },
    format: { type: "string" },
  },
  optionHelp: [
    ["MODULE | --app MODULE", "module exporting `workflows` (and optionally `registrations`)"],
    ["--port N", `loopback port to serve the database on (default ${DEFAULT_DEV_PORT}; 0: any)`],
    ["--data-dir DIR", "PGlite data directory (default .akter/pglite)"],
    ["--poll-ms N", "the runner's fallback poll interval (default 1000)"],
    ["--format text|json", "json: print one JSON line { url, port, dataDir } once serving"],
    ["--help", "show this help"],
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

const portNumber = (value: string | undefined): number => {
  if (value === undefined) return DEFAULT_DEV_PORT
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65_535) {
    throw new UsageError(`--port must be a port number (0 to 65535), not ${JSON.stringify(value)}`)
  }
  return parsed
}

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const first = args[0]
    const normalized =
      first !== undefined && !first.startsWith("-") ? ["--app", ...args] : [...args]
    const options = parseCommandLine(spec, normalized)
    if (options === undefined) return EXIT_OK
    if (options.app === undefined) throw new UsageError("name the module that exports `workflows`")
    const format = options.format ?? "text"
    if (format !== "text" && format !== "json") {
      throw new UsageError(`--format must be text or json, not ${JSON.stringify(format)}`)
    }
    const port = portNumber(options.port)
    const pollMs = options["poll-ms"] === undefined ? undefined : Number(options["poll-ms"])
    if (pollMs !== undefined && (!Number.isInteger(pollMs) || pollMs <= 0)) {
      throw new UsageError(`--poll-ms must be a positive integer, not ${options["poll-ms"]}`)
    }
    const dataDir = options["data-dir"] ?? ".akter/pglite"
    const app = await loadApp(options.app)
    const served = await serveDataDirectory({ dataDir, port }).catch((error: unknown) => {
      const code = (error as { code?: unknown } | null)?.code
      if (code === "EADDRINUSE") {
        throw new Error(
          `port ${port} on 127.0.0.1 is in use (another akter dev?): pass --port N, or --port 0 for any free port`,
        )
      }
      throw error
    })
    const stopping = new Promise<void>((resolve) => {
      process.once("SIGTERM", () => resolve())
      process.once("SIGINT", () => resolve())
    })
    let akter: Awaited<ReturnType<typeof createAkter>> | undefined
    let stopped = false
    try {
      akter = await createAkter({ databaseUrl: served.url, telemetry: {} })
      const started = await startRunner({
        akter,
        workflows: app.workflows,
        registrations: app.registrations,
        ...(pollMs === undefined ? {} : { pollMs }),
      }).catch((error: unknown) => {
        if (error instanceof IncompatibleDeployment) return error
        throw error
      })
      if (started instanceof IncompatibleDeployment) {
        console.error(`akter dev: ${started.message}`)
        return EXIT_INVALID
      }
      if (format === "json") {
        console.log(JSON.stringify({ url: served.url, port: served.port, dataDir }))
      } else {
        console.log(
          [
            `akter dev: serving ${dataDir} at 127.0.0.1:${served.port}, with a runner of ${options.app}`,
            "clients, other runners and akter inspect connect with:",
            "",
            `  DATABASE_URL=${served.url}`,
            "",
            "Ctrl-C stops it.",
          ].join("\n"),
        )
      }
      await stopping
      await started.close()
      stopped = true
      return EXIT_OK
    } finally {
      await akter?.close()
      await served.close()
      if (stopped) console.log(`akter dev: stopped; ${dataDir} is free`)
    }
  })
