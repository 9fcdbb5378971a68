/**
 * The compatibility rules, once. Each function judges one thing (a step, a marker, an input, an
 * event) of a workflow as one manifest wrote it and another reads it, and returns a finding draft or
 * nothing. The lock-file comparison, a runner's per-execution verdict and the open-execution check
 * differ only in which facts they feed in (every step possibly settled; the steps one execution
 * recorded; aggregates of open executions), never in the rules.
 *
 * Roles: the *writer* is the manifest the recorded data was written under (a released manifest, an
 * execution's start manifest); the *reader* is the manifest whose code reads it (the new manifest, the
 * runner's own). A rollback check swaps them (the newer manifest writes, the older reads) and reports
 * under the `rollback-*` ids.
 */
import {
  workflowHashes,
  type CanonicalStep,
  type CanonicalWorkflow,
} from "../model/canonicalManifest.js"
import type { Hash } from "../model/hash.js"
import { canonicalJson } from "../model/canonicalJson.js"
import type { MarkerRange, StepKind } from "../model/manifest.js"
import { parentCloseOf } from "../model/stepKinds/start.js"
import type { CanonicalStepOf } from "../model/stepKinds/stepKindModel.js"
import { stepKindModelOf } from "../model/stepKinds/stepKinds.js"
import type { TypeNode } from "../model/typeModel.js"
import type { EarlierShapes } from "../model/earlierShapes.js"
import { shapeReading } from "./migrations.js"
import {
  accepts,
  acceptsDeclared,
  acceptsErrors,
  refusalUnder,
  type TypePathSegment,
  type TypeRefusal,
} from "./accepts.js"
import {
  findingOf,
  type Finding,
  type FindingDraft,
  type FindingLocation,
  type FindingSeverity,
  type OpenExecutions,
  type RuleId,
} from "./finding.js"

/** A path of nodes inside a manifest, as `SourcePositions.locate` takes it. */
export type ManifestPath = readonly (string | number)[]

/** A finding draft and where it belongs in the newer manifest, most precise node first. */
export interface LocatedDraft extends FindingDraft {
  readonly at: readonly ManifestPath[]
}

/**
 * Finds a node of the newer manifest by its path, e.g. `["workflows", "fulfill", "steps"]`, as
 * `SourcePositions.locate` does, with the manifest's file.
 */
export type Locate = (path: ManifestPath) => FindingLocation | undefined

/** Completes a draft: the first of its paths that `locate` finds becomes its location. */
export const toFinding = (
  draft: LocatedDraft,
  locate: Locate | undefined,
  open?: OpenExecutions,
): Finding => {
  const { at, ...subject } = draft
  let location: FindingLocation | undefined
  if (locate !== undefined) {
    for (const path of at) {
      location = locate(path)
      if (location !== undefined) break
    }
  }
  return findingOf(subject, {
    ...(location === undefined ? {} : { location }),
    ...(open === undefined ? {} : { open }),
  })
}

/** How the writer and the reader are named in messages, and whether this is a rollback check. */
export interface Perspective {
  readonly writer: string
  readonly reader: string
  readonly rollback: boolean
}

/** Lock-file check: executions started under a released manifest, run by the new one. */
export const RELEASED_TO_NEW: Perspective = {
  writer: "the previous manifest",
  reader: "this manifest",
  rollback: false,
}

/** Rollback check: executions started under the new manifest, run by a released one. */
export const NEW_TO_RELEASED: Perspective = {
  writer: "this manifest",
  reader: "the previous manifest",
  rollback: true,
}

/** A runner judging an execution before it replays it. */
export const START_TO_RUNNER: Perspective = {
  writer: "the start manifest",
  reader: "this runner",
  rollback: false,
}

/** The open-execution check: open executions, run by the new manifest. */
export const START_TO_NEW: Perspective = {
  writer: "their start manifest",
  reader: "this manifest",
  rollback: false,
}

/** One workflow as written under one manifest and read under another. */
export interface WorkflowComparison {
  readonly owner: string
  readonly workflow: string
  readonly writer: CanonicalWorkflow
  readonly reader: CanonicalWorkflow
  readonly perspective: Perspective
}

