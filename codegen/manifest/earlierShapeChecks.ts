/**
 * The `earlier:` entries of a manifest: where recorded data may list the earlier shapes it still
 * reads, each under the name of its migration. They are written beside the type in its `type:` form,
 *
 *     output:
 *       type: { limit: Money }
 *       earlier:
 *         v1: { limitCents: integer }
 *
 * on an event's payload, a workflow's input, an activity's output and a declared error's payload
 * (under the workflow's `errors:`, read wherever a step recorded the error). `splitEarlierShapes` takes
 * them out of the plain data before the type checker reads it (so the type language itself has no
 * such construct), and `checkEarlierShapes` parses them, located, into the model's earlier shapes.
 */
import type { EarlierShapes, OwnerEarlierShapes } from "../../runtime/model/earlierShapes.js"
import type { TypeNode } from "../../runtime/model/typeModel.js"
import type { ManifestReport } from "./manifestReport.js"
import { MIGRATION_NAME } from "./names.js"
import { setEntry, type PlainValue } from "./plainValue.js"
import type { ManifestPath } from "./sourcePositions.js"
import { describeValue, parseTypeExpression, type TypeContext } from "./typeExpressions.js"

/** The key beside `type:` that lists earlier shapes. */
export const EARLIER_KEY = "earlier"

type Mapping = { readonly [key: string]: PlainValue }

const asMapping = (value: PlainValue | undefined): Mapping | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined

/** What an `earlier:` entry belongs to. */
export type EarlierTarget =
  | { readonly kind: "event"; readonly event: string }
  | { readonly kind: "input"; readonly workflow: string }
  | { readonly kind: "step"; readonly workflow: string; readonly step: string }
  | { readonly kind: "error"; readonly workflow: string; readonly error: string }

/** One `earlier:` entry found in a manifest, not yet parsed. */
export interface EarlierEntry {
  readonly target: EarlierTarget
  /** Where the `earlier:` mapping is written. */
  readonly path: ManifestPath
  readonly value: PlainValue
}

/**
 * The type at a place that may list earlier shapes, without its `earlier:` key; entries only in the
 * `{ type: T }` form, where `earlier` cannot be a field name (a mapping with `type:` is never an
 * object's fields).
 */
const split = (
  value: PlainValue | undefined,
  path: ManifestPath,
  target: EarlierTarget,
  found: EarlierEntry[],
): PlainValue | undefined => {
  const mapping = asMapping(value)
  if (mapping === undefined || !Object.hasOwn(mapping, "type")) return value
  if (!Object.hasOwn(mapping, EARLIER_KEY)) return value
  found.push({ target, path: [...path, EARLIER_KEY], value: mapping[EARLIER_KEY]! })
  const rest: Record<string, PlainValue> = {}
  for (const [key, inner] of Object.entries(mapping)) {
    if (key !== EARLIER_KEY) setEntry(rest, key, inner)
  }
  return rest
}

const withEntry = (mapping: Mapping, key: string, value: PlainValue | undefined): Mapping => {
  if (value === mapping[key]) return mapping
  const copy: Record<string, PlainValue> = {}
  for (const [k, v] of Object.entries(mapping)) setEntry(copy, k, k === key ? value! : v)
  return copy
}

/** `split` of each value of `mapping` (an event's payload, an error's), whose path is `at` and its key. */
const splitEach = (
  mapping: Mapping,
  at: ManifestPath,
  targetOf: (key: string) => EarlierTarget,
  found: EarlierEntry[],
): Mapping => {
  let next = mapping
  for (const [key, value] of Object.entries(mapping)) {
    next = withEntry(next, key, split(value, [...at, key], targetOf(key), found))
  }
  return next
}

/**
 * The manifest's plain data with every `earlier:` entry taken out, and the entries. Paths of
 * everything else are unchanged, so diagnostics about the rest are located as before.
 *
 * @example
 * const { value, entries } = splitEarlierShapes(plain)
 * // entries: [{ target: { kind: "step", workflow: "fulfill", step: "screen" }, path: [..., "earlier"], … }]
 */
