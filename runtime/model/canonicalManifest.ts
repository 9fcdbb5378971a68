/**
 * The replay-relevant projection of a manifest, and the hashes over it. Only what decides whether
 * recorded data can still be read and recorded step sequences still replayed is kept: kinds, result
 * types, events, markers, inputs and outputs. Descriptions, key order, step order, YAML style, the
 * names of named types, retry policies, timeouts, default durations and the key field are not, so
 * they never move a hash. Schedules are kept too (not for replay: so that `akter check` can compare
 * them against the lock file), and so move the manifest's hash but no workflow's. A workflow's
 * concurrency key is kept likewise, outside the compatibility hash: it decides when an execution
 * runs, never how its record replays.
 */
import { canonicalType } from "./canonicalType.js"
import { hashOf, type Hash } from "./hash.js"
import type {
  ConcurrencyDecl,
  MarkerRange,
  OwnerManifest,
  StepDecl,
  WorkflowDecl,
} from "./manifest.js"
import type { CanonicalContext } from "./stepKinds/stepKindModel.js"
import { stepKindModelOf, type CanonicalStep } from "./stepKinds/stepKinds.js"
import type { NamedTypes, TypeNode } from "./typeModel.js"
import { canonicalSchedule, type CanonicalSchedule } from "./schedule.js"

export type { CanonicalStep } from "./stepKinds/stepKinds.js"

export interface CanonicalWorkflow {
  readonly owner: string
  readonly workflow: string
  readonly input: TypeNode | null
  readonly output: TypeNode | null
  readonly errors: Readonly<Record<string, TypeNode>>
  readonly steps: Readonly<Record<string, CanonicalStep>>
  readonly versions: Readonly<Record<string, MarkerRange>>
  /** Absent when the workflow declares none (so older projections read the same). */
  readonly concurrency?: ConcurrencyDecl
}

export interface CanonicalOwner {
  readonly format: 1
  readonly owner: string
  readonly events: Readonly<Record<string, TypeNode>>
  readonly workflows: Readonly<Record<string, CanonicalWorkflow>>
  /**
   * Present only when the manifest declares a schedule, so that adding schedules to akter moved no
   * hash of a manifest without them.
   */
  readonly schedules?: Readonly<Record<string, CanonicalSchedule>>
}

export interface WorkflowHashes {
  /** Over everything in the canonical workflow: equal hashes mean a runner can skip every check. */
  readonly compatibility: Hash
  readonly input: Hash
  /** Over the workflow's output and declared errors: what a client awaiting a result decodes. */
  readonly output: Hash
  readonly steps: Readonly<Record<string, Hash>>
}

const sortedRecord = <V>(record: Readonly<Record<string, V>>): Record<string, V> => {
  const out: Record<string, V> = {}
  for (const key of Object.keys(record).sort()) out[key] = record[key]!
  return out
}

const typeOrNull = (type: TypeNode | null, named: NamedTypes) =>
  type === null ? null : canonicalType(type, named)

const canonicalStep = (
  step: StepDecl,
  workflow: WorkflowDecl,
  manifest: OwnerManifest,
): CanonicalStep => {
  const named = manifest.types
  const context: CanonicalContext = {
    type: (type) => typeOrNull(type, named),
    declaredErrors: (names) => {
      const errors: Record<string, TypeNode> = {}
      for (const name of [...names].sort()) {
        const payload = workflow.errors[name]
        if (payload === undefined) throw new Error(`step lists undeclared error "${name}"`)
        errors[name] = canonicalType(payload, named)
      }
      return errors
    },
    eventPayload: (name) => {
      const event = manifest.events[name]
      if (event === undefined) throw new Error(`wait names undeclared event "${name}"`)
      return canonicalType(event.payload, named)
    },
  }
  return stepKindModelOf(step.kind).canonical(step, context)
}

/** The canonical projection of one workflow of a validated manifest. */
export const canonicalWorkflow = (manifest: OwnerManifest, name: string): CanonicalWorkflow => {
  const workflow = manifest.workflows[name]
  if (workflow === undefined) throw new Error(`no workflow "${name}" in ${manifest.owner}`)
  const named = manifest.types
  const steps: Record<string, CanonicalStep> = {}
  for (const stepName of Object.keys(workflow.steps).sort()) {
    steps[stepName] = canonicalStep(workflow.steps[stepName]!, workflow, manifest)
  }
  const errors: Record<string, TypeNode> = {}
  for (const errorName of Object.keys(workflow.errors).sort()) {
    errors[errorName] = canonicalType(workflow.errors[errorName]!, named)
  }
  const versions: Record<string, MarkerRange> = {}
  for (const [marker, range] of Object.entries(sortedRecord(workflow.versions))) {
    versions[marker] = { min: range.min, current: range.current }
  }
  return {
    owner: manifest.owner,
    workflow: name,
    input: typeOrNull(workflow.input, named),
    output: typeOrNull(workflow.output, named),
    errors,
    steps,
    versions,
    ...(workflow.concurrency === undefined
      ? {}
      : { concurrency: { key: workflow.concurrency.key, limit: workflow.concurrency.limit } }),
  }
}

/** The canonical projection of a whole validated manifest: what the lock file stores. */
export const canonicalOwner = (manifest: OwnerManifest): CanonicalOwner => {
  const events: Record<string, TypeNode> = {}
  for (const name of Object.keys(manifest.events).sort()) {
    events[name] = canonicalType(manifest.events[name]!.payload, manifest.types)
  }
  const workflows: Record<string, CanonicalWorkflow> = {}
  for (const name of Object.keys(manifest.workflows).sort()) {
    workflows[name] = canonicalWorkflow(manifest, name)
  }
  const schedules: Record<string, CanonicalSchedule> = {}
  for (const name of Object.keys(manifest.schedules ?? {}).sort()) {
    schedules[name] = canonicalSchedule(manifest.schedules![name]!)
  }
  return {
    format: 1,
    owner: manifest.owner,
    events,
    workflows,
    ...(Object.keys(schedules).length === 0 ? {} : { schedules }),
  }
}

/**
 * The fingerprints of a canonical workflow. A step's fingerprint covers its kind, its result types
 * and its event, so a change to one step moves that step's fingerprint and the compatibility hash,
 * and nothing else.
 */
export const workflowHashes = (workflow: CanonicalWorkflow): WorkflowHashes => {
  const steps: Record<string, Hash> = {}
  for (const [name, step] of Object.entries(workflow.steps)) steps[name] = hashOf(step)
  const input = hashOf({ input: workflow.input })
  const output = hashOf({ output: workflow.output, errors: workflow.errors })
  const compatibility = hashOf({
    owner: workflow.owner,
    workflow: workflow.workflow,
    input,
    output,
    steps,
    versions: workflow.versions,
  })
  return { compatibility, input, output, steps }
}

/** The hash of a whole manifest, printed in the header of every file generated from it. */
export const ownerHash = (owner: CanonicalOwner): Hash => hashOf(owner)