type ForwardRule =
  | "workflow-removed"
  | "step-removed"
  | "step-kind-changed"
  | "step-result-incompatible"
  | "step-result-changed"
  | "input-incompatible"
  | "marker-removed"
  | "marker-out-of-range"
  | "marker-min-raised"
  | "event-payload-incompatible"

/** The id a forward rule reports under when the older manifest reads the newer's data. */
const ROLLBACK_RULE: Record<ForwardRule, RuleId> = {
  "workflow-removed": "rollback-workflow-added",
  "step-removed": "rollback-step-added",
  "step-kind-changed": "rollback-step-kind-changed",
  "step-result-incompatible": "rollback-step-result-incompatible",
  "step-result-changed": "rollback-step-result-changed",
  "input-incompatible": "rollback-input-incompatible",
  "marker-removed": "rollback-marker-added",
  "marker-out-of-range": "rollback-marker-out-of-range",
  "marker-min-raised": "rollback-marker-min-raised",
  "event-payload-incompatible": "rollback-event-payload-incompatible",
}

const ruleFor = (rule: ForwardRule, perspective: Perspective): RuleId =>
  perspective.rollback ? ROLLBACK_RULE[rule] : rule

const afterRollback = (perspective: Perspective) =>
  perspective.rollback ? " after a rollback" : ""

const explain = (refusal: TypeRefusal) =>
  refusal.path === "" ? refusal.reason : `${refusal.path}: ${refusal.reason}`

/** `base + fields`, then every shorter prefix down to `base`; a field may be written `name?:`. */
const pathsInto = (base: ManifestPath, segments: readonly TypePathSegment[]): ManifestPath[] => {
  const fields: string[] = []
  for (const segment of segments) {
    if (segment.kind !== "field") break
    fields.push(segment.name)
  }
  const paths: ManifestPath[] = []
  for (let length = fields.length; length > 0; length--) {
    const prefix = fields.slice(0, length)
    paths.push([...base, ...prefix])
    paths.push([...base, ...prefix.slice(0, -1), `${prefix[length - 1]}?`])
  }
  paths.push(base)
  return paths
}

const workflowPath = (workflow: string): ManifestPath => ["workflows", workflow]
const stepPath = (workflow: string, step: string): ManifestPath => [
  "workflows",
  workflow,
  "steps",
  step,
]

const stepFallbacks = (workflow: string, step: string): ManifestPath[] => [
  stepPath(workflow, step),
  ["workflows", workflow, "steps"],
  workflowPath(workflow),
]

const qualified = (c: { readonly owner: string; readonly workflow: string }) =>
  `${c.owner}.${c.workflow}`

// ── workflows ───────────────────────────────────────────────────────────────────────────────────

/**
 * The reader does not declare a workflow executions of the writer may be running. `ownerGone`: the
 * reader does not declare the owner type at all.
 */
export const workflowRemoved = (
  owner: string,
  workflow: string,
  perspective: Perspective,
  ownerGone: boolean,
): LocatedDraft => ({
  rule: ruleFor("workflow-removed", perspective),
  owner,
  workflow,
  message:
    `workflow ${owner}.${workflow} is not declared by ${perspective.reader}` +
    (ownerGone ? `, which declares no owner type ${owner}` : "") +
    `; executions started under ${perspective.writer} cannot run${afterRollback(perspective)}`,
  at: [workflowPath(workflow), ["workflows"], []],
})

/** The start manifest of some executions is not stored, so nothing about them can be checked. */
export const startManifestMissing = (
  owner: string,
  workflow: string,
  startManifestHash: string,
): LocatedDraft => ({
  rule: "start-manifest-missing",
  owner,
  workflow,
  message: `the start manifest ${startManifestHash} of executions of ${owner}.${workflow} is not stored, so they cannot be checked`,
  at: [workflowPath(workflow)],
})

// ── steps ───────────────────────────────────────────────────────────────────────────────────────

