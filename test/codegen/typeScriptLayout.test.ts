/**
 * The layout of generated TypeScript (`typeScriptLayout.ts`) is prettier's: every module generated
 * from the example manifests, from the benchmark's synthetic project and from random manifests is
 * laid out by akter, and prettier, given the same code on as few lines as its syntax allows, must
 * print exactly the same bytes: with the babel-ts parser that generation used to format with, and
 * with the typescript parser a project's prettier uses for `.ts` files.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import fc from "fast-check"
import * as prettier from "prettier/standalone"
import * as babel from "prettier/plugins/babel"
import * as estree from "prettier/plugins/estree"
import * as typescript from "prettier/plugins/typescript"
import { describe, expect, it } from "vitest"
import { stringify } from "yaml"
import { projectFiles } from "../../codegen/emit/emitProject.js"
import { GENERATED_STYLE } from "../../codegen/emit/generatedStyle.js"
import { moduleDoc, printDoc } from "../../codegen/emit/typeScriptLayout.js"
import type { ModuleBuilder } from "../../codegen/emit/writer.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { syntheticManifests } from "./syntheticManifests.js"
import { REPO } from "./typeCheck.js"

const formatWith = (parser: "babel-ts" | "typescript", text: string) =>
  prettier.format(text, {
    ...GENERATED_STYLE,
    parser,
    plugins: [babel, estree, typescript],
  })

/** Every TypeScript module generated from `sources`, as the writer describes it. */
const modulesOf = (sources: readonly { file: string; text: string }[]): ModuleBuilder[] => {
  const loaded = loadManifestSources(
    sources.map(({ file, text }) => ({ file: `manifests/${file}`, text })),
  )
  expect(loaded.diagnostics.filter((d) => d.severity === "error")).toEqual([])
  return projectFiles(loaded.manifests, { manifestsFolder: "manifests" }).modules
}

/** Each module laid out by akter, and as prettier formats the same code given on one line. */
const layoutsAndPrettier = async (
  modules: readonly ModuleBuilder[],
  parser: "babel-ts" | "typescript",
) =>
  Promise.all(
    modules.map(async (module) => {
      const doc = moduleDoc(module.header, module.statements())
      return {
        path: module.path,
        laidOut: printDoc(doc),
        prettier: await formatWith(parser, printDoc(doc, Infinity)),
      }
    }),
  )

const expectPrettierLayout = async (modules: readonly ModuleBuilder[]) => {
  for (const parser of ["babel-ts", "typescript"] as const) {
    for (const { path, laidOut, prettier } of await layoutsAndPrettier(modules, parser)) {
      expect({ path, parser, text: laidOut }).toEqual({ path, parser, text: prettier })
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Random manifests: types of every construct nested in one another, names short and long (a long
// name pushes a line past the width, where the layout decides), odd strings and descriptions.

/** A type expression before refs to named types are resolved. */
type TypeDraft =
  | { readonly kind: "scalar"; readonly name: string; readonly lists: number }
  | { readonly kind: "ref"; readonly pick: number; readonly lists: number }
  | {
      readonly kind: "object"
      readonly fields: readonly FieldDraft[]
      readonly description?: string | undefined
    }
  | { readonly kind: "enum"; readonly values: readonly string[] }
  | { readonly kind: "oneOf"; readonly variants: readonly TypeDraft[] }
  | { readonly kind: "record"; readonly values: TypeDraft }
  | { readonly kind: "array"; readonly items: TypeDraft }

interface FieldDraft {
  readonly name: string
  readonly optional: boolean
  readonly type: TypeDraft
  readonly description: string | undefined
}

/** A name's tail: usually short, sometimes long enough to fill most of a line. */
const tail = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,8}$/) },
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z][a-zA-Z0-9]{20,45}$/) },
)

const fieldName = fc.oneof(
  tail,
  fc.constantFrom("_private", "delete", "default", "from", "type_", "key"),
)

const description = fc.oneof(
  fc.string({ minLength: 1, maxLength: 30 }),
  fc.constantFrom(
    "A line that is long enough that the writer wraps it over more than one line of the comment, at word boundaries only.",
    "Two lines:\nthe second one.",
    "Ends the comment */ early.",
    "Code follows.\n\n@example\nconst x = {\n  a: 1,\n}",
    "- a list item that goes on for long enough that it has to be wrapped with a hanging indent, really",
    "漢字 and é",
  ),
)

const enumValue = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    "it's",
    'say "hi"',
    `both ' and "`,
    'two "" and one \'',
    "back\\slash",
    "漢字漢字",
    "x".repeat(70),
    "true",
    "1",
  ),
)

