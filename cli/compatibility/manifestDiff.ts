/**
 * Every change between two canonical manifests of an owner type, breaking or not: workflows, steps,
 * markers, events and errors added or removed, step kinds, waited events and start targets changed,
 * and type changes down to the field, with their paths. `akter diff` prints these for review; whether
 * a change breaks anything is `akter check`'s question, not this one's.
 */
import {
  describeType,
  renderTypePath,
  type TypePathSegment,
} from "../../runtime/compatibility/accepts.js"
import type { FindingLocation } from "../../runtime/compatibility/finding.js"
import { canonicalJson } from "../../runtime/model/canonicalJson.js"
import type {
  CanonicalOwner,
  CanonicalStep,
  CanonicalWorkflow,
} from "../../runtime/model/canonicalManifest.js"
import type { MarkerRange } from "../../runtime/model/manifest.js"
import type { TypeNode } from "../../runtime/model/typeModel.js"
import type { ManifestPath } from "../../codegen/manifest/sourcePositions.js"
import type { StepChangePart } from "../../codegen/stepKinds/stepKindCodegen.js"
import { stepKindCodegenOf } from "../../codegen/stepKinds/stepKinds.js"

export type ChangeKind = "added" | "removed" | "changed"

/** What a change is about. Type parts (`input`, `output`, `payload`) carry a `path` inside the type. */
export type ChangePart =
  | "owner"
  | "workflow"
  | "step"
  | "marker"
  | "event"
  | "error"
  | "input"
  | "output"
  | "payload"
  | "kind"
  | StepChangePart

export interface ManifestChange {
  readonly change: ChangeKind
  readonly part: ChangePart
  readonly owner: string
  readonly workflow?: string
  readonly step?: string
  readonly marker?: string
  readonly event?: string
  readonly error?: string
  /** Inside a type: `total.amount`, `skus[]`, `prices{}`, `oneOf[1]`; absent for the whole type. */
  readonly path?: string
  readonly before?: string
  readonly after?: string
  /** The thing changed, as one phrase: `Order.fulfill step ship output trackingId`. */
  readonly subject: string
  /** Where the change is in the new manifest; for a removal, the mapping it was removed from. */
  readonly location?: FindingLocation
}

/** Locates a node of the new manifest of an owner type. */
export type LocateIn = (path: ManifestPath) => FindingLocation | undefined

interface Draft extends Omit<ManifestChange, "location"> {
  readonly at: readonly ManifestPath[]
}

interface Context {
  readonly owner: string
  readonly workflow?: string
  readonly step?: string
  readonly marker?: string
  readonly event?: string
  readonly error?: string
  /** How the subject is named: `Order.fulfill step ship`. */
  readonly label: string
}

const sorted = (names: Iterable<string>) => [...new Set(names)].sort()

const subjectOf = (context: Context, part: string) =>
  part === "" ? context.label : `${context.label} ${part}`

const scope = (context: Context): Omit<Context, "label"> => {
  const { label: _label, ...rest } = context
  return rest
}

// ── types ─────────────────────────────────────────────────────────────────────────────────────

const fieldText = (type: TypeNode, optional: boolean) =>
  `${describeType(type)}${optional ? ", optional" : ""}`

/** Manifest paths of a node inside a type written at `base`, most precise first. */
const typeLocations = (
  base: ManifestPath,
  segments: readonly TypePathSegment[],
): ManifestPath[] => {
  const names: string[] = []
  for (const segment of segments) {
    if (segment.kind !== "field") break
    names.push(segment.name)
  }
  const paths: ManifestPath[] = []
  for (let length = names.length; length > 0; length--) {
    const prefix = names.slice(0, length)
    paths.push([...base, ...prefix], [...base, ...prefix.slice(0, -1), `${prefix[length - 1]}?`])
  }
  return [...paths, base]
}