/**
 * A step the writer declared (`source: "declared"`), or an execution recorded (`"recorded"`), must be
 * declared by the reader with the same kind: replay matches recorded step rows by name and kind.
 */
export const stepDeclarationProblem = (
  c: WorkflowComparison,
  step: string,
  kind: StepKind,
  source: "declared" | "recorded",
): LocatedDraft | undefined => {
  const declared = c.reader.steps[step]
  const p = c.perspective
  if (declared === undefined) {
    const reached = source === "recorded" ? "recorded it" : "may have reached it"
    return {
      rule: ruleFor("step-removed", p),
      owner: c.owner,
      workflow: c.workflow,
      step,
      message: `step "${step}" of ${qualified(c)} is not declared by ${p.reader}; executions started under ${p.writer} ${reached}${afterRollback(p)}`,
      at: stepFallbacks(c.workflow, step),
    }
  }
  if (declared.kind !== kind) {
    return {
      rule: ruleFor("step-kind-changed", p),
      owner: c.owner,
      workflow: c.workflow,
      step,
      message: `step "${step}" of ${qualified(c)} is ${withArticle(declared.kind)} step in ${p.reader} but ${withArticle(kind)} step in ${p.writer}; recorded rows of it cannot be replayed`,
      at: [[...stepPath(c.workflow, step), "kind"], ...stepFallbacks(c.workflow, step)],
    }
  }
  return undefined
}

