/**
 * Earlier shapes of recorded data: what a manifest declares it still reads of a value recorded under
 * an older manifest (a step's output, a workflow's input, an event's payload, a declared error's
 * payload), each under the name of the migration that turns it into the current shape. They
 * describe what a deployment reads, not what it writes, so they are not part of the canonical
 * manifest and never move a hash: adding or retiring a migration changes no recorded execution's
 * manifest.
 */
import { canonicalType } from "./canonicalType.js"
import type { NamedTypes, TypeNode } from "./typeModel.js"

/** Migration name → the earlier shape it reads, in the order the manifest declares them. */
export type EarlierShapes = Readonly<Record<string, TypeNode>>

/** The earlier shapes of one workflow's recorded data; only entries with a shape are present. */
export interface WorkflowEarlierShapes {
  /** Of the start input. */
  readonly input?: EarlierShapes
  /** Of an activity step's output, by step name. */
  readonly steps?: Readonly<Record<string, EarlierShapes>>
  /** Of a declared error's payload, by error name: read wherever a step recorded the error. */
  readonly errors?: Readonly<Record<string, EarlierShapes>>
}

/** The earlier shapes a manifest declares, by what they belong to. */
export interface OwnerEarlierShapes {
  /** Of an event's payload, by event name. */
  readonly events?: Readonly<Record<string, EarlierShapes>>
  readonly workflows?: Readonly<Record<string, WorkflowEarlierShapes>>
}

/** What one workflow's reader has: its own earlier shapes and those of its owner's events. */
export interface ReaderEarlierShapes extends WorkflowEarlierShapes {
  readonly events?: Readonly<Record<string, EarlierShapes>>
}

const canonicalShapes = (shapes: EarlierShapes, named: NamedTypes): EarlierShapes => {
  const out: Record<string, TypeNode> = {}
  for (const [name, shape] of Object.entries(shapes)) out[name] = canonicalType(shape, named)
  return out
}

const mapRecord = <A, B>(
  record: Readonly<Record<string, A>> | undefined,
  f: (value: A) => B,
): Record<string, B> | undefined => {
  if (record === undefined) return undefined
  const out: Record<string, B> = {}
  for (const [key, value] of Object.entries(record)) out[key] = f(value)
  return out
}

/**
 * The earlier shapes of a validated manifest in canonical form (refs resolved against the manifest's
 * named types as they are now), as registrations and `akter check` compare them.
 *
 * @example
 * canonicalEarlierShapes(manifest).workflows?.fulfill?.steps?.screen // { v1: { kind: "object", … } }
 */
export const canonicalEarlierShapes = (manifest: {
  readonly earlier?: OwnerEarlierShapes
  readonly types: NamedTypes
}): OwnerEarlierShapes => {
  const earlier = manifest.earlier ?? {}
  const named = manifest.types
  const shapes = (value: EarlierShapes) => canonicalShapes(value, named)
  const events = mapRecord(earlier.events, shapes)
  const workflows = mapRecord(earlier.workflows, (workflow) => {
    const steps = mapRecord(workflow.steps, shapes)
    const errors = mapRecord(workflow.errors, shapes)
    return {
      ...(workflow.input === undefined ? {} : { input: shapes(workflow.input) }),
      ...(steps === undefined ? {} : { steps }),
      ...(errors === undefined ? {} : { errors }),
    }
  })
  return {
    ...(events === undefined ? {} : { events }),
    ...(workflows === undefined ? {} : { workflows }),
  }
}

/** Whether a manifest declares no earlier shape at all. */
export const hasNoEarlierShapes = (earlier: OwnerEarlierShapes | undefined): boolean =>
  earlier === undefined ||
  (Object.keys(earlier.events ?? {}).length === 0 &&
    Object.keys(earlier.workflows ?? {}).length === 0)

/** The earlier shapes a reader of one workflow has: the workflow's own and its owner's events. */
export const readerEarlierShapes = (
  owner: OwnerEarlierShapes | undefined,
  workflow: string,
): ReaderEarlierShapes => ({
  ...(owner?.workflows?.[workflow] ?? {}),
  ...(owner?.events === undefined ? {} : { events: owner.events }),
})
