/**
 * The per-execution rule (DESIGN §7): before a runner replays an execution it judges the execution's
 * record against its own manifest. With problems it leaves the execution untouched for a compatible
 * runner; without, it replays, and adopts the execution onto its own manifest when the steps still
 * to settle changed their result types. Recorded data of an earlier shape the runner declares is
 * read through that shape's migration (`migrations.ts`); an execution whose recorded data is read
 * so is adopted onto a manifest that keeps the recorded shapes of that data (`adoptOnto`), so that
 * every later reader still knows which shape each recorded value has.
 */
import type { CanonicalStep, CanonicalWorkflow } from "../model/canonicalManifest.js"
import type { ReaderEarlierShapes } from "../model/earlierShapes.js"
import type { Hash } from "../model/hash.js"
import type { StepKind } from "../model/manifest.js"
import type { TypeNode } from "../model/typeModel.js"
import { compareFindings, type Finding } from "./finding.js"
import { shapeReading, stepReading } from "./migrations.js"
import {
  START_TO_RUNNER,
  compatibilityHashOf,
  inputProblem,
  markerProblem,
  newerStepResultChanged,
  startManifestMissing,
  stepDeclarationProblem,
  stepResultDiffers,
  stepResultIncompatible,
  stepResultRefusal,
  toFinding,
  workflowRemoved,
  type LocatedDraft,
  type WorkflowComparison,
} from "./rules.js"

/** One recorded step of an execution, its attempts collapsed. */
export interface RecordedStep {
  readonly name: string
  readonly kind: StepKind
  /**
   * Whether some attempt of the step has a recorded exit. An earlier attempt's recorded failure is
   * replayed like a final result, so it counts as settled even while a later attempt is pending.
   */
  readonly settled: boolean
}

/** What a runner knows about an execution before replaying it. */
export interface ExecutionRecord {
  readonly owner: string
  readonly workflow: string
  /** The stored start manifest; `null` when its row is missing. */
  readonly startManifest: CanonicalWorkflow | null
  readonly startManifestHash: Hash
  /** The start manifest was accepted after the runner's own (a newer deployment). */
  readonly startManifestNewer: boolean
  /** Recorded step rows (markers excluded), attempts collapsed. */
  readonly steps: readonly RecordedStep[]
  /** Recorded marker values by marker name. */
  readonly markers: Readonly<Record<string, number>>
}

export interface ExecutionVerdict {
  /** Why the runner must not replay the execution; empty when it may. */
  readonly problems: readonly Finding[]
  /**
   * Replay, then adopt: record the runner's manifest as the execution's start manifest. True when
   * there are no problems and a step the execution has not settled changed its result type, so the
   * results this runner records are described by its manifest, not the old one.
   */
  readonly adopt: boolean
  /**
   * The manifest to adopt the execution onto instead of the runner's own: the runner's, with the
   * recorded shapes of the data read through migrations kept. Set only when `adopt` is.
   */
  readonly adoptOnto?: CanonicalWorkflow
  /** Recorded data read through a migration, a runner applies these as it replays; absent: none. */
  readonly migrations?: RecordedMigrations
}

/** A recorded value read through a migration: the migration's name and the shape it reads. */
export interface AppliedMigration {
  readonly migration: string
  readonly shape: TypeNode
}

/** Which recorded data of one execution a runner reads through which migration. */
export interface RecordedMigrations {
  readonly input?: AppliedMigration
  /** By step: an activity's recorded result, a wait's recorded event. */
  readonly steps: Readonly<Record<string, AppliedMigration>>
  /** By step, then by declared error: the payload of a failure an activity or a race recorded. */
  readonly errors?: Readonly<Record<string, Readonly<Record<string, AppliedMigration>>>>
}

export const NO_MIGRATIONS: RecordedMigrations = { steps: {} }

/**
 * Judges one execution for a runner whose declaration of the workflow is `runner` (`undefined`: the
 * runner does not have the workflow). The runner replays only if it has the workflow; every step of
 * the start manifest is declared with the same kind; the input type accepts the start manifest's;
 * every recorded step is declared with the same kind; every settled step's result type accepts the
 * start manifest's; every recorded marker is declared and within `min..current`; no declared marker
 * with `min > 0` is missing; and, when the start manifest is newer, no shared step's result type
 * differs at all (runners of the newer manifest may record results this one cannot read).
 *
 * Equal hashes skip every comparison with the start manifest. Recorded steps and markers are still
 * checked then, because a runner of another manifest may have recorded steps into the execution
 * without adopting it. A recorded step the start manifest does not declare has no known recorded
 * type; only its declaration and kind are checked (the lock-file check covers its type).
 *
 * @example
 * const verdict = executionVerdict(registration.canonical, {
 *   owner: "Order", workflow: "fulfill", startManifest, startManifestHash, startManifestNewer: false,
 *   steps: [{ name: "reserve", kind: "activity", settled: true }], markers: { fraudCheck: 1 },
 * })
 * if (verdict.problems.length > 0) leaveForACompatibleRunner(verdict.problems)
 */
