/**
 * A problem found in a manifest, located to the character. Every stage of loading (YAML syntax,
 * format, meaning, cross-manifest checks) reports these, all at once, rather than stopping at the
 * first.
 */
export type Severity = "error" | "warning"

export interface Diagnostic {
  /** Path of the manifest file relative to the project root, with `/` separators. */
  readonly file: string
  /** 1-based line and column of the offending node. */
  readonly line: number
  readonly column: number
  /** Stable kebab-case id, e.g. `unknown-key`, `unresolved-type`. */
  readonly rule: string
  readonly severity: Severity
  readonly message: string
  /** What to do about it, e.g. `did you mean "output"?`. */
  readonly hint?: string
  /** Dotted path of the node inside the manifest, e.g. `workflows.fulfill.steps.reserve.kind`. */
  readonly path: string
}

/** `manifests/order.yaml:14:7: error[unknown-key] message` and, on the next line, the hint. */
export const formatDiagnostic = (d: Diagnostic): string =>
  `${d.file}:${d.line}:${d.column}: ${d.severity}[${d.rule}] ${d.message}` +
  (d.hint === undefined ? "" : `\n  hint: ${d.hint}`)
