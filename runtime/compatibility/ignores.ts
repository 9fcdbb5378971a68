/**
 * Accepted breaks. A team that knows a finding cannot hurt (no such executions exist, the old clients
 * are gone) records an ignore entry with a written reason; the finding is then kept in the report,
 * marked as ignored, and no longer fails the check.
 */
import { isRuleId, type Finding } from "./finding.js"

/** One accepted break: the rule and the thing it concerns (omitted fields match anything). */
export interface IgnoreEntry {
  readonly rule: string
  readonly owner: string
  readonly workflow?: string
  readonly step?: string
  readonly marker?: string
  readonly event?: string
  readonly schedule?: string
  /** Why the break is accepted; required and not blank. */
  readonly reason: string
}

/** A problem with an ignore entry; `index` is its position in the list given. */
export interface IgnoreProblem {
  readonly kind: "missing-reason" | "unknown-rule" | "stale"
  /** `error`: the entry is invalid input and was not applied; `warning`: it matched nothing. */
  readonly severity: "error" | "warning"
  readonly index: number
  readonly message: string
}

export interface IgnoreOutcome {
  /** Every finding given, in order; those an entry matched carry `ignored`. */
  readonly findings: readonly Finding[]
  readonly problems: readonly IgnoreProblem[]
}

const describeEntry = (entry: IgnoreEntry): string => {
  const subject = [entry.owner, ...(entry.workflow === undefined ? [] : [entry.workflow])].join(".")
  const details = [
    entry.step === undefined ? undefined : `step "${entry.step}"`,
    entry.marker === undefined ? undefined : `marker "${entry.marker}"`,
    entry.event === undefined ? undefined : `event "${entry.event}"`,
    entry.schedule === undefined ? undefined : `schedule "${entry.schedule}"`,
  ].filter((detail) => detail !== undefined)
  return [`${entry.rule} ${subject}`, ...details].join(" ")
}

const matches = (entry: IgnoreEntry, finding: Finding): boolean =>
  entry.rule === finding.rule &&
  entry.owner === finding.owner &&
  (entry.workflow === undefined || entry.workflow === finding.workflow) &&
  (entry.step === undefined || entry.step === finding.step) &&
  (entry.marker === undefined || entry.marker === finding.marker) &&
  (entry.event === undefined || entry.event === finding.event) &&
  (entry.schedule === undefined || entry.schedule === finding.schedule)

/**
 * Marks the findings that ignore entries accept. An entry without a reason, or naming no known rule,
 * is not applied and is reported as an error (invalid input: exit 2); an entry that matches no
 * finding is stale and reported as a warning, so it is removed before it hides a future break.
 *
 * @example
 * const { findings, problems } = applyIgnores(found, [
 *   { rule: "step-removed", owner: "Order", workflow: "fulfill", step: "screen",
 *     reason: "screen was never released to production" },
 * ])
 */
export const applyIgnores = (
  findings: readonly Finding[],
  ignores: readonly IgnoreEntry[],
): IgnoreOutcome => {
  const problems: IgnoreProblem[] = []
  const valid: { readonly entry: IgnoreEntry; readonly index: number }[] = []
  ignores.forEach((entry, index) => {
    const where = `ignore entry ${index + 1} (${describeEntry(entry)})`
    if (!isRuleId(entry.rule)) {
      problems.push({
        kind: "unknown-rule",
        severity: "error",
        index,
        message: `${where} names no known rule; use one of the rule ids akter check prints`,
      })
    } else if (typeof entry.reason !== "string" || entry.reason.trim() === "") {
      problems.push({
        kind: "missing-reason",
        severity: "error",
        index,
        message: `${where} has no reason; write why this break is accepted, e.g. "no executions of it were ever started"`,
      })
    } else {
      valid.push({ entry, index })
    }
  })
  const used = new Set<number>()
  const marked = findings.map((finding) => {
    const matching = valid.filter(({ entry }) => matches(entry, finding))
    const first = matching[0]
    if (first === undefined) return finding
    for (const { index } of matching) used.add(index)
    return { ...finding, ignored: { reason: first.entry.reason.trim() } }
  })
  for (const { entry, index } of valid) {
    if (used.has(index)) continue
    problems.push({
      kind: "stale",
      severity: "warning",
      index,
      message: `ignore entry ${index + 1} (${describeEntry(entry)}) matches no finding; remove it`,
    })
  }
  problems.sort((a, b) => a.index - b.index)
  return { findings: marked, problems }
}
