/**
 * How `akter check --app` prints the lint's findings next to the compatibility findings, in the
 * command's three formats: the same `file:line:column: severity[rule] message` lines with their fix
 * (text), one `findings` list with one summary (json), one annotation per finding (github). A
 * suppressed finding is printed as an ignored one is, and does not fail the check.
 */
import type { FindingSeverity } from "../../runtime/compatibility/finding.js"
import {
  EXIT_BREAKING,
  exitCodeOf,
  formatFindingText,
  formatGithub,
  githubAnnotation,
  type CheckReport,
} from "../../runtime/compatibility/report.js"
import type { LintFinding } from "./lintRules.js"

interface Counted {
  readonly severity: FindingSeverity
  readonly ignored?: { readonly reason: string }
}

const summarize = (findings: readonly Counted[]) => {
  const counted = findings.filter((finding) => finding.ignored === undefined)
  const count = (severity: FindingSeverity) =>
    counted.filter((finding) => finding.severity === severity).length
  return {
    errors: count("error"),
    warnings: count("warning"),
    infos: count("info"),
    ignored: findings.length - counted.length,
  }
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

/** A lint finding fails the check when it is an error no suppression accepted. */
export const isLintBreaking = (finding: LintFinding): boolean =>
  finding.severity === "error" && finding.ignored === undefined

/**
 * The exit code of a check with a lint: the compatibility check's, raised to 1 (breaking) by a
 * lint error; 2 (invalid input) stays 2.
 *
 * @example
 * return checkExitCode(report, lint.findings)
 */
export const checkExitCode = (report: CheckReport, lint: readonly LintFinding[]): 0 | 1 | 2 => {
  const compatibility = exitCodeOf({ status: "checked", ...report })
  return compatibility === 0 && lint.some(isLintBreaking) ? EXIT_BREAKING : compatibility
}

/**
 * One lint finding as text, as the compatibility findings are printed.
 *
 * @example
 * formatLintFindingText(finding)
 * // src/app.ts:12:25: error[nondeterministic-call] Date.now reads the clock, …
 * //   fix: move it into an activity, …
 */
export const formatLintFindingText = (finding: LintFinding): string => {
  const { file, line, column } = finding.location
  const lines = [
    `${file}:${line}:${column}: ${finding.severity}[${finding.rule}] ${finding.message}`,
    `  fix: ${finding.fix}`,
  ]
  if (finding.ignored !== undefined) lines.push(`  ignored: ${finding.ignored.reason}`)
  return lines.join("\n")
}

/** The text report: compatibility findings, lint findings, ignore problems, one summary line. */
export const formatCheckText = (report: CheckReport, lint: readonly LintFinding[]): string => {
  const blocks = [...report.findings.map(formatFindingText), ...lint.map(formatLintFindingText)]
  for (const problem of report.ignoreProblems ?? []) {
    blocks.push(`${problem.severity}[ignore-${problem.kind}] ${problem.message}`)
  }
  const summary = summarize([...report.findings, ...lint])
  blocks.push(
    [
      plural(summary.errors, "error"),
      plural(summary.warnings, "warning"),
      plural(summary.infos, "info"),
      `${summary.ignored} ignored`,
    ].join(", "),
  )
  return blocks.join("\n")
}

/** The JSON report: `{ findings, ignoreProblems, summary, exitCode }`, lint findings included. */
export const formatCheckJson = (report: CheckReport, lint: readonly LintFinding[]): string =>
  JSON.stringify(
    {
      findings: [...report.findings, ...lint],
      ignoreProblems: report.ignoreProblems ?? [],
      summary: summarize([...report.findings, ...lint]),
      exitCode: checkExitCode(report, lint),
    },
    null,
    2,
  )

/** GitHub annotations: the compatibility check's, then one per lint finding. */
export const formatCheckGithub = (report: CheckReport, lint: readonly LintFinding[]): string =>
  [
    formatGithub(report),
    ...lint.map((finding) =>
      githubAnnotation(
        finding.ignored !== undefined || finding.severity === "info" ? "notice" : finding.severity,
        [
          ["file", finding.location.file],
          ["line", finding.location.line],
          ["col", finding.location.column],
          ["title", finding.ignored === undefined ? finding.rule : `${finding.rule} (ignored)`],
        ],
        [
          finding.message,
          `fix: ${finding.fix}`,
          ...(finding.ignored === undefined ? [] : [`ignored: ${finding.ignored.reason}`]),
        ].join("\n"),
      ),
    ),
  ]
    .filter((text) => text !== "")
    .join("\n")