const withArticle = (kind: StepKind) => (/^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`)

/**
 * Whether results a step recorded under `writer` decode under `reader` (same kind), as the step's
 * kind judges it (model/stepKinds/). Paths start with `output`, `errors`, `event`, `payload`,
 * `workflow` or `await`.
 */
export const stepResultRefusal = (
  reader: CanonicalStep,
  writer: CanonicalStep,
): TypeRefusal | null => stepKindModelOf(writer.kind).resultRefusal(reader, writer)

/**
 * Whether a step's result types differ at all between two manifests (same kind). A start's
 * parent-close policy is no result type: `parentCloseChanged` reports it.
 */
export const stepResultDiffers = (reader: CanonicalStep, writer: CanonicalStep): boolean =>
  canonicalJson(withoutPolicy(reader)) !== canonicalJson(withoutPolicy(writer))

const withoutPolicy = (step: CanonicalStep): CanonicalStep => {
  if (step.parentClose === undefined) return step
  const { parentClose: _, ...rest } = step
  return rest
}

/**
 * A start step's parent-close policy changed: a child records the policy it was started with, so
 * children already running keep the old one, and only children started from now on get the new.
 * Reported forward only (a rollback changes it back the same way).
 */
export const parentCloseChanged = (
  c: WorkflowComparison,
  step: string,
  reader: CanonicalStep,
  writer: CanonicalStep,
): LocatedDraft | undefined => {
  if (reader.kind !== "start" || writer.kind !== "start" || c.perspective.rollback) return undefined
  const before = parentCloseOf(writer as CanonicalStepOf<"start">)
  const after = parentCloseOf(reader as CanonicalStepOf<"start">)
  if (before === after) return undefined
  return {
    rule: "start-parent-close-changed",
    owner: c.owner,
    workflow: c.workflow,
    step,
    message: `the parent-close policy of start step "${step}" of ${qualified(c)} is ${after} in ${c.perspective.reader} but ${before} in ${c.perspective.writer}; children started under ${c.perspective.writer} keep ${before}, only children started from now on are ${after === "interrupt" ? "interrupted with their parent" : "left running"}`,
    at: [
      [...stepPath(c.workflow, step), "parentClose"],
      [...stepPath(c.workflow, step), "await"],
      ...stepFallbacks(c.workflow, step),
    ],
  }
}

const stepResultPaths = (
  c: WorkflowComparison,
  step: string,
  refusal: TypeRefusal,
): ManifestPath[] => {
  const [head, ...rest] = refusal.segments
  const within = stepPath(c.workflow, step)
  const name = head?.kind === "field" ? head.name : undefined
  const fallbacks = stepFallbacks(c.workflow, step)
  if (name === "errors") {
    const error = rest[0]
    const declared =
      error?.kind === "field"
        ? pathsInto(["workflows", c.workflow, "errors", error.name], rest.slice(1))
        : []
    return [...declared, [...within, "errors"], ...fallbacks]
  }
  if (name === "payload") {
    const event = c.reader.steps[step]?.event
    return [
      ...(event === undefined ? [] : pathsInto(["events", event], rest)),
      [...within, "event"],
      ...fallbacks,
    ]
  }
  if (name === "output") return [...pathsInto([...within, "output"], rest), ...fallbacks]
  if (name === "event" || name === "workflow" || name === "await") {
    return [[...within, name], ...fallbacks]
  }
  return fallbacks
}

/**
 * Results of a step that may be settled under the writer do not decode under the reader: replaying
 * it would hand the body a value of the wrong shape.
 */
export const stepResultIncompatible = (
  c: WorkflowComparison,
  step: string,
  refusal: TypeRefusal,
): LocatedDraft => ({
  rule: ruleFor("step-result-incompatible", c.perspective),
  owner: c.owner,
  workflow: c.workflow,
  step,
  message: `results of step "${step}" of ${qualified(c)} recorded under ${c.perspective.writer} do not decode under ${c.perspective.reader}: ${explain(refusal)}`,
  at: stepResultPaths(c, step, refusal),
})

/**
 * A step's result type changed in a way no settled result is affected by: either recorded results
 * still decode (`refusal` null), or only executions that have not settled the step are concerned,
 * and the reader's runners adopt them onto their own manifest.
 */
export const stepResultChanged = (
  c: WorkflowComparison,
  step: string,
  refusal: TypeRefusal | null,
): LocatedDraft => ({
  rule: ruleFor("step-result-changed", c.perspective),
  owner: c.owner,
  workflow: c.workflow,
  step,
  message:
    refusal === null
      ? `the result type of step "${step}" of ${qualified(c)} changed compatibly: results recorded under ${c.perspective.writer} still decode under ${c.perspective.reader}`
      : `the result type of step "${step}" of ${qualified(c)} changed (${explain(refusal)}), but no execution concerned has settled it; runners of ${c.perspective.reader} adopt them onto their manifest`,
  at:
    refusal === null
      ? [[...stepPath(c.workflow, step), "output"], ...stepFallbacks(c.workflow, step)]
      : stepResultPaths(c, step, refusal),
})

/**
 * The writer (an execution's start manifest) was accepted after the reader's and a shared step's
 * result type differs: runners of the newer manifest may record results of it at any moment that the
 * reader cannot read, so the reader must not touch the execution at all.
 */
export const newerStepResultChanged = (c: WorkflowComparison, step: string): LocatedDraft => ({
  rule: "rollback-step-result-changed",
  severity: "error",
  owner: c.owner,
  workflow: c.workflow,
  step,
  message: `the result type of step "${step}" of ${qualified(c)} differs in ${c.perspective.writer}, which was accepted after ${c.perspective.reader}'s; its runners may record results ${c.perspective.reader} cannot read`,
  at: stepFallbacks(c.workflow, step),
})

// ── input and output ────────────────────────────────────────────────────────────────────────────

/** Recorded start inputs must decode under the reader's input type. */
export const inputProblem = (c: WorkflowComparison): LocatedDraft | undefined => {
  const refusal = acceptsDeclared(c.reader.input, c.writer.input)
  if (refusal === null) return undefined
  const inInput = refusalUnder("input", refusal)
  return {
    rule: ruleFor("input-incompatible", c.perspective),
    owner: c.owner,
    workflow: c.workflow,
    message: `inputs of ${qualified(c)} recorded under ${c.perspective.writer} do not decode under ${c.perspective.reader}: ${explain(inInput)}`,
    at: [
      ...pathsInto(["workflows", c.workflow, "input"], refusal.segments),
      workflowPath(c.workflow),
    ],
  }
}