export const executionVerdict = (
  runner: CanonicalWorkflow | undefined,
  record: ExecutionRecord,
  earlier: ReaderEarlierShapes = {},
): ExecutionVerdict => {
  const { owner, workflow } = record
  if (runner === undefined) {
    return {
      problems: [toFinding(workflowRemoved(owner, workflow, START_TO_RUNNER, false), undefined)],
      adopt: false,
    }
  }
  const migratedSteps: Record<string, AppliedMigration> = {}
  const migratedErrors: Record<string, Record<string, AppliedMigration>> = {}
  let migratedInput: AppliedMigration | undefined
  const drafts: LocatedDraft[] = []
  const push = (draft: LocatedDraft | undefined) => {
    if (draft !== undefined) drafts.push(draft)
  }
  const start = record.startManifest
  const c: WorkflowComparison = {
    owner,
    workflow,
    writer: start ?? runner,
    reader: runner,
    perspective: START_TO_RUNNER,
  }
  const reported = new Set<string>()
  let unsettledChanged = false
  if (record.startManifestHash !== compatibilityHashOf(runner)) {
    if (start === null) {
      drafts.push(startManifestMissing(owner, workflow, record.startManifestHash))
    } else {
      const settled = new Set(record.steps.filter((s) => s.settled).map((s) => s.name))
      for (const [step, written] of Object.entries(start.steps)) {
        const declaration = stepDeclarationProblem(c, step, written.kind, "declared")
        if (declaration !== undefined) {
          drafts.push(declaration)
          reported.add(step)
          continue
        }
        const read = runner.steps[step]!
        if (!stepResultDiffers(read, written)) continue
        if (record.startManifestNewer) {
          drafts.push(newerStepResultChanged(c, step))
        } else if (settled.has(step)) {
          const reading = stepReading(read, written, step, earlier)
          if (reading.kind === "refused") {
            drafts.push(stepResultIncompatible(c, step, reading.refusal))
          } else {
            for (const { part, migration, shape } of reading.migrated) {
              if (part.kind === "value") migratedSteps[step] = { migration, shape }
              else (migratedErrors[step] ??= {})[part.error] = { migration, shape }
            }
          }
        } else {
          unsettledChanged = true
        }
      }
      const input = shapeReading(runner.input, start.input, earlier.input)
      if (input.kind === "migrated") {
        migratedInput = { migration: input.migration, shape: input.shape }
      } else {
        push(inputProblem(c))
      }
    }
  }
  for (const recorded of record.steps) {
    if (reported.has(recorded.name)) continue
    reported.add(recorded.name)
    push(stepDeclarationProblem(c, recorded.name, recorded.kind, "recorded"))
  }
  const markers = new Set([...Object.keys(runner.versions), ...Object.keys(record.markers)])
  for (const marker of [...markers].sort()) {
    const value = record.markers[marker]
    push(markerProblem(c, marker, value === undefined ? "absent" : { low: value, high: value }))
  }
  const problems = drafts
    .map((draft) => toFinding(draft, undefined))
    .filter((finding) => finding.severity === "error")
    .sort(compareFindings)
  const adopt = problems.length === 0 && unsettledChanged
  const migrations: RecordedMigrations = {
    ...(migratedInput === undefined ? {} : { input: migratedInput }),
    steps: migratedSteps,
    ...(Object.keys(migratedErrors).length === 0 ? {} : { errors: migratedErrors }),
  }
  const migrated =
    migratedInput !== undefined ||
    Object.keys(migratedSteps).length > 0 ||
    Object.keys(migratedErrors).length > 0
  return {
    problems,
    adopt,
    ...(migrated ? { migrations } : {}),
    ...(adopt && migrated && start !== null
      ? { adoptOnto: keepingRecordedShapes(runner, start, migrations) }
      : {}),
  }
}

/**
 * The runner's manifest, except that the input and the steps read through migrations (a result or
 * a declared error's payload) keep the types the start manifest recorded them under.
 */
const keepingRecordedShapes = (
  runner: CanonicalWorkflow,
  start: CanonicalWorkflow,
  migrations: RecordedMigrations,
): CanonicalWorkflow => {
  const steps: Record<string, CanonicalStep> = { ...runner.steps }
  for (const step of [...Object.keys(migrations.steps), ...Object.keys(migrations.errors ?? {})]) {
    steps[step] = start.steps[step]!
  }
  const sorted: Record<string, CanonicalStep> = {}
  for (const step of Object.keys(steps).sort()) sorted[step] = steps[step]!
  return {
    ...runner,
    input: migrations.input === undefined ? runner.input : start.input,
    steps: sorted,
  }
}
