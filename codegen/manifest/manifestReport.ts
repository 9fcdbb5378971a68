/**
 * Collects the diagnostics of one manifest file, locating each by its path inside the manifest.
 */
import type { Diagnostic } from "./diagnostics.js"
import type { ManifestPath, Position, SourcePositions } from "./sourcePositions.js"

const PLAIN_SEGMENT = /^[A-Za-z0-9_?$-]+$/

/**
 * The dotted form of a path: `workflows.fulfill.steps.reserve.kind`; segments that are not plain
 * names are bracketed (`steps["check.v2"]`), list indexes too (`errors[0]`).
 */
export const renderPath = (path: ManifestPath): string => {
  let out = ""
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`
    else if (PLAIN_SEGMENT.test(segment)) out += out === "" ? segment : `.${segment}`
    else out += `[${JSON.stringify(segment)}]`
  }
  return out
}

export interface ReportOptions {
  readonly hint?: string | undefined
  /** Locate the entry's key (e.g. an unknown key) instead of its value (the default). */
  readonly at?: "key" | "value"
}

export class ManifestReport {
  readonly diagnostics: Diagnostic[] = []

  constructor(
    readonly file: string,
    readonly positions: SourcePositions,
  ) {}

  /** Where `path` is written, or its nearest ancestor that is. */
  position(path: ManifestPath, at: "key" | "value"): Position {
    for (let length = path.length; length >= 0; length--) {
      const prefix = path.slice(0, length)
      const found =
        at === "key" || length < path.length
          ? this.positions.locate(prefix)
          : this.positions.locateValue(prefix)
      if (found !== undefined) return found
    }
    return this.positions.start
  }

  error(path: ManifestPath, rule: string, message: string, options: ReportOptions = {}): void {
    const { line, column } = this.position(path, options.at ?? "value")
    this.diagnostics.push({
      file: this.file,
      line,
      column,
      rule,
      severity: "error",
      message,
      ...(options.hint === undefined ? {} : { hint: options.hint }),
      path: renderPath(path),
    })
  }

  errorAt(position: Position, rule: string, message: string, hint?: string): void {
    this.diagnostics.push({
      file: this.file,
      line: position.line,
      column: position.column,
      rule,
      severity: "error",
      message,
      ...(hint === undefined ? {} : { hint }),
      path: "",
    })
  }

  get hasErrors(): boolean {
    return this.diagnostics.some((d) => d.severity === "error")
  }
}