const resultRefusal = (
  reader: { readonly output: TypeNode | null; readonly errors: Readonly<Record<string, TypeNode>> },
  writer: { readonly output: TypeNode | null; readonly errors: Readonly<Record<string, TypeNode>> },
): TypeRefusal | null => {
  const output = acceptsDeclared(reader.output, writer.output)
  if (output !== null) return refusalUnder("output", output)
  const errors = acceptsErrors(reader.errors, writer.errors)
  return errors === null ? null : refusalUnder("errors", errors)
}

const resultPaths = (workflow: string, refusal: TypeRefusal): ManifestPath[] => {
  const [head, ...rest] = refusal.segments
  const name = head?.kind === "field" ? head.name : "output"
  return [...pathsInto(["workflows", workflow, name], rest), workflowPath(workflow)]
}

/**
 * The declared errors whose payloads the reader reads through a migration of its earlier shapes
 * (`shapeReading`): a runner replays their recorded failures, so only clients' reading of the
 * workflow's result remains to say (`migratedErrorsInResults`).
 */
const migratedErrorsOf = (
  c: WorkflowComparison,
  earlierErrors: Readonly<Record<string, EarlierShapes>>,
): string[] =>
  Object.keys(c.writer.errors).filter((error) => {
    const reader = c.reader.errors[error]
    const writer = c.writer.errors[error]!
    return (
      reader !== undefined && shapeReading(reader, writer, earlierErrors[error]).kind === "migrated"
    )
  })

const withoutErrors = <W extends { readonly errors: Readonly<Record<string, TypeNode>> }>(
  workflow: W,
  errors: readonly string[],
): W => {
  const kept: Record<string, TypeNode> = {}
  for (const [name, payload] of Object.entries(workflow.errors)) {
    if (!errors.includes(name)) kept[name] = payload
  }
  return { ...workflow, errors: kept }
}

/**
 * A declared error whose payload changed with a migration is part of the workflow's result too:
 * runners read recorded failures through the migration, but a client decodes a result that fails
 * with the error in the shape of the manifest it was built from. A warning, not a refusal: the
 * migration is what the author asked for, and only a result that fails with the error is affected.
 */
const migratedErrorsInResults = (
  c: WorkflowComparison,
  errors: readonly string[],
): LocatedDraft => {
  const names = errors.map((error) => `"${error}"`).join(", ")
  return {
    rule: "output-incompatible",
    owner: c.owner,
    workflow: c.workflow,
    severity: "warning",
    message: `the payload of error ${names} of ${qualified(c)} changed: failures steps recorded are read through its migration, but a result of ${qualified(c)} that fails with it decodes only in clients built with the payload it was written with`,
    at: errors.map((error) => ["workflows", c.workflow, "errors", error]),
  }
}

/**
 * A workflow's result (its output or a declared error) is read by clients on both sides of a deploy:
 * clients built from the writer may be awaiting executions the reader's runners finish, and clients
 * built from the reader read results recorded under the writer (by runners still deployed, or kept
 * after finishing). So it must be readable in both directions, and there is no rollback mirror.
 * A declared error the reader reads through a migration (`earlierErrors`) is left out of that
 * refusal: its change is what the author declared, and is reported as a warning instead.
 */
export const outputProblem = (
  c: WorkflowComparison,
  earlierErrors: Readonly<Record<string, EarlierShapes>> = {},
): LocatedDraft | undefined => {
  const migrated = migratedErrorsOf(c, earlierErrors)
  const toOldClients = resultRefusal(
    withoutErrors(c.writer, migrated),
    withoutErrors(c.reader, migrated),
  )
  const fromOldResults = resultRefusal(
    withoutErrors(c.reader, migrated),
    withoutErrors(c.writer, migrated),
  )
  const first = toOldClients ?? fromOldResults
  if (first === null) {
    return migrated.length === 0 || resultRefusal(c.writer, c.reader) === null
      ? undefined
      : migratedErrorsInResults(c, migrated)
  }
  const parts: string[] = []
  if (toOldClients !== null) {
    parts.push(
      `results of ${qualified(c)} written under ${c.perspective.reader} do not decode in clients built from ${c.perspective.writer}, which may be awaiting them: ${explain(toOldClients)}`,
    )
  }
  if (fromOldResults !== null) {
    parts.push(
      `results recorded under ${c.perspective.writer} do not decode under ${c.perspective.reader}: ${explain(fromOldResults)}`,
    )
  }
  return {
    rule: "output-incompatible",
    owner: c.owner,
    workflow: c.workflow,
    message: parts.join("; and "),
    at: resultPaths(c.workflow, first),
  }
}

