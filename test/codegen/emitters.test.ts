import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { emitProject } from "../../codegen/emit/emitProject.js"
import { typeJsonSchema } from "../../codegen/emit/jsonSchema.js"
import { printDoc, typeDoc, valueDoc } from "../../codegen/emit/typeScriptLayout.js"
import { typeScriptType } from "../../codegen/emit/typeScriptType.js"
import { zodSchema } from "../../codegen/emit/zodSchema.js"
import { loadManifests, loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { canonicalOwner, ownerHash, workflowHashes } from "../../runtime/model/canonicalManifest.js"
import type { TypeNode } from "../../runtime/model/typeModel.js"
import { registrations } from "../../generated/index.js"
import { FulfillInputSchema, OutOfStock, PaymentMissing } from "../../generated/order/types.js"
import { BillingCycleInputSchema } from "../../generated/subscription/types.js"
import {
  array,
  boolean,
  enumOf,
  exampleManifests,
  integer,
  number,
  object,
  optional,
  ref,
  string,
} from "./exampleModels.js"
import { createTempProject, type TempProject } from "./tempProject.js"
import { errorsUnder, REPO, typeCheck } from "./typeCheck.js"

const projects: TempProject[] = []
afterEach(() => {
  for (const project of projects.splice(0)) project.remove()
})

describe("each construct of the type language", () => {
  const described: TypeNode = { kind: "string", description: "Where it ships." }
  const cases: readonly [string, TypeNode, string, string, unknown][] = [
    ["string", string, "string", "z.string()", { type: "string" }],
    ["integer", integer, "number", "z.int()", { type: "integer" }],
    ["number", number, "number", "z.number()", { type: "number" }],
    ["boolean", boolean, "boolean", "z.boolean()", { type: "boolean" }],
    ["null", { kind: "null" }, "null", "z.null()", { type: "null" }],
    ["json", { kind: "json" }, "Json", "z.json()", {}],
    ["a named type", ref("Sku"), "Sku", "SkuSchema", { $ref: "#/definitions/Sku" }],
    [
      "an array",
      array(ref("Sku")),
      "readonly Sku[]",
      "z.array(SkuSchema)",
      { type: "array", items: { $ref: "#/definitions/Sku" } },
    ],
    [
      "an array of a union",
      array({ kind: "oneOf", variants: [string, { kind: "null" }] }),
      "readonly (string | null)[]",
      "z.array(z.union([z.string(), z.null()]))",
      { type: "array", items: { anyOf: [{ type: "string" }, { type: "null" }] } },
    ],
    [
      "an enum",
      enumOf("USD", "EUR"),
      '"USD" | "EUR"',
      'z.enum(["USD", "EUR"])',
      { type: "string", enum: ["USD", "EUR"] },
    ],
    [
      "a oneOf",
      { kind: "oneOf", variants: [string, integer] },
      "string | number",
      "z.union([z.string(), z.int()])",
      { anyOf: [{ type: "string" }, { type: "integer" }] },
    ],
    [
      "a record",
      { kind: "record", values: number },
      "{ readonly [key: string]: number }",
      "z.record(z.string(), z.number())",
      { type: "object", additionalProperties: { type: "number" } },
    ],
    [
      "an object",
      {
        kind: "object",
        fields: {
          street: { type: described, optional: false },
          "zip-code": { type: string, optional: true },
        },
      },
      '{ /** Where it ships. */ readonly street: string; readonly "zip-code"?: string | undefined }',
      'z.strictObject({ street: z.string(), "zip-code": z.string().optional() })',
      {
        type: "object",
        properties: {
          street: { description: "Where it ships.", type: "string" },
          "zip-code": { type: "string" },
        },
        required: ["street"],
        additionalProperties: false,
      },
    ],
  ]

  it.each(cases)(
    "%s has one TypeScript type, one zod schema and one JSON Schema",
    (_, type, ts, zod, json) => {
      // printed on one line, as the code reads before it is laid out
      expect(printDoc(typeDoc(typeScriptType(type, { json: "Json" })), Infinity)).toBe(ts)
      expect(printDoc(valueDoc(zodSchema(type, "z")), Infinity)).toBe(zod)
      expect(typeJsonSchema(type)).toEqual(json)
    },
  )
})

describe("the generated types and schemas of manifests/order.yaml", () => {
  const input = {
    orderId: "order-1",
    total: { amount: 1250, currency: "EUR" },
    skus: ["sku-1", "sku-2"],
  }

  it("accept a valid input, with or without its optional field", () => {
    expect(FulfillInputSchema.parse(input)).toEqual(input)
    expect(FulfillInputSchema.parse({ ...input, express: true })).toEqual({
      ...input,
      express: true,
    })
  })

  it("refuse unknown keys, fractional integers and values outside an enum, naming the field", () => {
    const issues = (value: unknown) =>
      FulfillInputSchema.safeParse(value).error?.issues.map((issue) => [
        issue.path.join("."),
        issue.code,
      ])
    expect(issues({ ...input, gift: true })).toEqual([["", "unrecognized_keys"]])
    expect(issues({ ...input, total: { amount: 12.5, currency: "EUR" } })).toEqual([
      ["total.amount", "invalid_type"],
    ])
    expect(issues({ ...input, total: { amount: 1, currency: "GBP" } })).toEqual([
      ["total.currency", "invalid_value"],
    ])
  })

  it("declare each error once per owner as a tagged error", () => {
    const error = new OutOfStock({ sku: "sku-9" })
    expect(error._tag).toBe("OutOfStock")
    expect(error.sku).toBe("sku-9")
    expect(error).toBeInstanceOf(Error)
    expect(new PaymentMissing()._tag).toBe("PaymentMissing")
  })

  it("import effect's modules, not its index, for values: importing `effect` loads every module it has", () => {
    const generated = join(REPO, "generated")
    const valueImportsOfEffect = readdirSync(generated, { recursive: true, encoding: "utf8" })
      .filter((path) => path.endsWith(".ts"))
      .flatMap(
        (path) =>
          readFileSync(join(generated, path), "utf8").match(/^import \{[^}]*\} from "effect"$/gm) ??
          [],
      )
    expect(valueImportsOfEffect).toEqual([])
    expect(readFileSync(join(generated, "order", "types.ts"), "utf8")).toContain(
      'import { TaggedError } from "effect/Data"',
    )
  })

  it("have a JSON Schema document with a definition per type and per error", () => {
    const document = JSON.parse(
      readFileSync(join(REPO, "generated/order/schemas.json"), "utf8"),
    ) as {
      $schema: string
      definitions: Record<string, unknown>
    }
    expect(document.$schema).toBe("http://json-schema.org/draft-07/schema#")
    expect(Object.keys(document.definitions)).toEqual([
      "Money",
      "Sku",
      "PaymentConfirmed",
      "OrderCancelled",
      "FulfillInput",
      "FulfillOutput",
      "FulfillReserveInput",
      "FulfillReserveOutput",
      "FulfillReleaseInput",
      "FulfillScreenOutput",
      "FulfillShipInput",
      "FulfillShipOutput",
      "OutOfStock",
      "PaymentMissing",
    ])
    expect(document.definitions["Money"]).toEqual({
      description: "An amount in minor units (cents).",
      type: "object",
      properties: {
        amount: { type: "integer" },
        currency: { type: "string", enum: ["USD", "EUR"] },
      },
      required: ["amount", "currency"],
      additionalProperties: false,
    })
  })
})

