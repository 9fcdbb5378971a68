/**
 * `akter check`: proves, before a deploy, that the manifests can still run every execution in
 * flight. It compares `manifests/` against every released manifest of the lock file and, given
 * `--database-url`, against the open executions themselves (then a change no open execution can
 * observe is only a warning). Exit 0 compatible, 1 breaking, 2 invalid input or usage; a crash
 * exits 2, never 1.
 */
import path from "node:path"
import {
  exitCodeOf,
  formatGithub,
  formatJson,
  formatText,
} from "../../runtime/compatibility/report.js"
import { checkProject, currentManifests } from "../compatibility/checkProject.js"
import { outputFormatOf, printInvalidInput, runReporting } from "../compatibility/commandOutput.js"
import {
  databaseUrlProblem,
  describeTarget,
  readOpenSnapshot,
  withDatabase,
} from "../compatibility/databaseSession.js"
import { IGNORE_FILE_NAME, readIgnoreFile } from "../compatibility/ignoreFile.js"
import {
  EMPTY_LOCK,
  LOCK_OPTION,
  lockFileLocation,
  readLockFile,
} from "../compatibility/lockFile.js"
import { slowProgress } from "../compatibility/slowProgress.js"
import { projectPath } from "../emit/generate.js"
import { loadManifests } from "../manifest/loadManifests.js"
import {
  EXIT_OK,
  HELP_LINE,
  MANIFESTS_OPTION,
  UsageError,
  parseCommandLine,
  type CommandSpec,
} from "./commandLine.js"
import { projectFolders } from "./projectConfig.js"

const spec = {
  name: "check",
  summary:
    "Compares the manifests against every released manifest in the lock file and, with --database-url, against the open executions (grouped by workflow and start manifest, with what they recorded). Prints every finding as file:line:column: severity[rule] message, with its fix. Exit 0 compatible, 1 breaking, 2 invalid input or usage.",
  options: {
    ...MANIFESTS_OPTION.spec,
    ...LOCK_OPTION.spec,
    ignore: { type: "string" },
    "database-url": { type: "string" },
    rollback: { type: "boolean" },
    format: { type: "string" },
  },
  optionHelp: [
    MANIFESTS_OPTION.help,
    LOCK_OPTION.help,
    [
      "--ignore FILE",
      `accepted breaks, each with a reason (default: ${IGNORE_FILE_NAME} in the project root, if present)`,
    ],
    [
      "--database-url URL",
      "also check against the open executions of this Postgres database (read only, one snapshot)",
    ],
    ["--rollback", "also report what the previous release would misread after a rollback"],
    [
      "--format text|json|github",
      "json prints { findings, ignoreProblems, summary, exitCode }; github prints annotations",
    ],
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

export const run = (args: readonly string[]): Promise<number> =>
  runReporting(spec, args, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const format = outputFormatOf(options.format, ["text", "json", "github"] as const)
    const databaseUrl = options["database-url"]
    if (databaseUrl !== undefined) {
      const problem = databaseUrlProblem(databaseUrl)
      if (problem !== undefined) throw new UsageError(problem)
    }
    const cwd = process.cwd()
    const folders = await projectFolders({ cwd, manifests: options.manifests })
    const shown = (file: string) => projectPath(folders.root, file)

    const loaded = await loadManifests({ dir: folders.manifestsDir, root: folders.root })
    const lockFile = lockFileLocation(folders, cwd, options.lock)
    const lockReading = await readLockFile(lockFile.path, lockFile.file)
    if (lockReading === undefined && options.lock !== undefined) {
      throw new UsageError(`there is no lock file ${lockFile.file}`)
    }
    const ignorePath =
      options.ignore === undefined
        ? path.join(folders.root, IGNORE_FILE_NAME)
        : path.resolve(cwd, options.ignore)
    const ignoreReading = await readIgnoreFile(ignorePath, shown(ignorePath))
    if (ignoreReading === undefined && options.ignore !== undefined) {
      throw new UsageError(`there is no ignore file ${shown(ignorePath)}`)
    }
    const invalid = [
      ...loaded.diagnostics.filter((d) => d.severity === "error"),
      ...(lockReading?.diagnostics ?? []),
      ...(ignoreReading?.diagnostics ?? []),
    ]
    if (invalid.length > 0) return printInvalidInput(spec.name, format, invalid)
    if (lockReading === undefined) {
      console.error(
        `akter check: no lock file ${lockFile.file}, so no released manifest to compare against; \`akter lock\` records the current manifests when you release them`,
      )
    }
    const lock = lockReading?.lock ?? EMPTY_LOCK

    const open =
      databaseUrl === undefined
        ? undefined
        : await withDatabase({ databaseUrl }, slowProgress(spec.name), (storage) =>
            readOpenSnapshot(storage.db),
          )
    const report = checkProject({
      current: currentManifests(loaded.manifests),
      lock,
      rollback: options.rollback === true,
      ...(open === undefined ? {} : { open }),
      ...(ignoreReading === undefined
        ? {}
        : { ignores: { ...ignoreReading, file: shown(ignorePath) } }),
    })
    const exitCode = exitCodeOf({ status: "checked", ...report })
    if (format === "json") console.log(formatJson(report))
    else if (format === "github") {
      const annotations = formatGithub(report)
      if (annotations !== "") console.log(annotations)
    } else console.log(formatText(report))

    const against = [
      plural(loaded.manifests.length, "manifest"),
      `against ${plural(lock.entries.length, "locked manifest")}`,
      ...(open === undefined || databaseUrl === undefined
        ? []
        : [
            `and ${plural(
              open.groups.reduce((total, group) => total + group.count, 0),
              "open execution",
            )} in ${describeTarget({ databaseUrl })}`,
          ]),
    ].join(" ")
    console.error(
      `akter check: ${against}: ${exitCode === EXIT_OK ? "compatible" : exitCode === 1 ? "breaking" : "invalid ignore entries"}`,
    )
    return exitCode
  })
