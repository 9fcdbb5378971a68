/**
 * `akter check`: proves, before a deploy, that the manifests can still run every execution in
 * flight. It compares `manifests/` against every released manifest of the lock file and, given
 * `--database-url`, against the open executions themselves (then a change no open execution can
 * observe is only a warning). With `--app` (or the project's `"akter": { "app": … }` setting) it
 * also lints the implementations (codegen/implementationLint/, loaded only then: it brings the
 * TypeScript compiler). Exit 0 compatible, 1 breaking, 2 invalid input or usage; a crash exits 2,
 * never 1.
 */
import path from "node:path"
import {
  exitCodeOf,
  formatGithub,
  formatJson,
  formatText,
} from "../runtime/compatibility/report.js"
import { checkProject, currentManifests } from "./compatibility/checkProject.js"
import { outputFormatOf, printInvalidInput, runReporting } from "./commandOutput.js"
import {
  databaseUrlProblem,
  describeTarget,
  readOpenSnapshot,
  withDatabase,
} from "./databaseSession.js"
import { IGNORE_FILE_NAME, readIgnoreFile } from "./compatibility/ignoreFile.js"
import {
  EMPTY_LOCK,
  LOCK_OPTION,
  lockFileLocation,
  readLockFile,
} from "./compatibility/lockFile.js"
import { slowProgress } from "./slowProgress.js"
import { projectPath } from "../codegen/emit/generate.js"
import {
  checkExitCode,
  formatCheckGithub,
  formatCheckJson,
  formatCheckText,
} from "../codegen/implementationLint/lintReport.js"
import type { LintResult } from "../codegen/implementationLint/lintImplementations.js"
import { loadManifests } from "../codegen/manifest/loadManifests.js"
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
    "Compares the manifests against every released manifest in the lock file and, with --database-url, against the open executions (grouped by workflow and start manifest, with what they recorded). With --app, also lints the implementations: what a body reaches that a replay cannot repeat, and steps or markers no body uses. Prints every finding as file:line:column: severity[rule] message, with its fix. Exit 0 compatible, 1 breaking, 2 invalid input or usage.",
  options: {
    ...MANIFESTS_OPTION.spec,
    ...LOCK_OPTION.spec,
    ignore: { type: "string" },
    "database-url": { type: "string" },
    rollback: { type: "boolean" },
    app: { type: "string", multiple: true },
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
      "--app PATH|GLOB",
      'also lint the implementation sources (repeatable; default: the "akter": { "app": … } setting of package.json)',
    ],
    [
      "--format text|json|github",
      "json prints { findings, ignoreProblems, summary, exitCode }; github prints annotations",
    ],
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean"; multiple?: boolean }>>

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
    const appPatterns =
      options.app === undefined
        ? folders.app
        : options.app.map((pattern) => path.resolve(cwd, pattern))
    let lint: LintResult | undefined
    if (appPatterns.length > 0) {
      const progress = slowProgress(spec.name)
      progress.stage(`linting the implementations of ${appPatterns.map(shown).join(", ")}`)
      try {
        const { lintApp, AppPatternsUnmatched } =
          await import("../codegen/implementationLint/lintImplementations.js")
        try {
          lint = lintApp({ ...folders, cwd, patterns: appPatterns, manifests: loaded.manifests })
        } catch (error) {
          throw error instanceof AppPatternsUnmatched ? new UsageError(error.message) : error
        }
      } finally {
        progress.done()
      }
    }
    const exitCode =
      lint === undefined
        ? exitCodeOf({ status: "checked", ...report })
        : checkExitCode(report, lint.findings)
    if (format === "json") {
      console.log(lint === undefined ? formatJson(report) : formatCheckJson(report, lint.findings))
    } else if (format === "github") {
      const annotations =
        lint === undefined ? formatGithub(report) : formatCheckGithub(report, lint.findings)
      if (annotations !== "") console.log(annotations)
    } else {
      console.log(lint === undefined ? formatText(report) : formatCheckText(report, lint.findings))
    }

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
      ...(lint === undefined
        ? []
        : [
            `and ${plural(lint.implementations, "implementation")} in ${plural(lint.files, "source file")}`,
          ]),
    ].join(" ")
    console.error(
      `akter check: ${against}: ${exitCode === EXIT_OK ? "compatible" : exitCode === 1 ? "breaking" : "invalid ignore entries"}`,
    )
    return exitCode
  })