describe("the generated registrations", () => {
  it("carry the hashes of their manifests, recomputed independently, and load through defineOwner", async () => {
    const { manifests } = await loadManifests({ dir: "manifests", root: REPO })
    expect(registrations.map((registration) => registration.owner)).toEqual([
      "Order",
      "Subscription",
      "User",
    ])
    for (const { manifest, file } of manifests) {
      const registration = registrations.find((candidate) => candidate.owner === manifest.owner)!
      const canonical = canonicalOwner(manifest)
      expect(registration.source).toBe(file)
      expect(registration.hash).toBe(ownerHash(canonical))
      for (const [name, workflow] of Object.entries(canonical.workflows)) {
        expect(registration.workflows[name]!.hashes).toEqual(workflowHashes(workflow))
      }
    }
  })

  it("carry the settings the manifest gives: key, retries, timeouts, durations and step inputs", () => {
    const [order, , user] = registrations
    const fulfill = order.workflows["fulfill"]!
    expect(fulfill.key).toBe("orderId")
    expect(fulfill.input).toBe(FulfillInputSchema)
    expect(Object.keys(fulfill.errors)).toEqual(["OutOfStock", "PaymentMissing"])
    expect(fulfill.steps["reserve"]!.retry).toEqual({
      attempts: 5,
      initialMs: 1000,
      factor: 2,
      maxMs: 60_000,
      retryOn: ["OutOfStock"],
    })
    expect(fulfill.steps["coolOff"]).toEqual({ durationMs: 600_000 })
    expect(fulfill.steps["paid"]).toEqual({ timeoutMs: 86_400_000 })
    expect(fulfill.steps["screen"]).toEqual({})
    expect(user.workflows["signUp"]!.steps["startBilling"]!.input).toBe(BillingCycleInputSchema)
  })

  it("name the registration of the owner each start step starts, across owners and within one", () => {
    const [, subscription, user] = registrations
    const starts = registrations.flatMap((registration) =>
      Object.entries(registration.workflows).flatMap(([workflow, { steps }]) =>
        Object.entries(steps)
          .filter(([, settings]) => settings.target !== undefined)
          .map(([step, settings]) => [
            `${registration.owner}.${workflow}.${step}`,
            settings.target!().owner,
          ]),
      ),
    )
    expect(starts).toEqual([
      ["Subscription.billingCycle.next", "Subscription"],
      ["User.signUp.startBilling", "Subscription"],
    ])
    expect(user.workflows["signUp"]!.steps["startBilling"]!.target!()).toBe(subscription)
    expect(subscription.workflows["billingCycle"]!.steps["next"]!.target!()).toBe(subscription)
  })
})