export const splitEarlierShapes = (
  root: PlainValue,
): { readonly value: PlainValue; readonly entries: readonly EarlierEntry[] } => {
  const entries: EarlierEntry[] = []
  let manifest = asMapping(root)
  if (manifest === undefined) return { value: root, entries }
  const events = asMapping(manifest["events"])
  if (events !== undefined) {
    const next = splitEach(events, ["events"], (event) => ({ kind: "event", event }), entries)
    manifest = withEntry(manifest, "events", next)
  }
  const workflows = asMapping(manifest["workflows"])
  if (workflows !== undefined) {
    let nextWorkflows = workflows
    for (const [workflow, body] of Object.entries(workflows)) {
      let next = asMapping(body)
      if (next === undefined) continue
      const at = ["workflows", workflow]
      next = withEntry(
        next,
        "input",
        split(next["input"], [...at, "input"], { kind: "input", workflow }, entries),
      )
      const steps = asMapping(next["steps"])
      if (steps !== undefined) {
        let nextSteps = steps
        for (const [step, stepBody] of Object.entries(steps)) {
          const entry = asMapping(stepBody)
          if (entry === undefined || entry["kind"] !== "activity") continue
          const output = split(
            entry["output"],
            [...at, "steps", step, "output"],
            { kind: "step", workflow, step },
            entries,
          )
          nextSteps = withEntry(nextSteps, step, withEntry(entry, "output", output))
        }
        next = withEntry(next, "steps", nextSteps)
      }
      const errors = asMapping(next["errors"])
      if (errors !== undefined) {
        const target = (error: string): EarlierTarget => ({ kind: "error", workflow, error })
        next = withEntry(next, "errors", splitEach(errors, [...at, "errors"], target, entries))
      }
      nextWorkflows = withEntry(nextWorkflows, workflow, next)
    }
    manifest = withEntry(manifest, "workflows", nextWorkflows)
  }
  return { value: manifest, entries }
}

const parseEntry = (
  entry: EarlierEntry,
  context: TypeContext,
  report: ManifestReport,
): EarlierShapes | undefined => {
  const mapping = asMapping(entry.value)
  if (mapping === undefined || Object.keys(mapping).length === 0) {
    report.error(
      entry.path,
      "invalid-earlier",
      `earlier: is a mapping of migration names to earlier shapes, found ${describeValue(entry.value)}`,
      { hint: "write e.g. earlier: { v1: { limitCents: integer } }, or leave earlier: out" },
    )
    return undefined
  }
  const shapes: Record<string, TypeNode> = {}
  let complete = true
  for (const [name, value] of Object.entries(mapping)) {
    const path = [...entry.path, name]
    if (!MIGRATION_NAME.test(name)) {
      report.error(
        path,
        "invalid-name",
        `"${name}" cannot name a migration: it names the migration function of the implementation`,
        { at: "key", hint: `a migration name matches ${MIGRATION_NAME.source}, e.g. "v1"` },
      )
      complete = false
      continue
    }
    const parsed = parseTypeExpression(value, path, context)
    if (parsed === undefined) complete = false
    else setEntry(shapes, name, parsed.type)
  }
  return complete ? shapes : undefined
}

/**
 * Parses the entries `splitEarlierShapes` found into the model's earlier shapes, reporting located
 * errors; returns `undefined` when one is wrong.
 */
export const checkEarlierShapes = (
  entries: readonly EarlierEntry[],
  context: TypeContext,
  report: ManifestReport,
): OwnerEarlierShapes | undefined => {
  const events: Record<string, EarlierShapes> = {}
  const workflows: Record<
    string,
    {
      input?: EarlierShapes
      steps?: Record<string, EarlierShapes>
      errors?: Record<string, EarlierShapes>
    }
  > = {}
  let complete = true
  for (const entry of entries) {
    const shapes = parseEntry(entry, context, report)
    if (shapes === undefined) {
      complete = false
      continue
    }
    const { target } = entry
    if (target.kind === "event") {
      setEntry(events, target.event, shapes)
      continue
    }
    const workflow = workflows[target.workflow] ?? {}
    setEntry(workflows, target.workflow, workflow)
    if (target.kind === "input") workflow.input = shapes
    else if (target.kind === "error") {
      workflow.errors ??= {}
      setEntry(workflow.errors, target.error, shapes)
    } else {
      workflow.steps ??= {}
      setEntry(workflow.steps, target.step, shapes)
    }
  }
  if (!complete) return undefined
  return {
    ...(Object.keys(events).length === 0 ? {} : { events }),
    ...(Object.keys(workflows).length === 0 ? {} : { workflows }),
  }
}
