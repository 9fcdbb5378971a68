/**
 * What the compatibility rules report: one finding per problem, with a stable rule id, the axis and
 * severity of the rule, the thing it concerns, a message naming it, a fix, the manifest location when
 * the manifests were loaded from files, and the open executions it concerns when a database was read.
 */

/**
 * `decode`: new code reads data recorded under an older manifest. `replay`: new code replays step
 * sequences recorded under an older manifest. `rollback`: old code reads data a newer manifest
 * wrote; reported only when asked for. `schedule`: what a schedule starts during and after a deploy.
 */
export type Axis = "decode" | "replay" | "rollback" | "schedule"

export type FindingSeverity = "error" | "warning" | "info"

/** A position in a manifest file; `file` is relative to the project root, with `/` separators. */
export interface FindingLocation {
  readonly file: string
  readonly line: number
  readonly column: number
}

/** How many open executions a finding concerns, and when the oldest of them started. */
export interface OpenExecutions {
  readonly count: number
  readonly oldestStartedAtMs: number
}

export interface Finding {
  readonly rule: RuleId
  readonly axis: Axis
  readonly severity: FindingSeverity
  readonly owner: string
  readonly workflow?: string
  readonly step?: string
  readonly marker?: string
  readonly event?: string
  readonly schedule?: string
  /** The declared error whose recorded payloads a `recorded-data-migrated` finding is about. */
  readonly error?: string
  /** The migration of recorded data a `recorded-data-migrated` finding says reads the data. */
  readonly migration?: string
  readonly message: string
  readonly fix: string
  readonly location?: FindingLocation
  readonly open?: OpenExecutions
  /** Set by `applyIgnores` when an ignore entry accepts this break; the finding is kept. */
  readonly ignored?: { readonly reason: string }
}

interface RuleInfo {
  readonly axis: Axis
  readonly severity: FindingSeverity
  readonly fix: string
}

const OPEN_LIST = "`akter check --database-url` lists the open ones"
const ROLL_FORWARD = "they wait for this manifest to be deployed again; nothing is misread"

/**
 * Every rule, by its stable id, with its axis, its usual severity and the fix it suggests. A caller
 * may lower or raise a severity for its context (a change no open execution observes is only a
 * warning; a newer deployment's result change is an error for an older runner).
 */