describe("names in generated code", () => {
  it("aliases library names a manifest also declares, quotes step names that are not identifiers, and compiles", async () => {
    const yaml = [
      "akter: 1",
      "owner: Clash",
      "types:",
      "  Data: { value: json, tags: { record: string } }",
      '  Record: { data: Data, list: "Data[]" }',
      "  TaggedError: { code: string }",
      "events:",
      "  Option: { found: Record }",
      "  Effect: { count: integer }",
      "  Duration: { seconds: integer }",
      "  Activity: { name: string }",
      "workflows:",
      "  run:",
      "    input: { data: Data }",
      "    output: { found?: Record }",
      "    errors: { Refused: { why: TaggedError } }",
      "    steps:",
      "      work: { kind: activity, input: { found: Record }, output: { data: Data } }",
      "      option: { kind: wait, event: Option, timeout: 1h }",
      "      effect: { kind: wait, event: Effect }",
      "      duration: { kind: wait, event: Duration, timeout: 1d }",
      "      activity: { kind: wait, event: Activity }",
      "      pause: { kind: sleep }",
      "      fraud-check.v2: { kind: activity, input: { score: number }, output: { ok: boolean } }",
      "      cool-off: { kind: sleep, duration: 5m }",
      "      pick: { kind: race, output: { winner: string } }",
      "",
    ].join("\n")
    const loaded = loadManifestSources([{ file: "manifests/clash.yaml", text: yaml }])
    expect(loaded.diagnostics).toEqual([])
    const files = await emitProject(loaded.manifests, { manifestsFolder: "manifests" })
    const project = createTempProject()
    projects.push(project)
    for (const file of files) project.write(`generated/${file.path}`, file.text)
    const workflows = project.read("generated/clash/workflows.ts")
    expect(workflows).toMatch(/import type \{\n  Activity as AkterActivity,\n/)
    expect(workflows).toMatch(
      /import type \{\n  Duration as EffectDuration,\n  Effect as EffectEffect,\n  Option as EffectOption,\n\} from "effect"/,
    )
    expect(workflows).toMatch(/import type \{\n  Activity,\n  Duration,\n  Effect,\n  Option,\n/)
    expect(workflows).toContain(
      "option(options?: TimedWaitOptions<Option>): EffectEffect.Effect<EffectOption.Option<Option>>",
    )
    expect(workflows).toContain(
      '"fraud-check.v2"(input: RunFraudCheckV2Input): EffectEffect.Effect<RunFraudCheckV2Output>',
    )
    expect(workflows).toContain("pause(duration: EffectDuration.Input): EffectEffect.Effect<void>")
    expect(workflows).toContain(
      '"cool-off"(duration?: EffectDuration.Input): EffectEffect.Effect<void>',
    )
    expect(workflows).toContain(
      "pick(branches: readonly EffectEffect.Effect<RunPickOutput>[]): EffectEffect.Effect<RunPickOutput>",
    )
    expect(workflows).toContain(
      'readonly "fraud-check.v2": AkterActivity<RunFraudCheckV2Input, RunFraudCheckV2Output, never>',
    )
    expect(project.read("generated/clash/registration.ts")).toContain(
      '"cool-off": { durationMs: 300_000 }',
    )
    const types = project.read("generated/clash/types.ts")
    expect(types).toContain("export type Json =")
    expect(types).toContain("readonly tags: { readonly [key: string]: string }")
    expect(types).toContain('import { TaggedError as EffectTaggedError } from "effect/Data"')
    expect(types).toContain(
      'export class Refused extends EffectTaggedError("Refused")<{ readonly why: TaggedError }> {}',
    )
    expect(
      errorsUnder(typeCheck([join(project.root, "generated/index.ts")]), project.root),
    ).toEqual([])
  })

  it("refuses what generated code cannot declare, located in the manifest", () => {
    const yaml = (owner: string, workflow: string) =>
      [
        `akter: 1`,
        `owner: ${owner}`,
        "workflows:",
        `  ${workflow}:`,
        "    steps:",
        "      work: { kind: activity }",
        "",
      ].join("\n")
    const loaded = loadManifestSources([
      { file: "manifests/a.yaml", text: yaml("Shop", "delete") },
      { file: "manifests/b.yaml", text: yaml("shop", "run") },
    ])
    expect(loaded.diagnostics).toEqual([
      {
        file: "manifests/a.yaml",
        line: 4,
        column: 3,
        rule: "reserved-name",
        severity: "error",
        message:
          '"delete" cannot name a workflow: it is a reserved word in TypeScript, so its generated builder could not be declared',
        hint: 'rename the workflow, e.g. "deleteWorkflow"',
        path: "workflows.delete",
      },
      {
        file: "manifests/b.yaml",
        line: 2,
        column: 8,
        rule: "duplicate-owner",
        severity: "error",
        message:
          'owner "shop" differs from owner "Shop" of manifests/a.yaml only in case, so their generated folders would be one on a case-insensitive file system',
        hint: "rename one of the owners",
        path: "owner",
      },
    ])
  })
})
