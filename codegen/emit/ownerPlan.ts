/**
 * What gets generated for one owner, decided once: every declared type with its generated name and
 * docs, in dependency order; the owner's error classes; its workflows and their steps. The file
 * emitters and the name-conflict check all read this plan, so they cannot disagree about a name.
 */
import { canonicalOwner, ownerHash } from "../../runtime/model/canonicalManifest.js"
import type { CanonicalOwner } from "../../runtime/model/canonicalManifest.js"
import type { Hash } from "../../runtime/model/hash.js"
import {
  canonicalEarlierShapes,
  type EarlierShapes,
  type OwnerEarlierShapes,
} from "../../runtime/model/earlierShapes.js"
import type { StepDecl, WorkflowDecl } from "../../runtime/model/manifest.js"
import { stepKindModelOf } from "../../runtime/model/stepKinds/stepKinds.js"
import type { TypeNode } from "../../runtime/model/typeModel.js"
import type { LoadedManifest } from "../manifest/loadedManifest.js"
import type { ManifestPath } from "../manifest/sourcePositions.js"
import { generatedTypeNames, generatedValueNames, pascalCase } from "../manifest/names.js"
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

/**
 * An earlier shape of recorded data: a TypeScript type in types.ts (no schema: the runtime decodes
 * recorded values from the canonical shape), and the migration the implementation provides.
 */
export interface EarlierShapeDeclaration {
  readonly migration: string
  /** The generated name of the earlier shape, e.g. `FulfillScreenOutputV1`. */
  readonly name: string
  readonly type: TypeNode
  readonly docs: string
  /** The generated name of the type it migrates to, e.g. `FulfillScreenOutput`. */
  readonly current: string
  readonly origin: ManifestPath
}

/** The migrations an implementation of a workflow provides, grouped as `implement` takes them. */
export interface MigrationsPlan {
  readonly input: readonly EarlierShapeDeclaration[]
  /** By activity step, in step order. */
  readonly steps: readonly (readonly [string, readonly EarlierShapeDeclaration[]])[]
  /** By event some wait of the workflow reads. */
  readonly events: readonly (readonly [string, readonly EarlierShapeDeclaration[]])[]
  /**
   * By declared error of the workflow, in declaration order; each migrates to the error's class
   * (an earlier shape is named after the workflow and the error, e.g. `ApplyFlaggedV1`, since
   * workflows of one owner share the class but not their earlier shapes).
   */
  readonly errors: readonly (readonly [string, readonly EarlierShapeDeclaration[]])[]
}

export interface WorkflowPlan {
  readonly name: string
  readonly decl: WorkflowDecl
  readonly input: TypeDeclaration | null
  readonly output: TypeDeclaration | null
  readonly steps: readonly StepPlan[]
  readonly origin: ManifestPath
  /** `undefined` when the workflow's implementation migrates nothing. */
  readonly migrations: MigrationsPlan | undefined
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
  /** Every earlier shape the manifest declares, declared in types.ts after the other types. */
  readonly earlierTypes: readonly EarlierShapeDeclaration[]
  /** The earlier shapes in canonical form, as registration.ts hands them to the runtime. */
  readonly earlier: OwnerEarlierShapes
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

const earlierDeclarations = (
  shapes: EarlierShapes | undefined,
  current: string,
  what: string,
  origin: ManifestPath,
  /** What the earlier shapes' names start with, when not the current type's name. */
  nameBase = current,
): EarlierShapeDeclaration[] =>
  Object.entries(shapes ?? {}).map(([migration, type]) => ({
    migration,
    name: generatedTypeNames.earlierShape(nameBase, migration),
    type,
    docs: joinDocs(
      `An earlier shape of ${what}, which migration \`${migration}\` turns into {@link ${current}}.`,
      type.description,
    )!,
    current,
    origin: [...origin, "earlier", migration],
  }))

/** The earlier shapes of one workflow's recorded data, and of the events its waits read. */
const migrationsPlan = (
  name: string,
  decl: WorkflowDecl,
  earlier: OwnerEarlierShapes,
): MigrationsPlan | undefined => {
  const own = earlier.workflows?.[name]
  const origin = ["workflows", name]
  const input = earlierDeclarations(
    own?.input,
    generatedTypeNames.workflowInput(name),
    `the input of workflow \`${name}\``,
    [...origin, "input"],
  )
  const steps = Object.keys(decl.steps)
    .filter((step) => own?.steps?.[step] !== undefined)
    .map(
      (step) =>
        [
          step,
          earlierDeclarations(
            own?.steps?.[step],
            generatedTypeNames.stepOutput(name, step),
            `the result of activity \`${step}\` of workflow \`${name}\``,
            [...origin, "steps", step, "output"],
          ),
        ] as const,
    )
  const waited = new Set<string>()
  for (const step of Object.values(decl.steps)) {
    const event = step.kind === "wait" ? step.event : undefined
    if (event !== undefined && earlier.events?.[event] !== undefined) waited.add(event)
  }
  const events = [...waited].map(
    (event) =>
      [
        event,
        earlierDeclarations(
          earlier.events?.[event],
          generatedTypeNames.eventPayload(event),
          `the payload of event \`${event}\``,
          ["events", event],
        ),
      ] as const,
  )
  const errors = Object.keys(decl.errors)
    .filter((error) => own?.errors?.[error] !== undefined)
    .map(
      (error) =>
        [
          error,
          earlierDeclarations(
            own?.errors?.[error],
            generatedTypeNames.errorClass(error),
            `the payload of error \`${error}\` of workflow \`${name}\``,
            [...origin, "errors", error],
            `${pascalCase(name)}${generatedTypeNames.errorClass(error)}`,
          ),
        ] as const,
    )
  return input.length === 0 && steps.length === 0 && events.length === 0 && errors.length === 0
    ? undefined
    : { input, steps, events, errors }
}

const workflowPlan = (
  name: string,
  decl: WorkflowDecl,
  earlier: OwnerEarlierShapes,
): WorkflowPlan => {
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
    migrations: migrationsPlan(name, decl, earlier),
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
  const declaredEarlier = manifest.earlier ?? {}
  const workflows = Object.entries(manifest.workflows).map(([name, decl]) =>
    workflowPlan(name, decl, declaredEarlier),
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
  const earlierTypes = [
    ...Object.keys(declaredEarlier.events ?? {}).flatMap((event) =>
      earlierDeclarations(
        declaredEarlier.events?.[event],
        generatedTypeNames.eventPayload(event),
        `the payload of event \`${event}\``,
        ["events", event],
      ),
    ),
    ...workflows.flatMap((workflow) =>
      workflow.migrations === undefined
        ? []
        : [
            ...workflow.migrations.input,
            ...workflow.migrations.steps.flatMap(([, shapes]) => shapes),
            ...workflow.migrations.errors.flatMap(([, shapes]) => shapes),
          ],
    ),
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
      [...errors.values()].some((error) => usesJson(error.payload)) ||
      earlierTypes.some((declaration) => usesJson(declaration.type)),
    earlierTypes,
    earlier: canonicalEarlierShapes(manifest),
  }
}
