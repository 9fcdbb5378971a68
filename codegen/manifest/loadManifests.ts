/**
 * Reads every manifest of a folder, validates all of them, and returns the models with their source
 * positions, or every problem found. Nothing downstream (emitters, hashing, check) runs on a set of
 * manifests that has an error.
 */
import { readdir, readFile, stat } from "node:fs/promises"
import path from "node:path"
import { checkManifest, type CheckedManifest } from "./checkManifest.js"
import { didYouMean } from "./didYouMean.js"
import type { Diagnostic } from "./diagnostics.js"
import { ManifestReport } from "./manifestReport.js"
import { toPlainValue, type PlainValue } from "./plainValue.js"
import type { LoadedManifest } from "./loadedManifest.js"
import { yamlSourcePositions } from "./sourcePositions.js"
import { parseManifestYaml, YAML_NESTING_LIMIT } from "./yamlDocument.js"

export type { ManifestPath, Position, SourcePositions } from "./sourcePositions.js"

export type { LoadedManifest } from "./loadedManifest.js"

export interface LoadResult {
  /** Sorted by owner name; empty when any error was found. */
  readonly manifests: readonly LoadedManifest[]
  readonly diagnostics: readonly Diagnostic[]
}

export interface LoadOptions {
  /** Folder holding `*.yaml` / `*.yml` manifests. */
  readonly dir: string
  /** Project root that `file` paths are relative to (default: the current directory). */
  readonly root?: string
}

/** Larger files are refused unread: a manifest is a page or two of YAML. */
export const MAX_MANIFEST_BYTES = 1024 * 1024

/** One manifest's text, as `loadManifestSources` takes it. */
export interface ManifestSource {
  /** Path relative to the project root, with `/` separators. */
  readonly file: string
  readonly text: string
}

interface FileResult {
  readonly file: string
  readonly report: ManifestReport
  readonly checked: CheckedManifest | undefined
}

const toPosix = (file: string) => file.split(path.sep).join("/")

const byLocation = (a: Diagnostic, b: Diagnostic) =>
  (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) ||
  a.line - b.line ||
  a.column - b.column ||
  (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0)

const folderDiagnostic = (
  file: string,
  rule: string,
  message: string,
  hint: string,
): Diagnostic => ({
  file,
  line: 1,
  column: 1,
  rule,
  severity: rule === "no-manifests" ? "warning" : "error",
  message,
  hint,
  path: "",
})

/**
 * Reads `*.yaml` and `*.yml` in `dir` (sorted by name, not recursing), checks each and then the
 * set as a whole. Never throws on bad input: a missing folder, an unreadable or oversized file and
 * every problem inside a manifest come back as diagnostics.
 *
 * @example
 * const { manifests, diagnostics } = await loadManifests({ dir: "manifests" })
 * for (const d of diagnostics) console.error(formatDiagnostic(d))
 */
