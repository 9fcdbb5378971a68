/**
 * Reads every manifest of a folder, validates all of them, and returns the models with their source
 * positions, or every problem found. Nothing downstream (emitters, hashing, check) runs on a set of
 * manifests that has an error.
 */
import type { OwnerManifest } from "../../runtime/model/manifest.js"
import type { Diagnostic } from "./diagnostics.js"

/** Finds the source position of a node by its path inside the manifest. */
export interface SourcePositions {
  /** `["workflows", "fulfill", "steps", "reserve"]` → where that node starts; undefined if absent. */
  locate(
    path: readonly (string | number)[],
  ): { readonly line: number; readonly column: number } | undefined
}

export interface LoadedManifest {
  /** Path relative to the project root, with `/` separators, e.g. `manifests/order.yaml`. */
  readonly file: string
  readonly manifest: OwnerManifest
  readonly positions: SourcePositions
}

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

export const loadManifests = async (_options: LoadOptions): Promise<LoadResult> => {
  throw new Error("loadManifests: not implemented yet")
}
