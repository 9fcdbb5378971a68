/**
 * What `akter check --app` reports about the implementations: one finding per problem in the user's
 * sources, with a stable rule id, a severity, a message naming the workflow and the code, a fix, and
 * the file:line:column it is written at. The rule catalog below is the one place a fix is worded.
 */
import type { FindingLocation, FindingSeverity } from "../../runtime/compatibility/finding.js"

interface LintRuleInfo {
  readonly severity: FindingSeverity
  readonly fix: string
}

/** Every lint rule, by its stable id, with its severity and the fix it suggests. */
export const LINT_RULES = {
  "nondeterministic-call": {
    severity: "error",
    fix: "move it into an activity, whose result is recorded once and replayed, or pass the value in the workflow's input",
  },
  "promise-in-body": {
    severity: "error",
    fix: "run the promise in an activity and call that step: a body only waits on steps, whose results are recorded",
  },
  "module-state-write": {
    severity: "error",
    fix: "keep the state in local variables of the body, or record it with a step: module-level values are shared by every execution in the process and not replayed",
  },
  "step-never-called": {
    severity: "warning",
    fix: "call the step from the body, or remove it from the manifest once no open execution recorded it (`akter check --database-url` tells)",
  },
  "marker-never-read": {
    severity: "warning",
    fix: "read it with wf.version(...) where the body takes the new path, or remove it from the manifest once no open execution recorded it",
  },
  "marker-undeclared": {
    severity: "error",
    fix: "declare the marker under the workflow's `versions:` in the manifest and run `akter generate`, or read a declared one",
  },
  "body-not-analyzed": {
    severity: "warning",
    fix: "write the body as a function of the project (an arrow function, a function declaration, or a call to a local function that returns one) so that the lint can follow it",
  },
  "builder-manifest-missing": {
    severity: "error",
    fix: "run `akter generate` so that the generated SDK matches the manifests",
  },
  "stale-suppression": {
    severity: "warning",
    fix: "remove the comment: the line below it no longer has that finding",
  },
  "suppression-invalid": {
    severity: "error",
    fix: "write `// akter-ignore-next-line RULE: reason`, RULE one of the lint's rule ids, with a reason after the colon",
  },
} as const satisfies Record<string, LintRuleInfo>

export type LintRuleId = keyof typeof LINT_RULES

export const LINT_RULE_IDS = Object.keys(LINT_RULES) as readonly LintRuleId[]

export const isLintRuleId = (text: string): text is LintRuleId => Object.hasOwn(LINT_RULES, text)

/**
 * A problem in an implementation. `owner` and `workflow` name the workflow whose body reaches it
 * (absent for a problem of a suppression comment); `ignored` is set when a suppression comment
 * accepts it: the finding is kept, and no longer fails the check.
 */
export interface LintFinding {
  readonly rule: LintRuleId
  readonly severity: FindingSeverity
  readonly owner?: string
  readonly workflow?: string
  readonly step?: string
  readonly marker?: string
  readonly message: string
  readonly fix: string
  readonly location: FindingLocation
  readonly ignored?: { readonly reason: string }
}

/** What a rule knows about a finding; the catalog supplies its severity and fix. */
export type LintDraft = Omit<LintFinding, "severity" | "fix" | "ignored">

/**
 * @example
 * lintFindingOf({ rule: "nondeterministic-call", owner: "Order", workflow: "fulfill", message, location })
 */
export const lintFindingOf = (draft: LintDraft): LintFinding => {
  const info: LintRuleInfo = LINT_RULES[draft.rule]
  return { ...draft, severity: info.severity, fix: info.fix }
}

/** Orders findings by file, line, column and rule, so every report is deterministic. */
export const compareLintFindings = (a: LintFinding, b: LintFinding): number =>
  (a.location.file < b.location.file ? -1 : a.location.file > b.location.file ? 1 : 0) ||
  a.location.line - b.location.line ||
  a.location.column - b.location.column ||
  (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0)