const typeChanges = (
  context: Context,
  part: "input" | "output" | "payload" | "error",
  base: ManifestPath,
  before: TypeNode | null,
  after: TypeNode | null,
  segments: readonly TypePathSegment[] = [],
): Draft[] => {
  if (canonicalJson(before) === canonicalJson(after)) return []
  /** A change at `at` (a type path), located at `locatedAt` (the parent, for a removal). */
  const draft = (
    change: ChangeKind,
    values: { readonly before?: string; readonly after?: string },
    at: readonly TypePathSegment[] = segments,
    locatedAt: readonly TypePathSegment[] = at,
  ): Draft => {
    const path = renderTypePath(at)
    return {
      change,
      part,
      ...scope(context),
      ...(path === "" ? {} : { path }),
      ...values,
      subject: subjectOf(context, path === "" ? part : `${part} ${path}`),
      at: typeLocations(base, locatedAt),
    }
  }
  if (before === null || after === null) {
    return [
      before === null
        ? draft("added", { after: describeType(after!) })
        : draft("removed", { before: describeType(before) }),
    ]
  }
  const inside = (segment: TypePathSegment, b: TypeNode, a: TypeNode) =>
    typeChanges(context, part, base, b, a, [...segments, segment])
  if (before.kind === "object" && after.kind === "object") {
    const changes: Draft[] = []
    for (const name of sorted([...Object.keys(before.fields), ...Object.keys(after.fields)])) {
      const was = before.fields[name]
      const now = after.fields[name]
      const field = [...segments, { kind: "field", name } as const]
      if (was === undefined) {
        changes.push(draft("added", { after: fieldText(now!.type, now!.optional) }, field))
      } else if (now === undefined) {
        changes.push(
          draft("removed", { before: fieldText(was.type, was.optional) }, field, segments),
        )
      } else {
        if (was.optional !== now.optional) {
          const word = (optional: boolean) => (optional ? "optional" : "required")
          changes.push(
            draft("changed", { before: word(was.optional), after: word(now.optional) }, field),
          )
        }
        changes.push(...inside({ kind: "field", name }, was.type, now.type))
      }
    }
    return changes
  }
  if (before.kind === "array" && after.kind === "array") {
    return inside({ kind: "items" }, before.items, after.items)
  }
  if (before.kind === "record" && after.kind === "record") {
    return inside({ kind: "values" }, before.values, after.values)
  }
  if (before.kind === "enum" && after.kind === "enum") {
    const removed = before.values.filter((value) => !after.values.includes(value))
    const added = after.values.filter((value) => !before.values.includes(value))
    return [
      ...removed.map((value) => draft("removed", { before: `enum value ${value}` })),
      ...added.map((value) => draft("added", { after: `enum value ${value}` })),
    ]
  }
  if (before.kind === "oneOf" && after.kind === "oneOf") {
    const keys = (variants: readonly TypeNode[]) =>
      variants.map((variant) => canonicalJson(variant))
    const was = keys(before.variants)
    const now = keys(after.variants)
    return [
      ...before.variants
        .filter((_, index) => !now.includes(was[index]!))
        .map((variant) => draft("removed", { before: `variant ${describeType(variant)}` })),
      ...after.variants
        .filter((_, index) => !was.includes(now[index]!))
        .map((variant) => draft("added", { after: `variant ${describeType(variant)}` })),
    ]
  }
  return [draft("changed", { before: describeType(before), after: describeType(after) })]
}

// ── workflows and steps ───────────────────────────────────────────────────────────────────────

const stepText = (step: CanonicalStep) => stepKindCodegenOf(step.kind).describe(step)

const rangeText = (range: MarkerRange) => `${range.min}..${range.current}`

/** A named collection of a manifest (its events, a workflow's steps, …) as two manifests declare it. */
interface Collection<V> {
  readonly part: "workflow" | "step" | "marker" | "event" | "error"
  readonly before: Readonly<Record<string, V>>
  readonly after: Readonly<Record<string, V>>
  /** How an added or removed entry is shown: `activity`, `0..1`. */
  readonly describe: (value: V) => string
  /** Where the collection is written in the new manifest (`workflows.fulfill.steps`). */
  readonly at: ManifestPath
  /** `list` when its entries are list items (a step's `errors: [A, B]`), not mapping keys. */
  readonly written?: "keys" | "list"
}

