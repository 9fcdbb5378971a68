/**
 * How `akter check` prints its findings (text for people, JSON for tools, GitHub annotations for
 * pull requests) and the exit code it ends with.
 */
import type { Finding } from "./finding.js"
import type { IgnoreProblem } from "./ignores.js"

/** What a check found: its findings (ignored ones marked) and any problem with the ignore entries. */
export interface CheckReport {
  readonly findings: readonly Finding[]
  readonly ignoreProblems?: readonly IgnoreProblem[]
}

/** How a check ended: it ran, its input or usage was invalid, or akter itself failed. */
export type CheckOutcome =
  | ({ readonly status: "checked" } & CheckReport)
  | { readonly status: "invalid"; readonly message: string }
  | { readonly status: "crashed"; readonly error: unknown }

export const EXIT_COMPATIBLE = 0
export const EXIT_BREAKING = 1
export const EXIT_INVALID = 2

/** A finding that fails the check: an error nobody accepted with an ignore entry. */
export const isBreaking = (finding: Finding): boolean =>
  finding.severity === "error" && finding.ignored === undefined

/**
 * The exit code of a check: 0 compatible, 1 breaking (an error finding not ignored), 2 invalid input
 * or usage (an invalid ignore entry included). A crash exits 2 as well, never 1, so that CI never
 * takes a failure of akter for a proven break.
 *
 * @example
 * process.exitCode = exitCodeOf({ status: "checked", findings, ignoreProblems })
 */
export const exitCodeOf = (outcome: CheckOutcome): 0 | 1 | 2 => {
  if (outcome.status !== "checked") return EXIT_INVALID
  if ((outcome.ignoreProblems ?? []).some((problem) => problem.severity === "error")) {
    return EXIT_INVALID
  }
  return outcome.findings.some(isBreaking) ? EXIT_BREAKING : EXIT_COMPATIBLE
}

const subjectOf = (finding: Finding) =>
  finding.workflow === undefined ? finding.owner : `${finding.owner}.${finding.workflow}`

const describeOpen = (open: NonNullable<Finding["open"]>) =>
  `${open.count} open execution${open.count === 1 ? "" : "s"}, the oldest started ${new Date(open.oldestStartedAtMs).toISOString()}`

/**
 * One finding as text: `manifests/order.yaml:14:7: error[step-removed] message`, then indented
 * lines for the fix, the open executions concerned and the reason it is ignored. Without a location
 * the line starts with the owner type and workflow instead.
 *
 * @example
 * for (const problem of verdict.problems) log.warn(formatFindingText(problem))
 * // Order.fulfill: error[step-removed] step "screen" of Order.fulfill is not declared by this runner; …
 * //   fix: keep the step declared until …
 */
export const formatFindingText = (finding: Finding): string => {
  const where =
    finding.location === undefined
      ? subjectOf(finding)
      : `${finding.location.file}:${finding.location.line}:${finding.location.column}`
  const lines = [
    `${where}: ${finding.severity}[${finding.rule}] ${finding.message}`,
    `  fix: ${finding.fix}`,
  ]
  if (finding.open !== undefined) lines.push(`  open: ${describeOpen(finding.open)}`)
  if (finding.ignored !== undefined) lines.push(`  ignored: ${finding.ignored.reason}`)
  return lines.join("\n")
}

interface Summary {
  readonly errors: number
  readonly warnings: number
  readonly infos: number
  readonly ignored: number
}

const summarize = (findings: readonly Finding[]): Summary => {
  const counted = findings.filter((finding) => finding.ignored === undefined)
  return {
    errors: counted.filter((finding) => finding.severity === "error").length,
    warnings: counted.filter((finding) => finding.severity === "warning").length,
    infos: counted.filter((finding) => finding.severity === "info").length,
    ignored: findings.length - counted.length,
  }
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

/**
 * The text report: every finding, every ignore problem, and a closing summary line.
 *
 * @example
 * console.log(formatText({ findings, ignoreProblems }))
 * // manifests/order.yaml:27:7: error[step-removed] step "screen" of Order.fulfill is not declared by this manifest; …
 * //   fix: keep the step declared until …
 * // 1 error, 0 warnings, 0 infos, 0 ignored
 */
export const formatText = (report: CheckReport): string => {
  const blocks = report.findings.map(formatFindingText)
  for (const problem of report.ignoreProblems ?? []) {
    blocks.push(`${problem.severity}[ignore-${problem.kind}] ${problem.message}`)
  }
  const summary = summarize(report.findings)
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

/**
 * The JSON report, for tools: `{ findings, ignoreProblems, summary, exitCode }`, findings exactly
 * as the rules produced them.
 *
 * @example
 * JSON.parse(formatJson({ findings })).summary.errors // 1
 */
export const formatJson = (report: CheckReport): string =>
  JSON.stringify(
    {
      findings: report.findings,
      ignoreProblems: report.ignoreProblems ?? [],
      summary: summarize(report.findings),
      exitCode: exitCodeOf({ status: "checked", ...report }),
    },
    null,
    2,
  )

const escapeData = (text: string) =>
  text.replaceAll("%", "%25").replaceAll("\r", "%0D").replaceAll("\n", "%0A")

const escapeProperty = (text: string) =>
  escapeData(text).replaceAll(":", "%3A").replaceAll(",", "%2C")

/**
 * One GitHub Actions workflow command, its properties and message escaped.
 *
 * @example
 * githubAnnotation("error", [["file", "manifests/akter.lock.json"], ["line", 3], ["col", 5]], "not valid JSON")
 * // "::error file=manifests/akter.lock.json,line=3,col=5::not valid JSON"
 */
export const githubAnnotation = (
  level: "error" | "warning" | "notice",
  properties: readonly [string, string | number][],
  message: string,
) =>
  `::${level} ${properties.map(([name, value]) => `${name}=${escapeProperty(String(value))}`).join(",")}::${escapeData(message)}`

/**
 * GitHub Actions workflow commands, one per finding:
 * `::error file=manifests/order.yaml,line=14,col=7,title=step-removed::message` with the fix on a
 * second line of the message. Warnings stay warnings; infos and ignored findings become notices.
 *
 * @example
 * console.log(formatGithub({ findings }))
 */
export const formatGithub = (report: CheckReport): string => {
  const lines = report.findings.map((finding) => {
    const level =
      finding.ignored !== undefined || finding.severity === "info" ? "notice" : finding.severity
    const properties: [string, string | number][] =
      finding.location === undefined
        ? []
        : [
            ["file", finding.location.file],
            ["line", finding.location.line],
            ["col", finding.location.column],
          ]
    properties.push([
      "title",
      finding.ignored === undefined ? finding.rule : `${finding.rule} (ignored)`,
    ])
    const details = [`fix: ${finding.fix}`]
    if (finding.open !== undefined) details.push(`open: ${describeOpen(finding.open)}`)
    if (finding.ignored !== undefined) details.push(`ignored: ${finding.ignored.reason}`)
    const message =
      finding.location === undefined ? `${subjectOf(finding)}: ${finding.message}` : finding.message
    return githubAnnotation(level, properties, [message, ...details].join("\n"))
  })
  for (const problem of report.ignoreProblems ?? []) {
    lines.push(
      githubAnnotation(problem.severity, [["title", `ignore-${problem.kind}`]], problem.message),
    )
  }
  return lines.join("\n")
}
