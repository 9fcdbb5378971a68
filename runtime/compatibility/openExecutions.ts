/**
 * Database mode of `akter check`, and a runner's startup acceptance: the rules applied to the open
 * executions themselves, grouped by (owner type, workflow, start manifest), using what they recorded.
 * A finding here concerns executions that exist, and says how many and since when.
 */
import type { CanonicalOwner } from "../model/canonicalManifest.js"
import type { StepKind } from "../model/manifest.js"
import type { Finding, FindingLocation, OpenExecutions } from "./finding.js"
import { findingKey, mergeFindings } from "./finding.js"
import {
  START_TO_NEW,
  compatibilityHashOf,
  concurrencyProblem,
  eventProblem,
  inputProblem,
  markerProblem,
  outputProblem,
  migratedDataOf,
  recordedDataMigrated,
  startManifestMissing,
  stepDeclarationProblem,
  parentCloseChanged,
  stepResultChanged,
  stepResultDiffers,
  stepResultIncompatible,
  toFinding,
  workflowRemoved,
  type LocatedDraft,
  type ManifestPath,
  type MigratedData,
  type WorkflowComparison,
} from "./rules.js"
import type { CanonicalWorkflow } from "../model/canonicalManifest.js"
import { readerEarlierShapes, type OwnerEarlierShapes } from "../model/earlierShapes.js"
import { shapeReading, stepReading } from "./migrations.js"

/** Which group a row belongs to: open executions of one workflow started under one manifest. */
export interface OpenGroupKey {
  readonly owner: string
  readonly workflow: string
  readonly startManifestHash: string
}

/**
 * One group of open executions (status other than finished):
 *
 * ```sql
 * select e.owner_type as owner, e.workflow, e.manifest_hash as "startManifestHash",
 *        m.manifest as "startManifest", count(*) as count, min(e.started_at_ms) as "oldestStartedAtMs"
 * from executions e
 * left join manifests m on m.owner_type = e.owner_type and m.workflow = e.workflow and m.hash = e.manifest_hash
 * where e.status <> 'finished'
 * group by e.owner_type, e.workflow, e.manifest_hash, m.manifest
 * ```
 */
export interface OpenGroup extends OpenGroupKey {
  /** The stored start manifest; `null` when its row is missing. */
  readonly startManifest: CanonicalWorkflow | null
  readonly count: number
  readonly oldestStartedAtMs: number
}

/**
 * How many open executions of a group recorded a step (markers excluded) in one state, with attempts
 * collapsed per execution, so that each execution is counted once per step:
 *
 * ```sql
 * select e.owner_type as owner, e.workflow, e.manifest_hash as "startManifestHash", s.step, s.kind,
 *        s.settled, count(*) as count, min(e.started_at_ms) as "oldestStartedAtMs"
 * from executions e
 * join (select execution_id, step, kind, bool_or(exit is not null) as settled
 *       from steps where kind <> 'version' group by execution_id, step, kind) s using (execution_id)
 * where e.status <> 'finished'
 * group by 1, 2, 3, 4, 5, 6
 * ```
 *
 * `settled` is true when some attempt has a recorded exit (see `RecordedStep.settled`).
 */
export interface OpenStepAggregate extends OpenGroupKey {
  readonly step: string
  readonly kind: StepKind
  readonly settled: boolean
  readonly count: number
  readonly oldestStartedAtMs: number
}

/**
 * How many open executions of a group recorded one value of a marker (one row per execution and
 * marker):
 *
 * ```sql
 * select e.owner_type as owner, e.workflow, e.manifest_hash as "startManifestHash",
 *        s.step as marker, s.version as value, count(*) as count, min(e.started_at_ms) as "oldestStartedAtMs"
 * from executions e join steps s using (execution_id)
 * where e.status <> 'finished' and s.kind = 'version'
 * group by 1, 2, 3, 4, 5
 * ```
 *
 * Executions without a row for a marker are the group's count minus these counts; their oldest start
 * is reported as the group's (it cannot be later).
 */
export interface OpenMarkerAggregate extends OpenGroupKey {
  readonly marker: string
  readonly value: number
  readonly count: number
  readonly oldestStartedAtMs: number
}

/**
 * Open executions of one workflow by the concurrency key path they started under (`null`: none).
 * Read from the executions themselves: a concurrency key is outside the compatibility hash, so a
 * start manifest does not tell which one an execution started under.
 */
export interface OpenConcurrencyAggregate {
  readonly owner: string
  readonly workflow: string
  readonly key: string | null
  readonly count: number
  readonly oldestStartedAtMs: number
}

