/**
 * What generated code hands the runtime about one owner type: its canonical manifest, the hashes
 * the compatibility rules trust, the strict zod schemas that validate new input, the constructors
 * of declared errors, and the settings that are not replay-relevant (retry policies, timeouts,
 * default durations, the key field, the deadline). Nothing is read by reflection at run time.
 */
import type { ZodType } from "zod"
import {
  ownerHash,
  workflowHashes,
  type CanonicalOwner,
  type CanonicalWorkflow,
  type WorkflowHashes,
} from "./canonicalManifest.js"
import { canonicalJson } from "./canonicalJson.js"
import {
  readerEarlierShapes,
  type OwnerEarlierShapes,
  type ReaderEarlierShapes,
} from "./earlierShapes.js"
import type { Hash } from "./hash.js"
import type { RetryPolicy } from "./manifest.js"

/** Builds a typed error from the fields of a recorded `Failure`. */
export type ErrorConstructor = new (fields: never) => { readonly _tag: string }

export interface StepSettings {
  /** activity: how often to retry and how long to wait between attempts. */
  readonly retry?: RetryPolicy
  /** activity: bound on one attempt; wait: default timeout. */
  readonly timeoutMs?: number
  /** sleep: default duration. */
  readonly durationMs?: number
  /** activity, start: strict schema of the input the body passes (absent: the step takes none). */
  readonly input?: ZodType
  /**
   * start: the registration of the started workflow's owner type, so a runner can stage the start
   * without being told about that owner separately. A thunk, because owners may start each other.
   */
  readonly target?: () => OwnerRegistration
}

export interface WorkflowRegistrationInput {
  readonly hashes: WorkflowHashes
  readonly key: string | null
  /** Strict schema of the start input; absent when the workflow takes none. */
  readonly input?: ZodType
  readonly errors: Readonly<Record<string, ErrorConstructor>>
  readonly steps: Readonly<Record<string, StepSettings>>
  /** The manifest's deadline: an execution open this long after its start is interrupted. */
  readonly deadlineMs?: number
}

export interface OwnerRegistrationInput {
  /** Manifest path relative to the project root, e.g. `manifests/order.yaml`. */
  readonly source: string
  readonly hash: Hash
  readonly canonical: CanonicalOwner
  /** Strict schemas of event payloads, validated before an emit writes anything. */
  readonly events: Readonly<Record<string, ZodType>>
  readonly workflows: Readonly<Record<string, WorkflowRegistrationInput>>
  /**
   * The earlier shapes the manifest declares of recorded data, canonical (from canonical.json).
   * Not hashed: they say what this deployment reads, not what it records.
   */
  readonly earlier?: OwnerEarlierShapes
}

export interface WorkflowRegistration extends WorkflowRegistrationInput {
  readonly owner: string
  readonly name: string
  readonly source: string
  readonly canonical: CanonicalWorkflow
  /** The earlier shapes this workflow reads: of its input, its activities' results, its events. */
  readonly earlier: ReaderEarlierShapes
}

export interface OwnerRegistration {
  readonly owner: string
  readonly source: string
  readonly hash: Hash
  readonly canonical: CanonicalOwner
  readonly events: Readonly<Record<string, ZodType>>
  readonly workflows: Readonly<Record<string, WorkflowRegistration>>
}

/**
 * Thrown when a registration's recorded hashes do not match its canonical manifest: the generated
 * file was edited by hand or is from another version of akter.
 */
export class StaleRegistration extends Error {
  constructor(
    readonly source: string,
    readonly detail: string,
  ) {
    super(
      `${source}: generated registration does not match its manifest (${detail}); run \`akter generate\``,
    )
    this.name = "StaleRegistration"
  }
}

/**
 * Turns generated registration data into the runtime's registration, after checking that every
 * hash it carries is the hash of its canonical manifest: a runner never trusts a hash it did not
 * recompute.
 *
 * @example
 * export const registration = defineOwner({ source: "manifests/order.yaml", hash, canonical, events, workflows })
 */
export const defineOwner = (input: OwnerRegistrationInput): OwnerRegistration => {
  if (ownerHash(input.canonical) !== input.hash) {
    throw new StaleRegistration(input.source, "manifest hash")
  }
  const workflows: Record<string, WorkflowRegistration> = {}
  for (const [name, workflow] of Object.entries(input.workflows)) {
    const canonical = input.canonical.workflows[name]
    if (canonical === undefined) throw new StaleRegistration(input.source, `workflow ${name}`)
    const expected = workflowHashes(canonical)
    if (canonicalJson(expected) !== canonicalJson(workflow.hashes)) {
      throw new StaleRegistration(input.source, `hashes of workflow ${name}`)
    }
    workflows[name] = {
      ...workflow,
      owner: input.canonical.owner,
      name,
      source: input.source,
      canonical,
      earlier: readerEarlierShapes(input.earlier, name),
    }
  }
  return {
    owner: input.canonical.owner,
    source: input.source,
    hash: input.hash,
    canonical: input.canonical,
    events: input.events,
    workflows,
  }
}
