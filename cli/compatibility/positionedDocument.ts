/**
 * The files `akter check` reads besides the manifests (the lock file, the ignore file) are read the
 * way manifests are: as one YAML 1.2 document (JSON is a subset), converted to plain data with every
 * node's position kept, so each problem in them is reported at `file:line:column`.
 */
import { readFile } from "node:fs/promises"
import type { Diagnostic } from "../../codegen/manifest/diagnostics.js"
import { toPlainValue, type PlainValue } from "../../codegen/manifest/plainValue.js"
import {
  yamlSourcePositions,
  type ManifestPath,
  type SourcePositions,
} from "../../codegen/manifest/sourcePositions.js"
import { parseManifestYaml } from "../../codegen/manifest/yamlDocument.js"

export interface PositionedDocument {
  /** The data; `undefined` when the text could not be read as one document. */
  readonly value: PlainValue | undefined
  readonly positions: SourcePositions
  /** Syntax errors, duplicate keys, extra documents, located. */
  readonly diagnostics: readonly Diagnostic[]
}

const pathText = (path: ManifestPath) =>
  path.map((segment) => (typeof segment === "number" ? `[${segment}]` : segment)).join(".")

const isPath = (node: ManifestPath | { readonly valueAt: ManifestPath }): node is ManifestPath =>
  Array.isArray(node)

/** Where the entry at `path` is written, or the nearest enclosing one that exists. */
const nearestEntry = (positions: SourcePositions, path: ManifestPath) => {
  for (let length = path.length; length > 0; length--) {
    const found = positions.locate(path.slice(0, length))
    if (found !== undefined) return found
  }
  return positions.start
}

/**
 * A located error in one of these files: at `path`'s entry (its key), or its value with
 * `{ valueAt: path }`, or else at the nearest enclosing entry that exists (a missing key is reported
 * at its mapping).
 *
 * @example
 * locatedError("akter.ignore.yaml", positions, { valueAt: ["ignore", 2, "rule"] }, "ignore-unknown-rule", "…")
 */
export const locatedError = (
  file: string,
  positions: SourcePositions,
  node: ManifestPath | { readonly valueAt: ManifestPath },
  rule: string,
  message: string,
  hint?: string,
): Diagnostic => {
  const path = isPath(node) ? node : node.valueAt
  const at =
    (isPath(node) ? undefined : positions.locateValue(path)) ?? nearestEntry(positions, path)
  return {
    file,
    line: at.line,
    column: at.column,
    rule,
    severity: "error",
    message,
    ...(hint === undefined ? {} : { hint }),
    path: pathText(path),
  }
}

/**
 * Parses `text` as one YAML (or JSON) document with positions. Never throws.
 *
 * @example
 * const { value, positions, diagnostics } = readPositioned("akter.ignore.yaml", text)
 */
export const readPositioned = (file: string, text: string): PositionedDocument => {
  const parsed = parseManifestYaml(text)
  const root = parsed.document?.contents ?? null
  const conversion = toPlainValue(root)
  const positions = yamlSourcePositions(root, parsed.lineCounter, conversion.aliasTargets)
  const diagnostics = [...parsed.problems, ...conversion.problems].map((problem): Diagnostic => {
    const { line, col } = parsed.lineCounter.linePos(problem.offset)
    return {
      file,
      line,
      column: col,
      rule: problem.rule,
      severity: "error",
      message: problem.message,
      ...(problem.hint === undefined ? {} : { hint: problem.hint }),
      path: "",
    }
  })
  const unreadable = diagnostics.some((d) => d.rule === "yaml-syntax" || d.rule === "alias-limit")
  return { value: unreadable ? undefined : conversion.value, positions, diagnostics }
}

/** A file's text, or `undefined` when there is no such file (any other failure is thrown). */
export const readTextIfPresent = async (path: string): Promise<string | undefined> => {
  try {
    return await readFile(path, "utf8")
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw error
  }
}