/** The open executions of a database, as aggregates that one query each fills. */
export interface OpenExecutionAggregates {
  readonly groups: readonly OpenGroup[]
  readonly steps: readonly OpenStepAggregate[]
  readonly markers: readonly OpenMarkerAggregate[]
  /** Absent: not read (then no concurrency rule is judged against open executions). */
  readonly concurrency?: readonly OpenConcurrencyAggregate[]
}

export interface OpenCheckOptions {
  /** Locates a node of an owner type's new manifest. */
  readonly locate?: (owner: string, path: ManifestPath) => FindingLocation | undefined
  /**
   * Findings of the lock-file comparison. Those no open execution observes are kept, downgraded
   * from error to warning: the change is real but breaks nothing running now.
   */
  readonly lockFindings?: readonly Finding[]
  /** The earlier shapes an owner type's new manifest declares (data they cover is migrated). */
  readonly earlier?: (owner: string) => OwnerEarlierShapes | undefined
}

const groupKeyOf = (row: OpenGroupKey) =>
  JSON.stringify([row.owner, row.workflow, row.startManifestHash])

const sum = (rows: readonly { count: number; oldestStartedAtMs: number }[]): OpenExecutions => ({
  count: rows.reduce((total, row) => total + row.count, 0),
  oldestStartedAtMs: Math.min(...rows.map((row) => row.oldestStartedAtMs)),
})

const bucket = <Row extends OpenGroupKey>(rows: readonly Row[]) => {
  const byGroup = new Map<string, Row[]>()
  for (const row of rows) {
    const key = groupKeyOf(row)
    byGroup.set(key, [...(byGroup.get(key) ?? []), row])
  }
  return byGroup
}

interface Observed {
  readonly draft: LocatedDraft
  readonly open: OpenExecutions
}

const groupFindings = (
  group: OpenGroup,
  steps: readonly OpenStepAggregate[],
  markers: readonly OpenMarkerAggregate[],
  next: readonly CanonicalOwner[],
  ownerEarlier: OwnerEarlierShapes | undefined,
): Observed[] => {
  const found: Observed[] = []
  const groupOpen: OpenExecutions = {
    count: group.count,
    oldestStartedAtMs: group.oldestStartedAtMs,
  }
  const observe = (draft: LocatedDraft | undefined, open: OpenExecutions = groupOpen) => {
    if (draft === undefined || open.count <= 0) return
    found.push({
      draft,
      open: { count: open.count, oldestStartedAtMs: open.oldestStartedAtMs },
    })
  }
  const owner = next.find((candidate) => candidate.owner === group.owner)
  const runner = owner?.workflows[group.workflow]
  if (owner === undefined || runner === undefined) {
    observe(workflowRemoved(group.owner, group.workflow, START_TO_NEW, owner === undefined))
    return found
  }
  const start = group.startManifest
  const c: WorkflowComparison = {
    owner: group.owner,
    workflow: group.workflow,
    writer: start ?? runner,
    reader: runner,
    perspective: START_TO_NEW,
  }
  const reported = new Set<string>()
  const earlier = readerEarlierShapes(ownerEarlier, group.workflow)
  const startedUnder = `their start manifest ${group.startManifestHash}`
  if (group.startManifestHash !== compatibilityHashOf(runner)) {
    if (start === null) {
      observe(startManifestMissing(group.owner, group.workflow, group.startManifestHash))
    } else {
      for (const [step, written] of Object.entries(start.steps)) {
        const declaration = stepDeclarationProblem(c, step, written.kind, "declared")
        if (declaration !== undefined) {
          observe(declaration)
          reported.add(step)
          continue
        }
        const read = runner.steps[step]!
        observe(parentCloseChanged(c, step, read, written))
        if (!stepResultDiffers(read, written)) continue
        const settledRows = steps.filter((row) => row.step === step && row.settled)
        const settled = settledRows.length === 0 ? undefined : sum(settledRows)
        const reading = stepReading(read, written, step, earlier)
        if (reading.kind === "read" && reading.migrated.length > 0) {
          if (settled !== undefined) {
            for (const { part, migration } of reading.migrated) {
              const data = migratedDataOf(step, written, read, part)
              observe(recordedDataMigrated(c, data, migration, startedUnder), settled)
            }
          }
          continue
        }
        const refusal = reading.kind === "refused" ? reading.refusal : null
        if (refusal === null) {
          observe(stepResultChanged(c, step, null))
          continue
        }
        if (settled !== undefined) observe(stepResultIncompatible(c, step, refusal), settled)
        observe(stepResultChanged(c, step, refusal), {
          count: group.count - (settled?.count ?? 0),
          oldestStartedAtMs: group.oldestStartedAtMs,
        })
      }
      const input = shapeReading(runner.input, start.input, earlier.input)
      if (input.kind === "migrated") {
        observe(recordedDataMigrated(c, { kind: "input" }, input.migration, startedUnder))
      } else observe(inputProblem(c))
      observe(outputProblem(c, earlier.errors))
      for (const written of Object.values(start.steps)) {
        if (written.kind !== "wait" || written.event === undefined) continue
        const reader = owner.events[written.event]
        const payload = written.payload ?? { kind: "json" }
        const reading =
          reader === undefined
            ? undefined
            : shapeReading(reader, payload, earlier.events?.[written.event])
        if (reading?.kind === "migrated") {
          const data: MigratedData = { kind: "event", event: written.event }
          observe(
            recordedDataMigrated({ owner: group.owner }, data, reading.migration, startedUnder),
          )
          continue
        }
        observe(
          eventProblem({
            owner: group.owner,
            event: written.event,
            writer: written.payload ?? { kind: "json" },
            reader: owner.events[written.event],
            perspective: START_TO_NEW,
            waitedFor: true,
          }),
        )
      }
    }
  }
  for (const row of steps) {
    if (reported.has(row.step)) continue
    observe(stepDeclarationProblem(c, row.step, row.kind, "recorded"), row)
  }
  for (const row of markers) {
    observe(markerProblem(c, row.marker, { low: row.value, high: row.value }), row)
  }
  for (const [marker, range] of Object.entries(runner.versions)) {
    if (range.min === 0) continue
    const recorded = markers
      .filter((row) => row.marker === marker)
      .reduce((total, row) => total + row.count, 0)
    observe(markerProblem(c, marker, "absent"), {
      count: group.count - recorded,
      oldestStartedAtMs: group.oldestStartedAtMs,
    })
  }
  return found
}

