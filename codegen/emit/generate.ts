/**
 * `akter generate` as a function: validate every manifest, build every file in memory, then replace
 * the output folder at once, or, with `check`, only compare. When the manifests, the generator and
 * the output folder are exactly as the last run left them, it stops before loading anything: the
 * loader and the layouts are imported only when there is work to do.
 */
import { readdir, readFile } from "node:fs/promises"
import { join, relative, sep } from "node:path"
import type { Diagnostic } from "../manifest/diagnostics.js"
import type { LoadedManifest } from "../manifest/loadManifests.js"
import {
  generatorSourcesFingerprint,
  outputMatchesState,
  readOutputState,
  sha256,
  writeOutputState,
} from "./generateState.js"
import {
  assertOnlyGeneratedFiles,
  compareOutput,
  isFresh,
  readFolder,
  replaceFolder,
  type OutputDifferences,
  type OutputFile,
} from "./outputFolder.js"

export interface GenerateOptions {
  /** The project root: file paths in headers and reports are relative to it. */
  readonly root: string
  /** Absolute path of the manifest folder. */
  readonly manifestsDir: string
  /** Absolute path of the output folder. */
  readonly outDir: string
  /** Compare the output folder with what would be generated, and write nothing. */
  readonly check?: boolean
  /** Told when a stage starts, for a progress line: `emitting 120 files for 20 owners`. */
  readonly onProgress?: (stage: GenerateProgress) => void
}

export interface GenerateProgress {
  readonly stage: "load" | "emit" | "write"
  readonly message: string
  /** How many workflows the stage works on (0 before the manifests are loaded). */
  readonly workflows: number
}

export type GenerateReport =
  /** A manifest has an error: nothing was generated or written. */
  | { readonly kind: "invalid"; readonly diagnostics: readonly Diagnostic[] }
  /** Inputs and output are as the last run left them: nothing was loaded or emitted. */
  | { readonly kind: "unchanged"; readonly diagnostics: readonly Diagnostic[] }
  /** Generated; `differences` is what the write changed (all empty: already fresh). */
  | {
      readonly kind: "generated"
      readonly diagnostics: readonly Diagnostic[]
      readonly files: readonly string[]
      readonly differences: OutputDifferences
    }
  /** `check`: `differences` is what a write would change, paths relative to the root. */
  | {
      readonly kind: "checked"
      readonly diagnostics: readonly Diagnostic[]
      readonly files: readonly string[]
      readonly differences: OutputDifferences
    }

const toPosix = (path: string): string => path.split(sep).join("/")

/** The project-relative form of a path, as headers and reports print it. */
export const projectPath = (root: string, path: string): string =>
  toPosix(relative(root, path)) || "."

/** Fingerprint of the manifest files' names and bytes, plus the generator's own code. */
const inputsFingerprint = async (options: GenerateOptions): Promise<string | undefined> => {
  let names: string[]
  try {
    names = (await readdir(options.manifestsDir)).filter((name) => /\.ya?ml$/.test(name)).sort()
  } catch {
    return undefined
  }
  const parts = [
    await generatorSourcesFingerprint(),
    projectPath(options.root, options.manifestsDir),
  ]
  for (const name of names) {
    parts.push(name, sha256(await readFile(join(options.manifestsDir, name))))
  }
  return sha256(parts.join("\0"))
}

const loadAll = async (
  options: Pick<GenerateOptions, "root" | "manifestsDir">,
): Promise<{ manifests: readonly LoadedManifest[]; diagnostics: readonly Diagnostic[] }> => {
  const { loadManifests } = await import("../manifest/loadManifests.js")
  return loadManifests({ dir: options.manifestsDir, root: options.root })
}

/**
 * Validates the manifests as `akter validate` reports them. The loader's checks include every name
 * the generated code declares, so a valid set always generates.
 */
export const validateManifests = async (
  options: Pick<GenerateOptions, "root" | "manifestsDir">,
): Promise<{ manifests: readonly LoadedManifest[]; diagnostics: readonly Diagnostic[] }> =>
  loadAll(options)

const emitAll = async (
  manifests: readonly LoadedManifest[],
  options: GenerateOptions,
): Promise<OutputFile[]> => {
  const [{ emitProject }, { manifestFormatJsonSchema }] = await Promise.all([
    import("./emitProject.js"),
    import("../manifest/formatSchema.js"),
  ])
  return emitProject(manifests, {
    manifestsFolder: projectPath(options.root, options.manifestsDir),
    manifestFormatSchema: manifestFormatJsonSchema(),
  })
}

/**
 * @example
 * const report = await generate({ root, manifestsDir: `${root}/manifests`, outDir: `${root}/generated` })
 * if (report.kind === "invalid") for (const d of report.diagnostics) console.error(formatDiagnostic(d))
 */
export const generate = async (options: GenerateOptions): Promise<GenerateReport> => {
  const out = projectPath(options.root, options.outDir)
  const inputs = options.check === true ? undefined : await inputsFingerprint(options)
  if (inputs !== undefined) {
    const state = await readOutputState(options.root, out)
    if (state?.inputs === inputs && outputMatchesState(state, await readFolder(options.outDir))) {
      return { kind: "unchanged", diagnostics: [] }
    }
  }

  options.onProgress?.({ stage: "load", message: "validating manifests", workflows: 0 })
  const { manifests, diagnostics } = await loadAll(options)
  if (diagnostics.some((d) => d.severity === "error")) return { kind: "invalid", diagnostics }

  const workflows = manifests.reduce(
    (total, loaded) => total + Object.keys(loaded.manifest.workflows).length,
    0,
  )
  options.onProgress?.({
    stage: "emit",
    message: `generating ${manifests.length} owners with ${workflows} workflows`,
    workflows,
  })
  const files = await emitAll(manifests, options)
  const current = await readFolder(options.outDir)
  const differences = compareOutput(files, current)
  const paths = files.map((file) => file.path)
  if (options.check === true) return { kind: "checked", diagnostics, files: paths, differences }

  if (!isFresh(differences)) {
    assertOnlyGeneratedFiles(out, current)
    options.onProgress?.({ stage: "write", message: `writing ${out}/`, workflows })
    await replaceFolder(options.outDir, files)
  }
  if (inputs !== undefined) {
    const hashes: Record<string, string> = {}
    for (const file of files) hashes[file.path] = sha256(file.text)
    await writeOutputState(options.root, out, { inputs, files: hashes })
  }
  return { kind: "generated", diagnostics, files: paths, differences }
}