const typeDraft: fc.Arbitrary<TypeDraft> = fc.letrec<{ type: TypeDraft }>((tie) => ({
  type: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.record({
      kind: fc.constant("scalar" as const),
      name: fc.constantFrom("string", "number", "integer", "boolean", "null", "json"),
      lists: fc.nat({ max: 2 }),
    }),
    fc.record({ kind: fc.constant("ref" as const), pick: fc.nat(), lists: fc.nat({ max: 2 }) }),
    fc.record(
      {
        kind: fc.constant("object" as const),
        fields: fc.uniqueArray(
          fc.record({
            name: fieldName,
            optional: fc.boolean(),
            type: tie("type"),
            description: fc.option(description, { nil: undefined, freq: 3 }),
          }),
          { maxLength: 5, selector: (field) => field.name },
        ),
        description: fc.option(description, { nil: undefined, freq: 4 }),
      },
      { requiredKeys: ["kind", "fields"] },
    ),
    fc.record({
      kind: fc.constant("enum" as const),
      values: fc.uniqueArray(enumValue, { minLength: 1, maxLength: 8 }),
    }),
    fc.record({
      kind: fc.constant("oneOf" as const),
      variants: fc.array(tie("type"), { minLength: 2, maxLength: 3 }),
    }),
    fc.record({ kind: fc.constant("record" as const), values: tie("type") }),
    fc.record({ kind: fc.constant("array" as const), items: tie("type") }),
  ),
})).type

const objectDraft = fc.record({
  kind: fc.constant("object" as const),
  fields: fc.uniqueArray(
    fc.record({
      name: fieldName,
      optional: fc.boolean(),
      type: typeDraft,
      description: fc.option(description, { nil: undefined, freq: 3 }),
    }),
    { minLength: 1, maxLength: 6, selector: (field) => field.name },
  ),
})

/** The YAML value of a type expression; refs name one of `names`, or are strings without any. */
const typeYaml = (draft: TypeDraft, names: readonly string[]): unknown => {
  switch (draft.kind) {
    case "scalar":
      return draft.name + "[]".repeat(draft.lists)
    case "ref":
      return names.length === 0
        ? "string"
        : names[draft.pick % names.length]! + "[]".repeat(draft.lists)
    case "object": {
      const mapping: Record<string, unknown> = {}
      if (draft.description !== undefined) mapping["description"] = draft.description
      for (const field of draft.fields) {
        const type = typeYaml(field.type, names)
        mapping[field.optional ? `${field.name}?` : field.name] =
          field.description === undefined ? type : { type, description: field.description }
      }
      return mapping
    }
    case "enum":
      return { enum: draft.values }
    case "oneOf":
      return { oneOf: draft.variants.map((variant) => typeYaml(variant, names)) }
    case "record":
      return { record: typeYaml(draft.values, names) }
    case "array":
      return { array: typeYaml(draft.items, names) }
  }
}

const duration = fc.constantFrom("250ms", "1s", "10m", "2h", "1d")

const stepDraft = fc.oneof(
  fc.record({
    kind: fc.constant("activity" as const),
    input: fc.option(objectDraft, { nil: undefined }),
    output: fc.option(typeDraft, { nil: undefined }),
    errors: fc.uniqueArray(fc.nat({ max: 3 }), { maxLength: 3 }),
    retry: fc.option(
      fc.record({
        attempts: fc.integer({ min: 1, max: 1000 }),
        initial: duration,
        factor: fc.constantFrom(1, 1.5, 2, 10, 100),
      }),
      { nil: undefined },
    ),
    description: fc.option(description, { nil: undefined }),
  }),
  fc.record({
    kind: fc.constant("sleep" as const),
    duration: fc.option(duration, { nil: undefined }),
  }),
  fc.record({
    kind: fc.constant("wait" as const),
    event: fc.nat(),
    timeout: fc.option(duration, { nil: undefined }),
  }),
  fc.record({
    kind: fc.constant("race" as const),
    output: fc.option(typeDraft, { nil: undefined }),
    errors: fc.uniqueArray(fc.nat({ max: 3 }), { maxLength: 2 }),
  }),
  fc.record({ kind: fc.constant("start" as const), owner: fc.nat(), workflow: fc.nat() }),
)

const workflowDraft = fc.record({
  name: tail,
  description: fc.option(description, { nil: undefined }),
  input: fc.option(objectDraft, { nil: undefined }),
  output: fc.option(typeDraft, { nil: undefined }),
  errors: fc.array(fc.option(objectDraft, { nil: undefined }), { maxLength: 4 }),
  markers: fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9.-]{0,20}$/), { maxLength: 3 }),
  steps: fc.array(fc.tuple(fc.stringMatching(/^[a-z][a-zA-Z0-9._-]{0,30}$/), stepDraft), {
    minLength: 1,
    maxLength: 6,
  }),
})

const ownerDraft = fc.record({
  name: tail,
  description: fc.option(description, { nil: undefined }),
  types: fc.array(fc.tuple(tail, typeDraft), { maxLength: 4 }),
  events: fc.array(fc.tuple(tail, objectDraft), { minLength: 1, maxLength: 3 }),
  workflows: fc.array(workflowDraft, { minLength: 1, maxLength: 3 }),
})

type OwnerDraft = typeof ownerDraft extends fc.Arbitrary<infer T> ? T : never