const unobserved = (finding: Finding): Finding =>
  finding.severity === "error"
    ? {
        ...finding,
        severity: "warning",
        message: `${finding.message}; no open execution observes this`,
      }
    : finding

/**
 * Judges the open executions of a database against the new manifests `next` (every owner type the
 * code declares). Each finding carries how many open executions it concerns and when the oldest
 * started; findings about one thing from several groups are merged. A wait's event is judged for
 * every group whose start manifest waits for it, at the owner level. With `lockFindings`, lock-file
 * findings no open execution observes are added as warnings (a finding is observed when the open
 * check reports the same rule about the same thing): e.g. a step removed that no open execution's
 * start manifest contains, or a result type change no open execution has settled.
 *
 * Results of finished executions are not open, so an `output-incompatible` that only they could
 * observe is downgraded too, although clients may still read them until they are pruned.
 *
 * @example
 * const findings = checkOpenExecutions(await readOpenExecutions(db), owners, {
 *   lockFindings: mergeFindings(locked.flatMap((owner) => compareManifests(owner, byOwner(owner.owner)))),
 * })
 * // [{ rule: "step-removed", open: { count: 3, oldestStartedAtMs: 1717000000000 }, … }]
 */
export const checkOpenExecutions = (
  open: OpenExecutionAggregates,
  next: readonly CanonicalOwner[],
  options: OpenCheckOptions = {},
): Finding[] => {
  const stepsByGroup = bucket(open.steps)
  const markersByGroup = bucket(open.markers)
  const findings: Finding[] = []
  for (const group of open.groups) {
    const key = groupKeyOf(group)
    const locate = options.locate
    for (const { draft, open: concerned } of groupFindings(
      group,
      stepsByGroup.get(key) ?? [],
      markersByGroup.get(key) ?? [],
      next,
      options.earlier?.(group.owner),
    )) {
      findings.push(
        toFinding(
          draft,
          locate === undefined ? undefined : (path) => locate(group.owner, path),
          concerned,
        ),
      )
    }
  }
  for (const row of open.concurrency ?? []) {
    const runner = next.find((owner) => owner.owner === row.owner)?.workflows[row.workflow]
    // A workflow gone is reported as workflow-removed; a limit is not on the rows, so a lowered
    // one is judged against the lock file only.
    if (runner === undefined) continue
    const draft = concurrencyProblem(
      row.owner,
      row.workflow,
      row.key === null ? undefined : { key: row.key },
      runner.concurrency,
      START_TO_NEW,
    )
    if (draft === undefined || row.count <= 0) continue
    const locate = options.locate
    findings.push(
      toFinding(draft, locate === undefined ? undefined : (path) => locate(row.owner, path), {
        count: row.count,
        oldestStartedAtMs: row.oldestStartedAtMs,
      }),
    )
  }
  const observed = new Set(findings.map(findingKey))
  const lock = (options.lockFindings ?? [])
    .filter((finding) => !observed.has(findingKey(finding)))
    .map(unobserved)
  return mergeFindings([...findings, ...lock])
}