export const RULES = {
  "workflow-removed": {
    axis: "replay",
    severity: "error",
    fix: `keep the workflow declared until its executions have finished (${OPEN_LIST}), or add an ignore entry with a reason`,
  },
  "start-manifest-missing": {
    axis: "replay",
    severity: "error",
    fix: "run these executions with a runner built from their start manifest, or restore its row in the manifests table",
  },
  "step-removed": {
    axis: "replay",
    severity: "error",
    fix: `keep the step declared until every execution started under a manifest containing it has finished (${OPEN_LIST}); to stop calling it, put the change behind a version marker`,
  },
  "step-kind-changed": {
    axis: "replay",
    severity: "error",
    fix: "keep the old step; add a step with a new name behind a version marker, and remove the old one once its executions have drained",
  },
  "step-result-incompatible": {
    axis: "decode",
    severity: "error",
    fix: "put the change behind a version marker and add a new step with the new result type; keep the old step until its executions have drained",
  },
  "step-result-changed": {
    axis: "decode",
    severity: "info",
    fix: "nothing to do: settled results still decode, and runners of the new manifest adopt executions that have not settled this step",
  },
  "start-parent-close-changed": {
    axis: "replay",
    severity: "warning",
    fix: "nothing to do for new children; children already running keep the policy they were started with: interrupt those that should end now, or let them finish",
  },
  "input-incompatible": {
    axis: "decode",
    severity: "error",
    fix: "add new input fields as optional (`name?:`) and keep old types readable, or add a new workflow and let this one's executions drain",
  },
  "output-incompatible": {
    axis: "decode",
    severity: "error",
    fix: "add result fields as optional and keep every declared error, or add a new workflow; otherwise wait for executions and the clients awaiting them to drain",
  },
  "marker-removed": {
    axis: "replay",
    severity: "error",
    fix: `keep the marker declared until every execution that recorded it has finished (${OPEN_LIST})`,
  },
  "marker-out-of-range": {
    axis: "replay",
    severity: "error",
    fix: "keep min..current covering every value executions recorded: never lower current, and raise min only once executions that recorded a lower value have drained",
  },
  "marker-min-raised": {
    axis: "replay",
    severity: "error",
    fix: "keep min at 0 until every execution that started before the marker existed has finished",
  },
  "event-removed": {
    axis: "decode",
    severity: "error",
    fix: "keep the event declared until no open execution waits for it and no deployed client emits it",
  },
  "event-payload-incompatible": {
    axis: "decode",
    severity: "error",
    fix: "add payload fields as optional and keep old types readable, or declare a new event for the new shape",
  },
  "concurrency-key-changed": {
    axis: "replay",
    severity: "error",
    fix: `keep the key path until the executions started under it have finished (${OPEN_LIST}), then change it: until then executions under the old path and the new one are limited separately, and together may exceed the limit; or add an ignore entry with a reason`,
  },
  "concurrency-limit-lowered": {
    axis: "replay",
    severity: "warning",
    fix: "nothing to do: executions already admitted finish; new ones are admitted only while fewer than the new limit of their group run",
  },
  "concurrency-added": {
    axis: "replay",
    severity: "warning",
    fix: "executions started before the key are not counted against the limit; let them finish first if the limit must hold from the first start under it",
  },
  "concurrency-removed": {
    axis: "replay",
    severity: "warning",
    fix: "executions still queued are all admitted at the next finish in their group; keep the key until none is queued if they must not run together",
  },
  "recorded-data-migrated": {
    axis: "decode",
    severity: "info",
    fix: "nothing to do now; once no lock entry and no open execution has this shape, `akter lock --prune` reports the migration retirable",
  },
  "rollback-workflow-added": {
    axis: "rollback",
    severity: "info",
    fix: `nothing to do: after a rollback its executions are left alone; ${ROLL_FORWARD}`,
  },
  "rollback-step-added": {
    axis: "rollback",
    severity: "info",
    fix: `nothing to do: after a rollback, executions started under this manifest are left alone; ${ROLL_FORWARD}`,
  },
  "rollback-step-kind-changed": {
    axis: "rollback",
    severity: "error",
    fix: "add a step with a new name instead of changing the kind, so the previous manifest can still run its executions",
  },
  "rollback-step-result-incompatible": {
    axis: "rollback",
    severity: "error",
    fix: "make the new result type readable by the previous one (add fields as optional), or do not roll back once executions have recorded new results",
  },
  "rollback-step-result-changed": {
    axis: "rollback",
    severity: "info",
    fix: "runners of the older manifest leave these executions to runners of the newer one; deploy the newer manifest everywhere",
  },
  "rollback-input-incompatible": {
    axis: "rollback",
    severity: "error",
    fix: "keep the new input readable by the previous manifest (add fields as optional), or do not roll back while executions started with the new input are open",
  },
  "rollback-marker-added": {
    axis: "rollback",
    severity: "info",
    fix: `nothing to do: after a rollback, executions that recorded the marker are left alone; ${ROLL_FORWARD}`,
  },
  "rollback-marker-out-of-range": {
    axis: "rollback",
    severity: "error",
    fix: "raise current in a release of its own, or do not roll back while executions that recorded the new value are open",
  },
  "rollback-marker-min-raised": {
    axis: "rollback",
    severity: "error",
    fix: "keep the marker declared, or do not roll back while executions started without it are open",
  },
  "rollback-event-payload-incompatible": {
    axis: "rollback",
    severity: "error",
    fix: "keep new payloads readable by the previous manifest (add fields as optional), or declare a new event",
  },
  "schedule-removed": {
    axis: "schedule",
    severity: "warning",
    fix: "keep the schedule's name (a renamed schedule is a new one: both may start the tick at which a deploy switches runners); to stop it, `akter schedule pause` it first, then remove it, or add an ignore entry with a reason",
  },
  "schedule-workflow-changed": {
    axis: "schedule",
    severity: "warning",
    fix: "add a new schedule for the other workflow and remove this one after `akter schedule pause`, or pause this one for the deploy, so no tick starts both workflows",
  },
  "schedule-timing-changed": {
    axis: "schedule",
    severity: "warning",
    fix: "nothing to do if ticks may restart from the deploy (missed ticks of the old timing are not caught up); pause the schedule for the deploy so runners of both versions do not tick it by turns",
  },
  "schedule-input-incompatible": {
    axis: "schedule",
    severity: "error",
    fix: "keep the workflow's input type accepting the released schedule's input (add fields as optional), or pause the schedule for the deploy: runners still on the released manifest start ticks with it, and runners of this one run them",
  },
} as const satisfies Record<string, RuleInfo>

