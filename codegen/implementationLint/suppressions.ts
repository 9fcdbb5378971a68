/**
 * Suppression comments: `// akter-ignore-next-line RULE[, RULE…]: reason` accepts the findings of
 * those rules on the next line of code (several such comments may stack above one line). The
 * finding is kept, marked ignored with the reason, and no longer fails the check; a comment whose
 * rule no longer finds anything on its line is reported stale, so suppressions do not outlive the
 * code they excused.
 */
import { isLintRuleId, lintFindingOf, type LintFinding, type LintRuleId } from "./lintRules.js"

export const SUPPRESSION_DIRECTIVE = "akter-ignore-next-line"

interface Suppression {
  readonly file: string
  readonly line: number
  readonly column: number
  /** The line of code it applies to. */
  readonly target: number
  readonly rules: readonly LintRuleId[]
  readonly reason: string
}

const COMMENT = new RegExp(`^(\\s*)//\\s*${SUPPRESSION_DIRECTIVE}\\b(.*)$`)
const RULES_AND_REASON = /^\s+([\w-]+(?:\s*,\s*[\w-]+)*)\s*:\s*(\S.*?)\s*$/

/** The suppressions of one file (`file` relative to the project root) and the malformed ones. */
export const readSuppressions = (
  file: string,
  text: string,
): { readonly suppressions: readonly Suppression[]; readonly problems: readonly LintFinding[] } => {
  const lines = text.split(/\r?\n/)
  const suppressions: Suppression[] = []
  const problems: LintFinding[] = []
  for (let index = 0; index < lines.length; index++) {
    const comment = COMMENT.exec(lines[index]!)
    if (comment === null) continue
    const location = { file, line: index + 1, column: comment[1]!.length + 1 }
    const parsed = RULES_AND_REASON.exec(comment[2]!)
    const rules = parsed?.[1]!.split(",").map((rule) => rule.trim()) ?? []
    const unknown = rules.filter((rule) => !isLintRuleId(rule))
    if (parsed === null || unknown.length > 0) {
      problems.push(
        lintFindingOf({
          rule: "suppression-invalid",
          message:
            parsed === null
              ? `\`${SUPPRESSION_DIRECTIVE}\` needs the rule ids it accepts and a reason: \`// ${SUPPRESSION_DIRECTIVE} nondeterministic-call: why this is safe\``
              : `\`${SUPPRESSION_DIRECTIVE}\` names unknown rule ${unknown.map((rule) => `"${rule}"`).join(", ")}`,
          location,
        }),
      )
      continue
    }
    let target = index + 1
    while (target < lines.length && COMMENT.test(lines[target]!)) target++
    suppressions.push({
      ...location,
      target: target + 1,
      rules: rules as LintRuleId[],
      reason: parsed[2]!,
    })
  }
  return { suppressions, problems }
}

/**
 * Marks the findings a suppression accepts as ignored, and adds a `stale-suppression` finding for
 * every rule of a suppression that accepted nothing.
 *
 * @example
 * const findings = applySuppressions(lintFindings, readSuppressions("src/app.ts", text).suppressions)
 */
export const applySuppressions = (
  findings: readonly LintFinding[],
  suppressions: readonly Suppression[],
): LintFinding[] => {
  const byTarget = new Map<string, Suppression[]>()
  for (const suppression of suppressions) {
    const key = `${suppression.file}:${suppression.target}`
    byTarget.set(key, [...(byTarget.get(key) ?? []), suppression])
  }
  const used = new Set<string>()
  const result = findings.map((finding) => {
    const candidates = byTarget.get(`${finding.location.file}:${finding.location.line}`) ?? []
    const accepting = candidates.find((suppression) => suppression.rules.includes(finding.rule))
    if (accepting === undefined) return finding
    used.add(`${accepting.file}:${accepting.line}:${finding.rule}`)
    return { ...finding, ignored: { reason: accepting.reason } }
  })
  for (const suppression of suppressions) {
    for (const rule of suppression.rules) {
      if (used.has(`${suppression.file}:${suppression.line}:${rule}`)) continue
      result.push(
        lintFindingOf({
          rule: "stale-suppression",
          message: `\`${SUPPRESSION_DIRECTIVE} ${rule}\` accepts nothing: line ${suppression.target} has no ${rule} finding`,
          location: { file: suppression.file, line: suppression.line, column: suppression.column },
        }),
      )
    }
  }
  return result
}
