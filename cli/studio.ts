/**
 * `akter studio`: serves the web dashboard (studio/) from node:http on 127.0.0.1 until SIGINT or
 * SIGTERM, against Postgres or a PGlite directory no other process holds (an `akter dev` server
 * is reached by its URL). It never migrates: a database older than this akter is refused with
 * the command that brings it up to date. Prints the URL with the token that opens it.
 */
import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { createServer } from "node:http"
import { join } from "node:path"
import { sql } from "kysely"
import { internalsOf, type Akter } from "../runtime/akter.js"
import type { CompatibilityVerdict } from "../studio/compatibilityPage.js"
import type { ScheduleDeclarations } from "../studio/schedulesPage.js"
import {
  EXIT_OK,
  FORMAT_OPTION,
  HELP_LINE,
  MANIFESTS_OPTION,
  outputFormat,
  parseCommandLine,
  runCommand,
  UsageError,
  type CommandSpec,
} from "./commandLine.js"

const DEFAULT_DATA_DIR = ".akter/pglite"
const DEFAULT_PORT = 4680
/** The migration the studio's outcome filters and overview indexes need. */
const NEEDED_MIGRATION = "0006_execution_outcome"

const spec = {
  name: "studio",
  summary:
    "Serves akter studio, a web dashboard of executions, owners, runners, compatibility and schedules, on 127.0.0.1 until interrupted, and prints its URL (which carries the token that opens it). Actions — interrupt, make a timer due now, bulk interrupt, pause or resume a schedule — need that token; --read-only shows everything and accepts no action. It never migrates the database.",
  options: {
    "database-url": { type: "string" },
    "data-dir": { type: "string" },
    port: { type: "string" },
    host: { type: "string" },
    "read-only": { type: "boolean" },
    token: { type: "string" },
    tenant: { type: "string" },
    lock: { type: "string" },
    ...MANIFESTS_OPTION.spec,
    ...FORMAT_OPTION.spec,
  },
  optionHelp: [
    ["--database-url URL", "Postgres to show (default: $DATABASE_URL, else embedded PGlite)"],
    [
      "--data-dir DIR",
      `PGlite data directory when no URL is given (default ${DEFAULT_DATA_DIR}); no other process may hold it`,
    ],
    ["--port N", `port to listen on (default ${DEFAULT_PORT}; 0 picks a free one)`],
    ["--host HOST", "address to bind (default 127.0.0.1; anything else exposes the studio)"],
    ["--read-only", "show everything, change nothing: no action is offered or accepted"],
    ["--token T", "the token that opens the studio (default: a random one, printed)"],
    ["--tenant T", "show only this tenant's executions and owners"],
    MANIFESTS_OPTION.help,
    ["--lock FILE", "lock file of released manifests (default: manifests/akter.lock.json)"],
    FORMAT_OPTION.help('json prints one line { "url", "token", "readOnly" } once listening'),
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

/**
 * The Compatibility page's verdict, computed as `akter check --database-url` computes it — the
 * manifests on disk against every locked release and the open executions of this database, with
 * the ignore file — on every visit, so an edited manifest shows at the next reload. The code
 * generator's modules load on the first visit only.
 */
const compatibilityOf =
  (akter: Akter, manifests: string | undefined, lock: string | undefined) =>
  async (): Promise<CompatibilityVerdict> => {
    const [
      path,
      { checkProject, currentManifests },
      { readOpenSnapshot },
      { IGNORE_FILE_NAME, readIgnoreFile },
      { EMPTY_LOCK, lockFileLocation, readLockFile },
      { loadManifests },
      { projectFolders },
    ] = await Promise.all([
      import("node:path"),
      import("./compatibility/checkProject.js"),
      import("./databaseSession.js"),
      import("./compatibility/ignoreFile.js"),
      import("./compatibility/lockFile.js"),
      import("../codegen/manifest/loadManifests.js"),
      import("./projectConfig.js"),
    ])
    const cwd = process.cwd()
    const folders = await projectFolders({ cwd, manifests })
    const shown = (file: string) => path.relative(folders.root, file).split(path.sep).join("/")
    const loaded = await loadManifests({ dir: folders.manifestsDir, root: folders.root })
    const lockFile = lockFileLocation(folders, cwd, lock)
    const lockReading = await readLockFile(lockFile.path, lockFile.file)
    const ignorePath = path.join(folders.root, IGNORE_FILE_NAME)
    const ignoreReading = await readIgnoreFile(ignorePath, shown(ignorePath))
    const invalid = [
      ...loaded.diagnostics.filter((d) => d.severity === "error"),
      ...(lockReading?.diagnostics ?? []),
      ...(ignoreReading?.diagnostics ?? []),
    ]
    if (invalid.length > 0) {
      throw new Error(
        `the manifests, lock or ignore file are invalid (\`akter check\` shows where): ${invalid[0]!.message}`,
      )
    }
    const lockEntries = lockReading?.lock ?? EMPTY_LOCK
    const open = await readOpenSnapshot(internalsOf(akter).storage.db)
    const report = checkProject({
      current: currentManifests(loaded.manifests),
      lock: lockEntries,
      rollback: false,
      open,
      ...(ignoreReading === undefined
        ? {}
        : { ignores: { ...ignoreReading, file: shown(ignorePath) } }),
    })
    return {
      report,
      groups: open.groups,
      source: `${loaded.manifests.length} manifests in ${shown(folders.manifestsDir) || "."} against ${lockEntries.entries.length} locked manifests${lockReading === undefined ? " (no lock file)" : ` (${lockFile.file})`} and the open executions of this database`,
    }
  }

/**
 * The Schedules page's declarations: the schedules of the manifests on disk, in canonical form,
 * read on every visit (an edited manifest shows at the next reload).
 */
const schedulesOf =
  (manifests: string | undefined) => async (): Promise<readonly ScheduleDeclarations[]> => {
    const [{ loadManifests }, { projectFolders }, { canonicalOwner }] = await Promise.all([
      import("../codegen/manifest/loadManifests.js"),
      import("./projectConfig.js"),
      import("../runtime/model/canonicalManifest.js"),
    ])
    const folders = await projectFolders({ cwd: process.cwd(), manifests })
    const loaded = await loadManifests({ dir: folders.manifestsDir, root: folders.root })
    const invalid = loaded.diagnostics.find((d) => d.severity === "error")
    if (invalid !== undefined) {
      throw new Error(`the manifests are invalid (\`akter check\` shows where): ${invalid.message}`)
    }
    return loaded.manifests.map((loadedManifest) => canonicalOwner(loadedManifest.manifest))
  }

const portOf = (value: string | undefined): number => {
  if (value === undefined) return DEFAULT_PORT
  const port = Number(value)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port must be a port number (0 to 65535), not ${JSON.stringify(value)}`)
  }
  return port
}

const openDatabase = async (databaseUrl: string | undefined, dataDir: string): Promise<Akter> => {
  // Opening a PGlite directory creates a database there: a viewer must not.
  if (databaseUrl === undefined && !existsSync(join(dataDir, "PG_VERSION"))) {
    throw new Error(
      `PGlite in ${dataDir} holds no database: nothing has run here yet, or pass --data-dir or --database-url`,
    )
  }
  const { createAkter } = await import("../runtime/akter.js")
  const akter = await createAkter({
    migrate: false,
    ...(databaseUrl === undefined ? { dataDir } : { databaseUrl, poolSize: 4 }),
  })
  try {
    const { rows } = await sql<{ found: string | null }>`
      SELECT to_regclass('akter.migrations')::text AS found`.execute(internalsOf(akter).storage.db)
    const applied =
      rows[0]?.found == null
        ? []
        : (
            await internalsOf(akter)
              .storage.db.selectFrom("akter.migrations")
              .select("name")
              .execute()
          ).map((row) => row.name)
    if (!applied.includes(NEEDED_MIGRATION)) {
      throw new Error(
        applied.length === 0
          ? "this database has no akter tables: nothing has run against it yet, or the URL is not the one your runners use"
          : `this database lacks migration ${NEEDED_MIGRATION}: run \`akter migrate\` with the same database first`,
      )
    }
  } catch (error) {
    await akter.close()
    throw error
  }
  return akter
}

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const format = outputFormat(options.format)
    const port = portOf(options.port)
    const host = options.host ?? "127.0.0.1"
    const readOnly = options["read-only"] === true
    if (options.token !== undefined && options.token.length < 16) {
      throw new UsageError("--token must be at least 16 characters")
    }
    const token = options.token ?? randomBytes(24).toString("base64url")
    const akter = await openDatabase(
      options["database-url"] ?? (process.env["DATABASE_URL"] || undefined),
      options["data-dir"] ?? DEFAULT_DATA_DIR,
    )
    const { studioHandler, serveFetchHandler } = await import("../studio/index.js")
    const studio = studioHandler(akter, {
      token,
      readOnly,
      tenant: options.tenant,
      compatibility: compatibilityOf(akter, options.manifests, options.lock),
      schedules: schedulesOf(options.manifests),
      name: "akter studio",
    })
    const server = createServer(serveFetchHandler(studio))
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(port, host, () => resolve())
    }).catch(async (error: unknown) => {
      await akter.close()
      throw new Error(`cannot listen on ${host}:${port}: ${(error as Error).message}`)
    })
    const address = server.address()
    const bound = typeof address === "object" && address !== null ? address.port : port
    const shownHost = host.includes(":") ? `[${host}]` : host
    const url = `http://${shownHost}:${bound}/?token=${token}`
    if (format === "json") console.log(JSON.stringify({ url, token, readOnly }))
    else {
      console.log(`akter studio${readOnly ? " (read-only)" : ""} on ${akter.backend}: ${url}`)
      console.log("Ctrl-C stops it.")
    }
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve)
      process.once("SIGTERM", resolve)
    })
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await studio.close()
    await akter.close()
    return EXIT_OK
  })