export type RuleId = keyof typeof RULES

export const RULE_IDS = Object.keys(RULES) as readonly RuleId[]

export const isRuleId = (text: string): text is RuleId => Object.hasOwn(RULES, text)

/** What a rule function knows about a finding; the catalog supplies axis, fix and usual severity. */
export interface FindingDraft {
  readonly rule: RuleId
  readonly owner: string
  readonly workflow?: string
  readonly step?: string
  readonly marker?: string
  readonly event?: string
  readonly schedule?: string
  readonly error?: string
  readonly migration?: string
  readonly message: string
  readonly severity?: FindingSeverity
}

/**
 * Completes a draft from the rule catalog: its axis, its fix, and its usual severity unless the
 * draft sets one.
 *
 * @example
 * findingOf({ rule: "step-removed", owner: "Order", workflow: "fulfill", step: "screen", message })
 * // { rule: "step-removed", axis: "replay", severity: "error", fix: "keep the step declared …", … }
 */
export const findingOf = (
  draft: FindingDraft,
  extra: { readonly location?: FindingLocation; readonly open?: OpenExecutions } = {},
): Finding => {
  const info: RuleInfo = RULES[draft.rule]
  const { severity, ...subject } = draft
  return {
    ...subject,
    axis: info.axis,
    severity: severity ?? info.severity,
    fix: info.fix,
    ...(extra.location === undefined ? {} : { location: extra.location }),
    ...(extra.open === undefined ? {} : { open: extra.open }),
  }
}

/** The thing a finding concerns: findings with equal keys are one problem (merged, ignored together). */
export const findingKey = (finding: {
  readonly rule: string
  readonly owner: string
  readonly workflow?: string
  readonly step?: string
  readonly marker?: string
  readonly event?: string
  readonly schedule?: string
  readonly message?: string
}): string =>
  JSON.stringify([
    // Which migration reads which release's data is one finding per release and migration.
    finding.rule === "recorded-data-migrated" ? (finding.message ?? null) : null,
    finding.rule,
    finding.owner,
    finding.workflow ?? null,
    finding.step ?? null,
    finding.marker ?? null,
    finding.event ?? null,
    finding.schedule ?? null,
  ])

const SEVERITY_ORDER: Record<FindingSeverity, number> = { error: 0, warning: 1, info: 2 }

/** Orders findings by owner, workflow, severity, rule and subject, so every report is deterministic. */
export const compareFindings = (a: Finding, b: Finding): number => {
  const keys = (f: Finding) => [
    f.owner,
    f.workflow ?? "",
    String(SEVERITY_ORDER[f.severity]),
    f.rule,
    f.step ?? "",
    f.error ?? "",
    f.marker ?? "",
    f.event ?? "",
    f.schedule ?? "",
  ]
  const left = keys(a)
  const right = keys(b)
  for (let i = 0; i < left.length; i++) {
    if (left[i]! < right[i]!) return -1
    if (left[i]! > right[i]!) return 1
  }
  return 0
}

const mergeOpen = (a: OpenExecutions | undefined, b: OpenExecutions | undefined) =>
  a === undefined
    ? b
    : b === undefined
      ? a
      : {
          count: a.count + b.count,
          oldestStartedAtMs: Math.min(a.oldestStartedAtMs, b.oldestStartedAtMs),
        }

/**
 * Merges findings about the same thing (equal {@link findingKey}): open counts are summed, the
 * oldest start kept, the highest severity kept, and the first message and location kept. Sorted.
 *
 * @example
 * mergeFindings([...compareManifests(v1, next), ...compareManifests(v2, next)])
 */
export const mergeFindings = (findings: readonly Finding[]): Finding[] => {
  const byKey = new Map<string, Finding>()
  for (const finding of findings) {
    const key = findingKey(finding)
    const seen = byKey.get(key)
    if (seen === undefined) {
      byKey.set(key, finding)
      continue
    }
    const open = mergeOpen(seen.open, finding.open)
    byKey.set(key, {
      ...seen,
      severity:
        SEVERITY_ORDER[finding.severity] < SEVERITY_ORDER[seen.severity]
          ? finding.severity
          : seen.severity,
      ...(open === undefined ? {} : { open }),
    })
  }
  return [...byKey.values()].sort(compareFindings)
}
