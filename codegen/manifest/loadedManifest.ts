/**
 * A manifest file that loaded without error: where it is, its model and where each of its nodes is
 * written. What code generation plans from, so that planning needs nothing of the loading itself.
 */
import type { OwnerManifest } from "../../runtime/model/manifest.js"
import type { SourcePositions } from "./sourcePositions.js"

export interface LoadedManifest {
  /** Path relative to the project root, with `/` separators, e.g. `manifests/order.yaml`. */
  readonly file: string
  readonly manifest: OwnerManifest
  readonly positions: SourcePositions
}