/** The manifests of owners drafted at random; names are prefixed so that none clashes. */
const manifestsOf = (owners: readonly OwnerDraft[]): { file: string; text: string }[] => {
  const ownerNames = owners.map((owner, o) => `O${o}${owner.name}`)
  const workflowNames = owners.map((owner) =>
    owner.workflows.map((w, index) => `w${index}${w.name}`),
  )
  return owners.map((owner, o) => {
    const typeNames = owner.types.map(([name], index) => `T${index}${name}`)
    const types: Record<string, unknown> = {}
    owner.types.forEach(([, draft], index) => {
      // a named type may refer only to the ones declared before it: no cycles
      types[typeNames[index]!] = typeYaml(draft, typeNames.slice(0, index))
    })
    const eventNames = owner.events.map(([name], index) => `E${index}${name}`)
    const events = Object.fromEntries(
      owner.events.map(([, draft], index) => [eventNames[index]!, typeYaml(draft, typeNames)]),
    )
    const workflows: Record<string, unknown> = {}
    owner.workflows.forEach((workflow, w) => {
      const errorNames = workflow.errors.map((_, index) => `Err${w}x${index}`)
      const steps: Record<string, unknown> = {}
      workflow.steps.forEach(([name, step], s) => {
        const stepName = `s${s}${name}`
        const errorsOf = (picks: readonly number[]) =>
          errorNames.length === 0
            ? []
            : [...new Set(picks.map((pick) => errorNames[pick % errorNames.length]!))]
        switch (step.kind) {
          case "activity":
            steps[stepName] = {
              kind: "activity",
              ...(step.description === undefined ? {} : { description: step.description }),
              ...(step.input === undefined ? {} : { input: typeYaml(step.input, typeNames) }),
              ...(step.output === undefined ? {} : { output: typeYaml(step.output, typeNames) }),
              ...(errorsOf(step.errors).length === 0 ? {} : { errors: errorsOf(step.errors) }),
              ...(step.retry === undefined ? {} : { retry: step.retry }),
            }
            break
          case "sleep":
            steps[stepName] = {
              kind: "sleep",
              ...(step.duration === undefined ? {} : { duration: step.duration }),
            }
            break
          case "wait":
            steps[stepName] = {
              kind: "wait",
              event: eventNames[step.event % eventNames.length],
              ...(step.timeout === undefined ? {} : { timeout: step.timeout }),
            }
            break
          case "race":
            steps[stepName] = {
              kind: "race",
              ...(step.output === undefined ? {} : { output: typeYaml(step.output, typeNames) }),
              ...(errorsOf(step.errors).length === 0 ? {} : { errors: errorsOf(step.errors) }),
            }
            break
          case "start": {
            const target = step.owner % owners.length
            const names = workflowNames[target]!
            steps[stepName] = {
              kind: "start",
              owner: ownerNames[target],
              workflow: names[step.workflow % names.length],
            }
          }
        }
      })
      workflows[workflowNames[o]![w]!] = {
        ...(workflow.description === undefined ? {} : { description: workflow.description }),
        ...(workflow.input === undefined ? {} : { input: typeYaml(workflow.input, typeNames) }),
        ...(workflow.output === undefined ? {} : { output: typeYaml(workflow.output, typeNames) }),
        ...(errorNames.length === 0
          ? {}
          : {
              errors: Object.fromEntries(
                workflow.errors.map((draft, index) => [
                  errorNames[index]!,
                  draft === undefined ? {} : typeYaml(draft, typeNames),
                ]),
              ),
            }),
        ...(workflow.markers.length === 0
          ? {}
          : {
              versions: Object.fromEntries(
                workflow.markers.map((marker, index) => [marker, { min: 0, current: index + 1 }]),
              ),
            }),
        steps,
      }
    })
    const manifest = {
      akter: 1,
      owner: ownerNames[o],
      ...(owner.description === undefined ? {} : { description: owner.description }),
      ...(owner.types.length === 0 ? {} : { types }),
      events,
      workflows,
    }
    return { file: `owner${o}.yaml`, text: stringify(manifest) }
  })
}

describe("generated TypeScript is laid out exactly as prettier formats it", () => {
  it("for the example manifests", async () => {
    const dir = join(REPO, "manifests")
    const sources = readdirSync(dir)
      .filter((file) => file.endsWith(".yaml"))
      .map((file) => ({ file, text: readFileSync(join(dir, file), "utf8") }))
    await expectPrettierLayout(modulesOf(sources))
  })

  it("for the benchmark's synthetic project", async () => {
    await expectPrettierLayout(modulesOf(syntheticManifests(2)))
  })

  it("for random manifests: every construct, nested, with names and strings short and long", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(ownerDraft, { minLength: 1, maxLength: 2 }), async (owners) => {
        await expectPrettierLayout(modulesOf(manifestsOf(owners)))
      }),
      { numRuns: Number(process.env.LAYOUT_RUNS ?? 60) },
    )
  })
})