export const loadManifests = async (options: LoadOptions): Promise<LoadResult> => {
  const root = path.resolve(options.root ?? ".")
  const dir = path.resolve(root, options.dir)
  const shownDir = toPosix(path.relative(root, dir)) || "."
  let names: string[]
  try {
    names = (await readdir(dir)).filter((name) => /\.ya?ml$/.test(name)).sort()
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return {
      manifests: [],
      diagnostics: [
        folderDiagnostic(
          shownDir,
          "manifest-folder-missing",
          code === "ENOENT"
            ? `the manifest folder ${shownDir} does not exist`
            : `cannot read the manifest folder ${shownDir}: ${code ?? String(error)}`,
          "create it, or pass the folder that holds your manifests (--manifests DIR)",
        ),
      ],
    }
  }
  const sources: ManifestSource[] = []
  const diagnostics: Diagnostic[] = []
  for (const name of names) {
    const absolute = path.join(dir, name)
    const file = toPosix(path.relative(root, absolute))
    try {
      const info = await stat(absolute)
      if (!info.isFile()) continue
      if (info.size > MAX_MANIFEST_BYTES) {
        diagnostics.push(
          folderDiagnostic(
            file,
            "file-too-large",
            `the file is ${info.size} bytes, more than the ${MAX_MANIFEST_BYTES} a manifest may have`,
            "split it into one manifest per owner",
          ),
        )
        continue
      }
      sources.push({ file, text: await readFile(absolute, "utf8") })
    } catch (error) {
      diagnostics.push(
        folderDiagnostic(
          file,
          "unreadable-file",
          `cannot read the file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
          "check its permissions",
        ),
      )
    }
  }
  if (names.length === 0) {
    diagnostics.push(
      folderDiagnostic(
        shownDir,
        "no-manifests",
        `${shownDir} holds no *.yaml or *.yml manifest`,
        "add one manifest per owner type",
      ),
    )
  }
  const loaded = loadManifestSources(sources)
  const all = [...diagnostics, ...loaded.diagnostics].sort(byLocation)
  const failed = all.some((d) => d.severity === "error")
  return { manifests: failed ? [] : loaded.manifests, diagnostics: all }
}

/**
 * Checks manifests given as text, as `loadManifests` does after reading them; for tools that hold
 * manifests in memory (an editor buffer, a test).
 *
 * @example
 * loadManifestSources([{ file: "manifests/order.yaml", text }])
 */
export const loadManifestSources = (sources: readonly ManifestSource[]): LoadResult => {
  const results: FileResult[] = []
  const loaded: LoadedManifest[] = []
  for (const { file, text } of sources) {
    const result = checkFile(file, text)
    results.push(result)
    if (result.checked?.manifest !== undefined && !result.report.hasErrors) {
      loaded.push({ file, manifest: result.checked.manifest, positions: result.report.positions })
    }
  }
  checkAcrossManifests(results)
  const diagnostics = results.flatMap((result) => result.report.diagnostics).sort(byLocation)
  const failed = diagnostics.some((d) => d.severity === "error")
  loaded.sort((a, b) =>
    a.manifest.owner < b.manifest.owner ? -1 : a.manifest.owner > b.manifest.owner ? 1 : 0,
  )
  return { manifests: failed ? [] : loaded, diagnostics }
}

const checkFile = (file: string, text: string): FileResult => {
  const parsed = parseManifestYaml(text)
  const root = parsed.document?.contents ?? null
  const conversion = toPlainValue(root)
  const positions = yamlSourcePositions(root, parsed.lineCounter, conversion.aliasTargets)
  const report = new ManifestReport(file, positions)
  const at = (offset: number) => {
    const { line, col } = parsed.lineCounter.linePos(offset)
    return { line, column: col }
  }
  for (const problem of [...parsed.problems, ...conversion.problems]) {
    report.errorAt(at(problem.offset), problem.rule, problem.message, problem.hint)
  }
  // A syntax error leaves the data untrustworthy; a duplicate key, an unknown tag or a second
  // document leave a first document worth checking, so its other problems are reported too.
  const unreadable = report.diagnostics.some((d) => d.rule === "yaml-syntax")
  if (unreadable || conversion.value === undefined) {
    return { file, report, checked: declaredNames(conversion.value) }
  }
  if (parsed.document === undefined || conversion.value === null) {
    report.errorAt(
      { line: 1, column: 1 },
      "empty-manifest",
      "the file holds no manifest",
      "start it with akter: 1, owner: and workflows:",
    )
    return { file, report, checked: undefined }
  }
  const checked = checkManifest(conversion.value, report)
  if (parsed.truncatedAt !== undefined && !report.hasErrors) {
    report.errorAt(
      at(parsed.truncatedAt),
      "nesting-too-deep",
      `YAML nests deeper than ${YAML_NESTING_LIMIT} levels here`,
      "no manifest needs this much nesting; flatten it",
    )
  }
  return { file, report, checked }
}

/**
 * The owner and workflow names of a file that could not be checked (a YAML error), so that other
 * manifests starting its workflows are not reported as well.
 */
const declaredNames = (value: PlainValue | undefined): CheckedManifest | undefined => {
  const root = typeof value === "object" && value !== null && !Array.isArray(value) ? value : {}
  const owner = root["owner"]
  const workflows = root["workflows"]
  if (typeof owner !== "string") return undefined
  return {
    manifest: undefined,
    owner,
    workflows: new Set(
      typeof workflows === "object" && workflows !== null ? Object.keys(workflows) : [],
    ),
    startTargets: [],
  }
}

/**
 * Checks that need every manifest: one file per owner, owner names that differ in more than case
 * (each owner's generated folder is named after it, and macOS and Windows file systems ignore
 * case), and `start` targets that exist.
 */
const checkAcrossManifests = (results: readonly FileResult[]): void => {
  const owners = new Map<string, FileResult>()
  const ignoringCase = new Map<string, FileResult>()
  for (const result of results) {
    const owner = result.checked?.owner
    if (owner === undefined) continue
    const first = owners.get(owner)
    const sameFolder = ignoringCase.get(owner.toLowerCase())
    if (first !== undefined) {
      result.report.error(
        ["owner"],
        "duplicate-owner",
        `owner "${owner}" is also declared by ${first.file}`,
        {
          hint: "each owner type has exactly one manifest; merge the two files or rename one owner",
        },
      )
    } else if (sameFolder !== undefined) {
      result.report.error(
        ["owner"],
        "duplicate-owner",
        `owner "${owner}" differs from owner "${sameFolder.checked!.owner}" of ${sameFolder.file} only in case, so their generated folders would be one on a case-insensitive file system`,
        { hint: "rename one of the owners" },
      )
    }
    if (first === undefined) owners.set(owner, result)
    if (sameFolder === undefined) ignoringCase.set(owner.toLowerCase(), result)
  }
  for (const result of results) {
    for (const target of result.checked?.startTargets ?? []) {
      const owner = owners.get(target.owner)
      if (owner === undefined) {
        result.report.error(
          [...target.path.slice(0, -1), "owner"],
          "unknown-owner",
          `no manifest declares owner "${target.owner}"`,
          {
            hint:
              didYouMean(target.owner, owners.keys()) ?? "add its manifest to the manifest folder",
          },
        )
        continue
      }
      if (!owner.checked!.workflows.has(target.workflow)) {
        result.report.error(
          target.path,
          "unknown-workflow",
          `owner "${target.owner}" has no workflow "${target.workflow}"`,
          {
            hint:
              didYouMean(target.workflow, owner.checked!.workflows) ??
              `its workflows: ${[...owner.checked!.workflows].join(", ")}`,
          },
        )
      }
    }
  }
}