// ── markers ─────────────────────────────────────────────────────────────────────────────────────

/**
 * What executions recorded for a marker: values between `low` and `high` (one execution: one value),
 * or `"absent"` when they started before the marker existed and read 0.
 */
export type RecordedMarker = { readonly low: number; readonly high: number } | "absent"

const describeValues = (recorded: { readonly low: number; readonly high: number }) =>
  recorded.low === recorded.high ? `${recorded.low}` : `values ${recorded.low}..${recorded.high}`

/**
 * A recorded marker must be declared by the reader with its value in `min..current`; a marker the
 * reader declares with `min > 0` must not be absent, since executions that predate it read 0.
 */
export const markerProblem = (
  c: WorkflowComparison,
  marker: string,
  recorded: RecordedMarker,
): LocatedDraft | undefined => {
  const range: MarkerRange | undefined = c.reader.versions[marker]
  const p = c.perspective
  const subject = { owner: c.owner, workflow: c.workflow, marker }
  const markerPath: ManifestPath = ["workflows", c.workflow, "versions", marker]
  const fallbacks = [markerPath, ["workflows", c.workflow, "versions"], workflowPath(c.workflow)]
  if (recorded === "absent") {
    if (range === undefined || range.min === 0) return undefined
    return {
      rule: ruleFor("marker-min-raised", p),
      ...subject,
      message: `marker "${marker}" of ${qualified(c)} has min ${range.min} in ${p.reader}, but executions started under ${p.writer} without it read 0`,
      at: [[...markerPath, "min"], ...fallbacks],
    }
  }
  if (range === undefined) {
    return {
      rule: ruleFor("marker-removed", p),
      ...subject,
      message: `marker "${marker}" of ${qualified(c)} is not declared by ${p.reader}, but executions started under ${p.writer} recorded ${describeValues(recorded)}`,
      at: fallbacks,
    }
  }
  if (recorded.low < range.min || recorded.high > range.current) {
    return {
      rule: ruleFor("marker-out-of-range", p),
      ...subject,
      message: `marker "${marker}" of ${qualified(c)} is ${range.min}..${range.current} in ${p.reader}, but executions started under ${p.writer} recorded ${describeValues(recorded)}`,
      at: [[...markerPath, recorded.low < range.min ? "min" : "current"], ...fallbacks],
    }
  }
  return undefined
}

// ── events ──────────────────────────────────────────────────────────────────────────────────────

/** An owner's events as written under one manifest and read under another. */
export interface EventComparison {
  readonly owner: string
  readonly event: string
  readonly writer: TypeNode
  /** `undefined`: the reader does not declare the event. */
  readonly reader: TypeNode | undefined
  readonly perspective: Perspective
  /** Whether some workflow of the writer waits for the event (recorded or registered waits). */
  readonly waitedFor: boolean
}

/**
 * Events in an owner's log (emitted under the writer) are read by the reader's waits: the event must
 * still be declared, and its payload type must accept the old one. A removed event nothing waited
 * for is only a warning: old clients may still emit it, and nothing reads it.
 */