/** Entries added and removed; `shared` names the entries both declare, for a closer look. */
const membership = <V>(
  context: Context,
  collection: Collection<V>,
): { readonly drafts: Draft[]; readonly shared: string[] } => {
  const { part, before, after, describe, at } = collection
  const enclosing: ManifestPath[] = [at, at.slice(0, -1)]
  const drafts: Draft[] = []
  const shared: string[] = []
  for (const name of sorted([...Object.keys(before), ...Object.keys(after)])) {
    const was = before[name]
    const now = after[name]
    if (was !== undefined && now !== undefined) {
      shared.push(name)
      continue
    }
    const entry = collection.written === "list" ? [] : [[...at, name]]
    drafts.push({
      change: was === undefined ? "added" : "removed",
      part,
      ...scope(context),
      [part]: name,
      ...(was === undefined ? { after: describe(now!) } : { before: describe(was) }),
      subject: subjectOf(context, `${part} ${name}`),
      at: was === undefined ? [...entry, ...enclosing] : enclosing,
    })
  }
  return { drafts, shared }
}

/** Changes of `collection`: its entries added and removed, then `inner` of each shared entry. */
const collectionChanges = <V>(
  context: Context,
  collection: Collection<V>,
  inner: (name: string, before: V, after: V) => readonly Draft[] = () => [],
): Draft[] => {
  const { drafts, shared } = membership(context, collection)
  for (const name of shared) {
    drafts.push(...inner(name, collection.before[name]!, collection.after[name]!))
  }
  return drafts
}

const stepChanges = (context: Context, before: CanonicalStep, after: CanonicalStep): Draft[] => {
  const at: ManifestPath = ["workflows", context.workflow!, "steps", context.step!]
  const changed = (part: ChangePart, was: string, now: string, key: string): Draft => ({
    change: "changed",
    part,
    ...scope(context),
    before: was,
    after: now,
    subject: subjectOf(context, part),
    at: [[...at, key], at],
  })
  if (before.kind !== after.kind) return [changed("kind", before.kind, after.kind, "kind")]
  return stepKindCodegenOf(before.kind).changes(before, after, {
    types: (key, was, now) => typeChanges(context, key, [...at, key], was, now),
    errors: (was, now) =>
      collectionChanges(context, {
        part: "error",
        before: was,
        after: now,
        describe: () => "declared",
        at: [...at, "errors"],
        written: "list",
      }),
    changed,
  })
}

const markerChange = (context: Context, was: MarkerRange, now: MarkerRange): Draft[] => {
  if (was.min === now.min && was.current === now.current) return []
  const at: ManifestPath = ["workflows", context.workflow!, "versions", context.marker!]
  return [
    {
      change: "changed",
      part: "marker",
      ...scope(context),
      before: rangeText(was),
      after: rangeText(now),
      subject: context.label,
      at: [[...at, was.min === now.min ? "current" : "min"], at],
    },
  ]
}

const workflowChanges = (
  context: Context,
  before: CanonicalWorkflow,
  after: CanonicalWorkflow,
): Draft[] => {
  const at: ManifestPath = ["workflows", context.workflow!]
  const within = (key: "error" | "step" | "marker", name: string): Context => ({
    ...context,
    [key]: name,
    label: `${context.label} ${key} ${name}`,
  })
  return [
    ...typeChanges(context, "input", [...at, "input"], before.input, after.input),
    ...typeChanges(context, "output", [...at, "output"], before.output, after.output),
    ...collectionChanges(
      context,
      {
        part: "error",
        before: before.errors,
        after: after.errors,
        describe: describeType,
        at: [...at, "errors"],
      },
      (name, was, now) =>
        typeChanges(within("error", name), "payload", [...at, "errors", name], was, now),
    ),
    ...collectionChanges(
      context,
      {
        part: "step",
        before: before.steps,
        after: after.steps,
        describe: stepText,
        at: [...at, "steps"],
      },
      (name, was, now) => stepChanges(within("step", name), was, now),
    ),
    ...collectionChanges(
      context,
      {
        part: "marker",
        before: before.versions,
        after: after.versions,
        describe: rangeText,
        at: [...at, "versions"],
      },
      (name, was, now) => markerChange(within("marker", name), was, now),
    ),
  ]
}

