/**
 * What gets generated for one owner, decided once: every declared type with its generated name and
 * docs, in dependency order; the owner's error classes; its workflows and their steps. The file
 * emitters and the name-conflict check all read this plan, so they cannot disagree about a name.
 */
import { canonicalOwner, ownerHash } from "../../runtime/model/canonicalManifest.js"
import type { CanonicalOwner } from "../../runtime/model/canonicalManifest.js"
import type { Hash } from "../../runtime/model/hash.js"
import type { StepDecl, WorkflowDecl } from "../../runtime/model/manifest.js"
import { stepKindModelOf } from "../../runtime/model/stepKinds/stepKinds.js"
import type { TypeNode } from "../../runtime/model/typeModel.js"
import type { LoadedManifest } from "../manifest/loadedManifest.js"
import type { ManifestPath } from "../manifest/sourcePositions.js"
import { generatedTypeNames, generatedValueNames } from "../manifest/names.js"
import { ownerFolder } from "./names.js"
import { referencedTypes, usesJson } from "../manifest/typeParts.js"

/** A type that gets a TypeScript declaration and a zod schema in the owner's types.ts. */
export interface TypeDeclaration {
  readonly name: string
  readonly schema: string
  readonly type: TypeNode
  readonly docs: string | undefined
  /** Where the manifest declares it, for located errors about its generated name. */
  readonly origin: ManifestPath
}

export interface EventDeclaration {
  /** The event's name as `emit` and `wait` steps spell it. */
  readonly event: string
  readonly payload: TypeDeclaration
}

export interface ErrorDeclaration {
  readonly name: string
  readonly payload: TypeNode
  readonly docs: string | undefined
  readonly origin: ManifestPath
}

export interface StepPlan<D extends StepDecl = StepDecl> {
  readonly name: string
  readonly decl: D
  /** The input type the step declares (an activity's), if it takes one. */
  readonly input: TypeDeclaration | null
  /** The success value's type the step declares (an activity's, a race's), if it has one. */
  readonly output: TypeDeclaration | null
  readonly origin: ManifestPath
}

export interface WorkflowPlan {
  readonly name: string
  readonly decl: WorkflowDecl
  readonly input: TypeDeclaration | null
  readonly output: TypeDeclaration | null
  readonly steps: readonly StepPlan[]
  readonly origin: ManifestPath
}

export interface OwnerPlan {
  readonly source: LoadedManifest
  readonly owner: string
  readonly folder: string
  readonly canonical: CanonicalOwner
  readonly hash: Hash
  /** Named types first (each after the types it refers to), then events, inputs and outputs. */
  readonly types: readonly TypeDeclaration[]
  readonly events: readonly EventDeclaration[]
  /** One class per error name of the owner, in order of first declaration. */
  readonly errors: readonly ErrorDeclaration[]
  readonly workflows: readonly WorkflowPlan[]
  /** Whether some type uses `json`, so types.ts declares the `Json` type. */
  readonly usesJson: boolean
}

/** Prints a duration of the manifest the way it is written there: `10m`, `1d`, `500ms`. */
export const formatDuration = (ms: number): string => {
  const units: readonly (readonly [string, number])[] = [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
  ]
  for (const [unit, size] of units) if (ms >= size && ms % size === 0) return `${ms / size}${unit}`
  return `${ms}ms`
}

const joinDocs = (...parts: readonly (string | undefined)[]): string | undefined => {
  const present = parts.filter((part): part is string => part !== undefined && part.trim() !== "")
  return present.length === 0 ? undefined : present.map((part) => part.trim()).join("\n\n")
}

/** Named types in an order where each comes after every named type it refers to. */
const namedTypesInDependencyOrder = (source: LoadedManifest): TypeDeclaration[] => {
  const { types } = source.manifest
  const ordered: TypeDeclaration[] = []
  const visited = new Set<string>()
  const visit = (name: string) => {
    const type = types[name]
    if (visited.has(name) || type === undefined) return
    visited.add(name)
    referencedTypes(type).forEach(visit)
    ordered.push({
      name,
      schema: generatedValueNames.schema(name),
      type,
      docs: type.description,
      origin: ["types", name],
    })
  }
  Object.keys(types).forEach(visit)
  return ordered
}