export const eventProblem = (e: EventComparison): LocatedDraft | undefined => {
  const p = e.perspective
  if (e.reader === undefined) {
    if (p.rollback) return undefined
    const severity: FindingSeverity = e.waitedFor ? "error" : "warning"
    return {
      rule: "event-removed",
      severity,
      owner: e.owner,
      event: e.event,
      message: `event "${e.event}" of ${e.owner} is not declared by ${p.reader}; ${
        e.waitedFor
          ? `workflows of ${p.writer} wait for it, and its events stay in the log`
          : `clients of ${p.writer} may still emit it`
      }`,
      at: [["events", e.event], ["events"], []],
    }
  }
  const refusal = accepts(e.reader, e.writer)
  if (refusal === null) return undefined
  return {
    rule: ruleFor("event-payload-incompatible", p),
    owner: e.owner,
    event: e.event,
    message: `"${e.event}" events emitted under ${p.writer} do not decode under ${p.reader}: ${explain(refusal)}`,
    at: [...pathsInto(["events", e.event], refusal.segments), ["events"], []],
  }
}

/** The events some step of the workflow waits for. */
export const eventsWaitedFor = (workflow: CanonicalWorkflow): Set<string> => {
  const events = new Set<string>()
  for (const step of Object.values(workflow.steps)) {
    const event = stepKindModelOf(step.kind).eventWaitedFor(step)
    if (event !== undefined) events.add(event)
  }
  return events
}

const compatibilityHashes = new WeakMap<CanonicalWorkflow, Hash>()

/**
 * The compatibility hash of a canonical workflow, computed once per object: runners judge many
 * executions against one registration, and equal hashes are the fast path of every check.
 */
export const compatibilityHashOf = (workflow: CanonicalWorkflow): Hash => {
  let hash = compatibilityHashes.get(workflow)
  if (hash === undefined) {
    hash = workflowHashes(workflow).compatibility
    compatibilityHashes.set(workflow, hash)
  }
  return hash
}

/** Where a workflow's `concurrency:` entry is, most precise first. */
const concurrencyPaths = (workflow: string, field?: "key" | "limit"): ManifestPath[] => [
  ...(field === undefined ? [] : [["workflows", workflow, "concurrency", field]]),
  ["workflows", workflow, "concurrency"],
  workflowPath(workflow),
]

/**
 * A change of a workflow's concurrency key between the writer (the manifest executions were
 * started under) and the reader. Executions keep the group they started in — the key path and
 * value are on their rows — so a changed path splits a group's executions in two that are limited
 * separately (an error while any is open); a lowered limit lets admitted executions finish; an
 * added key does not count executions started before it; a removed one admits every queued
 * execution at its group's next finish (warnings). A raised limit is safe and reports nothing.
 */
export const concurrencyProblem = (
  owner: string,
  workflow: string,
  writer: { readonly key: string; readonly limit?: number } | undefined,
  reader: CanonicalWorkflow["concurrency"],
  perspective: Perspective,
): LocatedDraft | undefined => {
  const subject = { owner, workflow }
  const name = `${owner}.${workflow}`
  if (writer === undefined && reader === undefined) return undefined
  if (writer === undefined) {
    return {
      rule: "concurrency-added",
      ...subject,
      message: `${name} declares the concurrency key "${reader!.key}" in ${perspective.reader}; executions started under ${perspective.writer} have none and are not counted against its limit of ${reader!.limit}`,
      at: concurrencyPaths(workflow, "key"),
    }
  }
  if (reader === undefined) {
    return {
      rule: "concurrency-removed",
      ...subject,
      message: `${name} declares no concurrency key in ${perspective.reader}; executions started under ${perspective.writer} with the key "${writer.key}" that are still queued are admitted at once`,
      at: [workflowPath(workflow)],
    }
  }
  if (writer.key !== reader.key) {
    return {
      rule: "concurrency-key-changed",
      ...subject,
      message: `the concurrency key of ${name} is "${reader.key}" in ${perspective.reader} but "${writer.key}" under ${perspective.writer}: executions started under each are limited separately`,
      at: concurrencyPaths(workflow, "key"),
    }
  }
  if (writer.limit !== undefined && reader.limit < writer.limit) {
    return {
      rule: "concurrency-limit-lowered",
      ...subject,
      message: `the concurrency limit of ${name} is ${reader.limit} in ${perspective.reader}, lowered from ${writer.limit} under ${perspective.writer}: executions already admitted above it finish first`,
      at: concurrencyPaths(workflow, "limit"),
    }
  }
  return undefined
}
// ── migrations of recorded data ─────────────────────────────────────────────────────────────────

