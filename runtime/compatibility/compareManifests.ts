/**
 * Lock-file mode of `akter check`: what could break an execution started under a released manifest,
 * at any point of its life, if the new manifest's runners pick it up. Nothing is known about the
 * executions themselves, so every step of the released manifest may be settled or pending, and every
 * marker value the released manifest accepts may be recorded.
 */
import type {
  CanonicalOwner,
  CanonicalStep,
  CanonicalWorkflow,
} from "../model/canonicalManifest.js"
import { canonicalJson } from "../model/canonicalJson.js"
import {
  readerEarlierShapes,
  type EarlierShapes,
  type OwnerEarlierShapes,
  type ReaderEarlierShapes,
} from "../model/earlierShapes.js"
import type { Finding } from "./finding.js"
import { declaredShapesOf, shapeReading, stepReading, type ShapeReading } from "./migrations.js"
import { compareFindings } from "./finding.js"
import {
  NEW_TO_RELEASED,
  RELEASED_TO_NEW,
  concurrencyProblem,
  eventProblem,
  eventsWaitedFor,
  inputProblem,
  markerProblem,
  migratedDataOf,
  notCoveredByEarlierShapes,
  recordedDataMigrated,
  outputProblem,
  stepDeclarationProblem,
  parentCloseChanged,
  stepResultChanged,
  stepResultDiffers,
  stepResultIncompatible,
  toFinding,
  workflowRemoved,
  type LocatedDraft,
  type Locate,
  type MigratedData,
  type RecordedMarker,
  type WorkflowComparison,
} from "./rules.js"
import { scheduleDrafts } from "./scheduleRules.js"

export interface CompareOptions {
  /** Also report what old code would misread or refuse after a rollback (`rollback-*` rules). */
  readonly rollback?: boolean
  /** Locates a node of the new manifest, for findings' `location`. */
  readonly locate?: Locate
  /**
   * The earlier shapes the new manifest declares: data of the released manifest that one of them
   * covers is read through its migration, not refused (forward only: a released manifest's code
   * has no migrations of the new shapes).
   */
  readonly earlier?: OwnerEarlierShapes
  /** How messages about migrations name the released manifest, e.g. `release 2`. */
  readonly released?: string
}

const RELEASED = "the previous manifest"

/**
 * How the new manifest reads data recorded under the released one, when it declares earlier
 * shapes of it: a refusal says none of them covers it, a migration is reported (info) naming the
 * release it covers. Without earlier shapes of the data, `plain` decides alone.
 */
const migratedOr = (
  c: { readonly owner: string; readonly workflow?: string },
  data: MigratedData,
  reading: ShapeReading,
  declared: EarlierShapes | undefined,
  released: string,
  plain: () => LocatedDraft | undefined,
): LocatedDraft | undefined => {
  if (declared === undefined || Object.keys(declared).length === 0) return plain()
  if (reading.kind === "migrated") return recordedDataMigrated(c, data, reading.migration, released)
  const draft = plain()
  return draft === undefined || reading.kind === "as-recorded"
    ? draft
    : notCoveredByEarlierShapes(draft, c, data, Object.keys(declared), released)
}

/**
 * How the new manifest reads a step's results recorded under the released one: each part read
 * through a migration is reported (info) naming the release it covers; a refusal of a part the new
 * manifest declares earlier shapes of says that none of them covers it.
 */
const stepResultDrafts = (
  c: WorkflowComparison,
  step: string,
  read: CanonicalStep,
  written: CanonicalStep,
  earlier: ReaderEarlierShapes,
  released: string,
): LocatedDraft[] => {
  const reading = stepReading(read, written, step, earlier)
  if (reading.kind === "refused") {
    const draft = stepResultIncompatible(c, step, reading.refusal)
    const declared = declaredShapesOf(reading.part, step, read, written, earlier)
    return [
      declared === undefined || Object.keys(declared).length === 0
        ? draft
        : notCoveredByEarlierShapes(
            draft,
            c,
            migratedDataOf(step, written, read, reading.part),
            Object.keys(declared),
            released,
          ),
    ]
  }
  if (reading.migrated.length === 0) return [stepResultChanged(c, step, null)]
  return reading.migrated.map((migrated) =>
    recordedDataMigrated(
      c,
      migratedDataOf(step, written, read, migrated.part),
      migrated.migration,
      released,
    ),
  )
}

/**
 * The marker values executions started under the writer may carry. Released manifest (forward):
 * any value of its range, and none at all when its `min` is 0 (executions that predate the marker).
 * New manifest (rollback): exactly its `current`, which every execution it starts records.
 */
const writerMarkers = (
  writer: CanonicalWorkflow,
  reader: CanonicalWorkflow,
  rollback: boolean,
): [string, RecordedMarker][] => {
  const recorded: [string, RecordedMarker][] = []
  for (const [marker, range] of Object.entries(writer.versions)) {
    if (rollback) {
      recorded.push([marker, { low: range.current, high: range.current }])
      continue
    }
    recorded.push([marker, { low: Math.max(1, range.min), high: range.current }])
    if (range.min === 0) recorded.push([marker, "absent"])
  }
  for (const marker of Object.keys(reader.versions)) {
    if (writer.versions[marker] === undefined) recorded.push([marker, "absent"])
  }
  return recorded
}

