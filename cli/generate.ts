/**
 * `akter generate [--check] [--watch]`: writes the typed SDK of the manifest folder into the output
 * folder, all at once or not at all. `--check` writes nothing and exits 1 naming every stale,
 * missing or orphaned file; `--watch` regenerates on every change and reports errors without
 * stopping.
 */
import { watch } from "node:fs"
import { formatDiagnostic } from "../codegen/manifest/diagnostics.js"
import {
  generate,
  projectPath,
  type GenerateOptions,
  type GenerateReport,
} from "../codegen/emit/generate.js"
import type { OutputDifferences } from "../codegen/emit/outputFolder.js"
import {
  EXIT_INVALID,
  EXIT_NO,
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
import { projectFolders, type ProjectFolders } from "./projectConfig.js"

const spec = {
  name: "generate",
  summary:
    "Validates every manifest, then writes types, schemas, registrations, clients and workflow builders into the output folder, replacing it at once.",
  options: {
    ...MANIFESTS_OPTION.spec,
    out: { type: "string" },
    check: { type: "boolean" },
    watch: { type: "boolean" },
    ...FORMAT_OPTION.spec,
  },
  optionHelp: [
    MANIFESTS_OPTION.help,
    ["--out DIR", 'output folder (default: package.json "akter.out", else generated/)'],
    ["--check", "write nothing; exit 1 naming stale, missing and orphaned files"],
    ["--watch", "regenerate whenever a manifest changes; errors are reported, not fatal"],
    FORMAT_OPTION.help("json prints one JSON object per run"),
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

/** Workflow counts from which generation takes long enough to deserve a progress line. */
const PROGRESS_FROM_WORKFLOWS = 50

/** How long `--watch` lets a burst of file events settle before regenerating. */
const WATCH_DEBOUNCE_MS = 100

type Format = "text" | "json"

const prefixed = (folders: ProjectFolders, paths: readonly string[]) =>
  paths.map((path) => `${projectPath(folders.root, folders.outDir)}/${path}`)

const jsonDifferences = (folders: ProjectFolders, differences: OutputDifferences) => ({
  missing: prefixed(folders, differences.missing),
  stale: prefixed(folders, differences.stale),
  orphans: prefixed(folders, differences.orphans),
})

/** Prints one run's outcome; resolves to its exit code. */
const report = (result: GenerateReport, folders: ProjectFolders, format: Format): number => {
  const out = `${projectPath(folders.root, folders.outDir)}/`
  const code =
    result.kind === "invalid"
      ? EXIT_INVALID
      : result.kind === "checked" &&
          result.differences.missing.length +
            result.differences.stale.length +
            result.differences.orphans.length >
            0
        ? EXIT_NO
        : EXIT_OK
  if (format === "json") {
    const { kind, diagnostics } = result
    const detail =
      result.kind === "checked" || result.kind === "generated"
        ? {
            files: prefixed(folders, result.files),
            ...jsonDifferences(folders, result.differences),
          }
        : {}
    console.log(JSON.stringify({ ok: code === EXIT_OK, kind, diagnostics, ...detail }))
    return code
  }
  const warnings = result.diagnostics.filter((d) => d.severity === "warning")
  switch (result.kind) {
    case "invalid": {
      for (const diagnostic of result.diagnostics) console.error(formatDiagnostic(diagnostic))
      const errors = result.diagnostics.length - warnings.length
      console.error(
        `akter generate: ${errors} error${errors === 1 ? "" : "s"}; ${out} left unchanged`,
      )
      break
    }
    case "unchanged":
      console.log(`akter generate: ${out} is up to date`)
      break
    case "checked": {
      for (const warning of warnings) console.error(formatDiagnostic(warning))
      const { missing, stale, orphans } = jsonDifferences(folders, result.differences)
      for (const path of missing) console.error(`missing: ${path}`)
      for (const path of stale) console.error(`stale: ${path}`)
      for (const path of orphans) console.error(`orphan: ${path}`)
      console.log(
        code === EXIT_OK
          ? `akter generate --check: ${out} is fresh`
          : `akter generate --check: ${out} is stale (${missing.length + stale.length + orphans.length} files); run akter generate`,
      )
      break
    }
    case "generated": {
      for (const warning of warnings) console.error(formatDiagnostic(warning))
      const { missing, stale, orphans } = result.differences
      console.log(
        missing.length + stale.length + orphans.length === 0
          ? `akter generate: ${out} is up to date`
          : `akter generate: wrote ${result.files.length} files to ${out} (${missing.length} new, ${stale.length} changed, ${orphans.length} removed)`,
      )
      break
    }
  }
  return code
}

const generateOptions = (
  folders: ProjectFolders,
  check: boolean,
  format: Format,
): GenerateOptions => ({
  ...folders,
  check,
  onProgress: (progress) => {
    if (format === "text" && progress.workflows >= PROGRESS_FROM_WORKFLOWS) {
      console.error(`akter generate: ${progress.message}…`)
    }
  },
})

/** Regenerates on every change of the manifest folder until interrupted; resolves to 0 then. */
const watchManifests = async (folders: ProjectFolders, format: Format): Promise<number> => {
  const options = generateOptions(folders, false, format)
  const once = async () => {
    try {
      report(await generate(options), folders, format)
    } catch (error) {
      console.error(`akter generate: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  await once()
  if (format === "text") {
    console.log(
      `akter generate: watching ${projectPath(folders.root, folders.manifestsDir)}/ (Ctrl-C to stop)`,
    )
  }
  return new Promise<number>((resolve) => {
    let timer: NodeJS.Timeout | undefined
    let running: Promise<void> = Promise.resolve()
    const watcher = watch(folders.manifestsDir, () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        running = running.then(once)
      }, WATCH_DEBOUNCE_MS)
    })
    const stop = () => {
      clearTimeout(timer)
      watcher.close()
      void running.then(() => resolve(EXIT_OK))
    }
    process.once("SIGINT", stop)
    process.once("SIGTERM", stop)
  })
}

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const format = outputFormat(options.format)
    const check = options.check === true
    if (check && options.watch === true)
      throw new UsageError("--check and --watch exclude each other")
    const folders = await projectFolders({
      cwd: process.cwd(),
      manifests: options.manifests,
      out: options.out,
    })
    if (options.watch === true) return watchManifests(folders, format)
    return report(await generate(generateOptions(folders, check, format)), folders, format)
  })