/** What recorded data a migration reads: a step's results, the start input, an event's payloads. */
export type MigratedData =
  | { readonly kind: "step"; readonly step: string }
  | { readonly kind: "input" }
  | { readonly kind: "event"; readonly event: string }
  /** The events a wait step recorded. */
  | { readonly kind: "wait"; readonly step: string; readonly event: string }
  /** The payloads of a declared error a step recorded. */
  | { readonly kind: "error"; readonly step: string; readonly error: string }

/**
 * The data one part of a step's recorded result is: a wait's events, an activity's results, or the
 * payloads of one declared error.
 */
export const migratedDataOf = (
  step: string,
  written: CanonicalStep,
  read: CanonicalStep,
  part: { readonly kind: "value" } | { readonly kind: "error"; readonly error: string },
): MigratedData =>
  part.kind === "error"
    ? { kind: "error", step, error: part.error }
    : written.kind === "wait" && read.event !== undefined
      ? { kind: "wait", step, event: read.event }
      : { kind: "step", step }

const earlierPath = (c: { readonly workflow?: string }, data: MigratedData): ManifestPath =>
  data.kind === "event" || data.kind === "wait"
    ? ["events", data.event, "earlier"]
    : data.kind === "input"
      ? ["workflows", c.workflow ?? "", "input", "earlier"]
      : data.kind === "error"
        ? ["workflows", c.workflow ?? "", "errors", data.error, "earlier"]
        : ["workflows", c.workflow ?? "", "steps", data.step, "output", "earlier"]

const describeData = (
  c: { readonly owner: string; readonly workflow?: string },
  data: MigratedData,
) =>
  data.kind === "event"
    ? `"${data.event}" events of ${c.owner}`
    : data.kind === "wait"
      ? `"${data.event}" events that wait "${data.step}" of ${c.owner}.${c.workflow} matched`
      : data.kind === "input"
        ? `inputs of ${c.owner}.${c.workflow}`
        : data.kind === "error"
          ? `"${data.error}" errors of step "${data.step}" of ${c.owner}.${c.workflow}`
          : `results of step "${data.step}" of ${c.owner}.${c.workflow}`

/**
 * Recorded data of an earlier shape the reader declares is read through its migration: says which
 * migration covers the data of which writer (`writer`: e.g. `release 1`).
 */
export const recordedDataMigrated = (
  c: { readonly owner: string; readonly workflow?: string },
  data: MigratedData,
  migration: string,
  writer: string,
): LocatedDraft => {
  const at = earlierPath(c, data)
  return {
    rule: "recorded-data-migrated",
    owner: c.owner,
    ...(c.workflow === undefined ? {} : { workflow: c.workflow }),
    ...(data.kind === "step" || data.kind === "wait" || data.kind === "error"
      ? { step: data.step }
      : {}),
    ...(data.kind === "event" || data.kind === "wait" ? { event: data.event } : {}),
    ...(data.kind === "error" ? { error: data.error } : {}),
    migration,
    message: `${describeData(c, data)} recorded under ${writer} are read through migration "${migration}"`,
    at: [[...at, migration], at],
  }
}

/**
 * A refusal where the reader declares earlier shapes of the data: the message says that none of
 * them covers the writer's shape, naming the writer (`release 2`), and the location points at them.
 */
export const notCoveredByEarlierShapes = (
  draft: LocatedDraft,
  c: { readonly owner: string; readonly workflow?: string },
  data: MigratedData,
  migrations: readonly string[],
  writer: string,
): LocatedDraft => ({
  ...draft,
  message: `${draft.message}; no earlier shape declared (${migrations.join(", ")}) covers the shape recorded under ${writer}: declare one with its migration`,
  at: [...draft.at.slice(0, 1), earlierPath(c, data), ...draft.at.slice(1)],
})
