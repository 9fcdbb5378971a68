/**
 * akter's trials as a user's `node` runs akter: bundled with the published package's esbuild
 * settings (scripts/bundleOptions.ts) into a folder of their own and forked with plain node, not
 * run from the TypeScript sources through tsx. tsx's transform keeps every function's name with a
 * call where the function is created, which a hot path pays on every closure it makes; the
 * package's bundle has no such call. The folder is laid out as an installed package's root — a
 * package.json, the migrations, the repository's node_modules for the imports left external — so
 * the runtime finds its files as it does in a user's project (runtime/packageFiles.ts).
 */
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import { build } from "esbuild"
import { bundleOptions } from "../scripts/bundleOptions.js"

export interface BundledTrials {
  /** The bundled file of a trial entry (its source path), to fork with plain node. */
  readonly fileOf: (entry: string) => string
  /** Removes the folder. */
  readonly remove: () => void
}

/** Bundles the trial entries (paths of TypeScript files under `root`) into a temporary folder. */
export const bundleTrials = async (
  root: string,
  entries: readonly string[],
): Promise<BundledTrials> => {
  const dir = mkdtempSync(join(tmpdir(), "akter-bench-"))
  try {
    copyFileSync(join(root, "package.json"), join(dir, "package.json"))
    symlinkSync(join(root, "migrations"), join(dir, "migrations"))
    symlinkSync(join(root, "node_modules"), join(dir, "node_modules"))
    await build({
      ...bundleOptions(root),
      entryPoints: [...entries],
      outdir: dir,
      chunkNames: "chunks/[name]-[hash]",
    })
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const remove = () => rmSync(dir, { recursive: true, force: true })
  // An interrupted run (bench/run.ts exits on SIGINT) leaves no folder behind either.
  process.once("exit", remove)
  return {
    fileOf: (entry) => join(dir, basename(entry).replace(/\.ts$/, ".js")),
    remove,
  }
}