const EMPTY_OWNER = (owner: string): CanonicalOwner => ({
  format: 1,
  owner,
  events: {},
  workflows: {},
})

/**
 * Every change from `before` (the newest locked manifest of an owner type; `undefined`: not locked
 * yet) to `after` (the owner type in `manifests/`; `undefined`: its manifest was deleted), in
 * manifest order: the owner, its events, then each workflow. Locations point into the new manifest.
 *
 * @example
 * diffManifests(newest.get("Order")?.manifest, canonicalOwner(loaded.manifest), locateInOrderYaml)
 * // [{ change: "removed", part: "step", owner: "Order", workflow: "fulfill", step: "screen", subject: "Order.fulfill step screen", … }]
 */
export const diffManifests = (
  before: CanonicalOwner | undefined,
  after: CanonicalOwner | undefined,
  locate?: LocateIn,
): ManifestChange[] => {
  const owner = (after ?? before)?.owner
  if (owner === undefined) return []
  const context: Context = { owner, label: owner }
  const drafts: Draft[] = []
  if (before === undefined || after === undefined) {
    drafts.push({
      change: before === undefined ? "added" : "removed",
      part: "owner",
      owner,
      ...(before === undefined
        ? { after: `workflows ${Object.keys(after!.workflows).join(", ")}` }
        : { before: `workflows ${Object.keys(before.workflows).join(", ")}` }),
      subject: `owner ${owner}`,
      at: [["owner"], []],
    })
    if (after === undefined) return drafts.map(({ at: _at, ...change }) => change)
  }
  const previous = before ?? EMPTY_OWNER(owner)
  const next = after!
  drafts.push(
    ...collectionChanges(
      context,
      {
        part: "event",
        before: previous.events,
        after: next.events,
        describe: describeType,
        at: ["events"],
      },
      (name, was, now) =>
        typeChanges(
          { owner, event: name, label: `${owner} event ${name}` },
          "payload",
          ["events", name],
          was,
          now,
        ),
    ),
    ...collectionChanges(
      context,
      {
        part: "workflow",
        before: previous.workflows,
        after: next.workflows,
        describe: (workflow) => `steps ${Object.keys(workflow.steps).join(", ")}`,
        at: ["workflows"],
      },
      (name, was, now) =>
        workflowChanges({ owner, workflow: name, label: `${owner}.${name}` }, was, now),
    ),
  )
  return drafts.map(({ at, ...change }) => {
    if (locate === undefined) return change
    for (const path of at) {
      const location = locate(path)
      if (location !== undefined) return { ...change, location }
    }
    return change
  })
}

const SIGN: Record<ChangeKind, string> = { added: "+", removed: "-", changed: "~" }

/**
 * One change as a line: `manifests/shop.yaml:12:7: ~ Shop.fulfill step ship output trackingId:
 * string → integer`, or with the owner type instead of a location when there is none.
 *
 * @example
 * for (const change of changes) console.log(formatChange(change))
 */
export const formatChange = (change: ManifestChange): string => {
  const where =
    change.location === undefined
      ? ""
      : `${change.location.file}:${change.location.line}:${change.location.column}: `
  const detail =
    change.change === "changed"
      ? `: ${change.before} → ${change.after}`
      : change.change === "added"
        ? change.after === undefined
          ? ""
          : ` (${change.after})`
        : change.before === undefined
          ? ""
          : ` (${change.before})`
  return `${where}${SIGN[change.change]} ${change.subject}${detail}`
}