const workflowDrafts = (
  c: WorkflowComparison,
  earlier: ReaderEarlierShapes = {},
  released = RELEASED,
): LocatedDraft[] => {
  if (canonicalJson(c.writer) === canonicalJson(c.reader)) return []
  const drafts: LocatedDraft[] = []
  const push = (draft: LocatedDraft | undefined) => {
    if (draft !== undefined) drafts.push(draft)
  }
  for (const [step, written] of Object.entries(c.writer.steps)) {
    const declaration = stepDeclarationProblem(c, step, written.kind, "declared")
    if (declaration !== undefined) {
      drafts.push(declaration)
      continue
    }
    const read = c.reader.steps[step]!
    push(parentCloseChanged(c, step, read, written))
    if (!stepResultDiffers(read, written)) continue
    drafts.push(...stepResultDrafts(c, step, read, written, earlier, released))
  }
  push(
    migratedOr(
      c,
      { kind: "input" },
      shapeReading(c.reader.input, c.writer.input, earlier.input),
      earlier.input,
      released,
      () => inputProblem(c),
    ),
  )
  if (!c.perspective.rollback) {
    push(outputProblem(c, earlier.errors))
    // Concurrency keys decide when executions run, whichever manifest's runners run them: one
    // direction says it all.
    push(
      concurrencyProblem(
        c.owner,
        c.workflow,
        c.writer.concurrency,
        c.reader.concurrency,
        c.perspective,
      ),
    )
  }
  for (const [marker, recorded] of writerMarkers(c.writer, c.reader, c.perspective.rollback)) {
    push(markerProblem(c, marker, recorded))
  }
  return drafts
}

/**
 * Every finding about executions started under `previous` (one released manifest of an owner type)
 * if `next` (the same owner type in `manifests/`; `undefined` when it was deleted) runs them. With
 * `rollback`, also what `previous`'s runners would refuse or misread in executions `next` started.
 * Findings are sorted; locations point into `next`, at the changed node or, for removals, at the
 * enclosing map.
 *
 * @example
 * const findings = compareManifests(locked.Order, canonicalOwner(loaded.manifest), {
 *   locate: (path) => {
 *     const at = loaded.positions.locate(path)
 *     return at && { file: loaded.file, ...at }
 *   },
 * })
 * // [{ rule: "step-removed", severity: "error", step: "screen", location: { file: "manifests/order.yaml", line: 27, column: 7 }, … }]
 */
export const compareManifests = (
  previous: CanonicalOwner,
  next: CanonicalOwner | undefined,
  options: CompareOptions = {},
): Finding[] => {
  if (next !== undefined && next.owner !== previous.owner) {
    throw new Error(
      `compareManifests: owner types differ (${previous.owner} and ${next.owner}); compare one owner type with itself`,
    )
  }
  const owner = previous.owner
  const rollback = options.rollback === true
  const drafts: LocatedDraft[] = []
  for (const [workflow, written] of Object.entries(previous.workflows)) {
    const read = next?.workflows[workflow]
    if (read === undefined) {
      drafts.push(workflowRemoved(owner, workflow, RELEASED_TO_NEW, next === undefined))
      continue
    }
    drafts.push(
      ...workflowDrafts(
        {
          owner,
          workflow,
          writer: written,
          reader: read,
          perspective: RELEASED_TO_NEW,
        },
        readerEarlierShapes(options.earlier, workflow),
        options.released,
      ),
    )
    if (rollback) {
      drafts.push(
        ...workflowDrafts({
          owner,
          workflow,
          writer: read,
          reader: written,
          perspective: NEW_TO_RELEASED,
        }),
      )
    }
  }
  if (next !== undefined) {
    const previousWaits = new Set(
      Object.values(previous.workflows).flatMap((w) => [...eventsWaitedFor(w)]),
    )
    const nextWaits = new Set(Object.values(next.workflows).flatMap((w) => [...eventsWaitedFor(w)]))
    for (const [event, payload] of Object.entries(previous.events)) {
      const reader = next.events[event]
      const declared = options.earlier?.events?.[event]
      const plain = () =>
        eventProblem({
          owner,
          event,
          writer: payload,
          reader,
          perspective: RELEASED_TO_NEW,
          waitedFor: previousWaits.has(event),
        })
      const problem =
        reader === undefined
          ? plain()
          : migratedOr(
              { owner },
              { kind: "event", event },
              shapeReading(reader, payload, declared),
              declared,
              options.released ?? RELEASED,
              plain,
            )
      if (problem !== undefined) drafts.push(problem)
      const newer = next.events[event]
      if (rollback && newer !== undefined) {
        const mirrored = eventProblem({
          owner,
          event,
          writer: newer,
          reader: payload,
          perspective: NEW_TO_RELEASED,
          waitedFor: nextWaits.has(event),
        })
        if (mirrored !== undefined) drafts.push(mirrored)
      }
    }
    drafts.push(...scheduleDrafts(previous, next))
    if (rollback) {
      for (const workflow of Object.keys(next.workflows)) {
        if (previous.workflows[workflow] === undefined) {
          drafts.push(workflowRemoved(owner, workflow, NEW_TO_RELEASED, false))
        }
      }
    }
  }
  return drafts.map((draft) => toFinding(draft, options.locate)).sort(compareFindings)
}