const stepPlan = (workflow: string, name: string, decl: StepDecl): StepPlan => {
  const origin = ["workflows", workflow, "steps", name]
  const declared = (
    typeName: string,
    type: TypeNode | null,
    what: string,
    at: string,
  ): TypeDeclaration | null =>
    type === null
      ? null
      : {
          name: typeName,
          schema: generatedValueNames.schema(typeName),
          type,
          docs: joinDocs(
            `${what} of ${decl.kind} \`${name}\` of workflow \`${workflow}\`.`,
            type.description,
          ),
          origin: [...origin, at],
        }
  const types = stepKindModelOf(decl.kind).declaredTypes(decl)
  return {
    name,
    decl,
    origin,
    input: declared(generatedTypeNames.stepInput(workflow, name), types.input, "Input", "input"),
    output: declared(
      generatedTypeNames.stepOutput(workflow, name),
      types.output,
      "Result",
      "output",
    ),
  }
}

const workflowPlan = (name: string, decl: WorkflowDecl): WorkflowPlan => {
  const origin = ["workflows", name]
  const declared = (typeName: string, type: TypeNode | null, docs: string, at: string) =>
    type === null
      ? null
      : {
          name: typeName,
          schema: generatedValueNames.schema(typeName),
          type,
          docs: joinDocs(docs, type.description),
          origin: [...origin, at],
        }
  return {
    name,
    decl,
    origin,
    input: declared(
      generatedTypeNames.workflowInput(name),
      decl.input,
      `Input of workflow \`${name}\`, validated before a start writes anything.`,
      "input",
    ),
    output: declared(
      generatedTypeNames.workflowOutput(name),
      decl.output,
      `Result of workflow \`${name}\` when it succeeds.`,
      "output",
    ),
    steps: Object.entries(decl.steps).map(([step, stepDecl]) => stepPlan(name, step, stepDecl)),
  }
}

/** Plans one validated manifest's generated declarations. */
export const planOwner = (source: LoadedManifest): OwnerPlan => {
  const { manifest } = source
  const canonical = canonicalOwner(manifest)
  const events: EventDeclaration[] = Object.entries(manifest.events).map(([event, decl]) => {
    const name = generatedTypeNames.eventPayload(event)
    return {
      event,
      payload: {
        name,
        schema: generatedValueNames.schema(name),
        type: decl.payload,
        docs: joinDocs(
          `Payload of event \`${event}\`.`,
          decl.description ?? decl.payload.description,
        ),
        origin: ["events", event],
      },
    }
  })
  const workflows = Object.entries(manifest.workflows).map(([name, decl]) =>
    workflowPlan(name, decl),
  )
  const errors = new Map<string, ErrorDeclaration>()
  for (const workflow of workflows) {
    for (const [name, payload] of Object.entries(workflow.decl.errors)) {
      if (errors.has(name)) continue
      errors.set(name, {
        name,
        payload,
        docs: joinDocs(`Declared error \`${name}\`.`, payload.description),
        origin: [...workflow.origin, "errors", name],
      })
    }
  }
  const types = [
    ...namedTypesInDependencyOrder(source),
    ...events.map((event) => event.payload),
    ...workflows.flatMap((workflow) => [
      ...(workflow.input === null ? [] : [workflow.input]),
      ...(workflow.output === null ? [] : [workflow.output]),
      ...workflow.steps.flatMap((step) =>
        [step.input, step.output].filter((type): type is TypeDeclaration => type !== null),
      ),
    ]),
  ]
  return {
    source,
    owner: manifest.owner,
    folder: ownerFolder(manifest.owner),
    canonical,
    hash: ownerHash(canonical),
    types,
    events,
    errors: [...errors.values()],
    workflows,
    usesJson:
      types.some((declaration) => usesJson(declaration.type)) ||
      [...errors.values()].some((error) => usesJson(error.payload)),
  }
}
