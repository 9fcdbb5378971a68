import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import path from "node:path"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { loadManifests, loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import type { OwnerManifest } from "../../runtime/model/manifest.js"

const FIXTURES = "test/fixtures/manifests/invalid"

const loadText = (text: string, file = "manifests/test.yaml") =>
  loadManifestSources([{ file, text }])

const onlyManifest = (text: string): OwnerManifest => {
  const { manifests, diagnostics } = loadText(text)
  expect(diagnostics).toEqual([])
  return manifests[0]!.manifest
}

const elapsedMs = async <T>(run: () => Promise<T> | T): Promise<[T, number]> => {
  const started = performance.now()
  const result = await run()
  return [result, performance.now() - started]
}

describe("loading the example manifests", () => {
  it("gives the order model with refs kept, durations in ms and retry defaults filled", async () => {
    const { manifests } = await loadManifests({ dir: "manifests" })
    const order = manifests.find((m) => m.manifest.owner === "Order")!.manifest
    const fulfill = order.workflows["fulfill"]!
    expect(order.format).toBe(1)
    expect(Object.keys(order.types)).toEqual(["Money", "Sku"])
    expect(order.types["Sku"]).toEqual({ kind: "string", description: "A stock keeping unit." })
    expect(order.types["Money"]).toEqual({
      kind: "object",
      description: "An amount in minor units (cents).",
      fields: {
        amount: { type: { kind: "integer" }, optional: false },
        currency: { type: { kind: "enum", values: ["USD", "EUR"] }, optional: false },
      },
    })
    expect(order.events["PaymentConfirmed"]!.payload).toEqual({
      kind: "object",
      fields: {
        paymentId: { type: { kind: "string" }, optional: false },
        amount: { type: { kind: "ref", name: "Money" }, optional: false },
      },
    })
    expect(fulfill.key).toBe("orderId")
    expect(fulfill.input).toMatchObject({
      kind: "object",
      fields: {
        skus: { type: { kind: "array", items: { kind: "ref", name: "Sku" } }, optional: false },
        express: { type: { kind: "boolean" }, optional: true },
      },
    })
    expect(fulfill.errors["PaymentMissing"]).toEqual({ kind: "object", fields: {} })
    expect(fulfill.versions).toEqual({ fraudCheck: { min: 0, current: 1 } })
    expect(Object.keys(fulfill.steps)).toEqual([
      "reserve",
      "release",
      "screen",
      "coolOff",
      "paid",
      "ship",
    ])
    expect(fulfill.steps["reserve"]).toMatchObject({
      kind: "activity",
      errors: ["OutOfStock"],
      retry: { attempts: 5, initialMs: 1_000, factor: 2, maxMs: 60_000 },
      timeoutMs: null,
    })
    // ship: { attempts: 3, initial: 500ms } — factor 2 and max max(500ms, 1m) by default
    expect(fulfill.steps["ship"]).toMatchObject({
      retry: { attempts: 3, initialMs: 500, factor: 2, maxMs: 60_000 },
    })
    expect(fulfill.steps["screen"]).toMatchObject({ kind: "activity", input: null, retry: null })
    expect(fulfill.steps["release"]).toMatchObject({
      output: null,
      description: expect.stringContaining("Compensation"),
    })
    expect(fulfill.steps["coolOff"]).toEqual({ kind: "sleep", durationMs: 10 * 60_000 })
    expect(fulfill.steps["paid"]).toEqual({
      kind: "wait",
      event: "PaymentConfirmed",
      timeoutMs: 86_400_000,
    })
  })

  it("gives the subscription and user models, start owners filled in", async () => {
    const { manifests } = await loadManifests({ dir: "manifests" })
    const subscription = manifests.find((m) => m.manifest.owner === "Subscription")!.manifest
    const cycle = subscription.workflows["billingCycle"]!
    expect(cycle.key).toBeNull()
    expect(cycle.output?.kind).toBe("oneOf")
    expect(cycle.steps["period"]).toEqual({ kind: "sleep", durationMs: 30 * 86_400_000 })
    expect(cycle.steps["charge"]).toMatchObject({
      retry: { attempts: 4, initialMs: 3_600_000, factor: 3, maxMs: 86_400_000 },
    })
    expect(cycle.steps["next"]).toEqual({
      kind: "start",
      owner: "Subscription",
      workflow: "billingCycle",
      awaits: false,
      parentClose: "leave",
    })
    expect(subscription.events["Cancelled"]!.payload).toEqual({
      kind: "object",
      fields: { reason: { type: { kind: "string" }, optional: true } },
    })

    const user = manifests.find((m) => m.manifest.owner === "User")!.manifest
    const signUp = user.workflows["signUp"]!
    expect(user.types).toEqual({})
    expect(signUp.versions).toEqual({})
    expect(signUp.steps["verified"]).toEqual({
      kind: "wait",
      event: "EmailVerified",
      timeoutMs: null,
    })
    expect(signUp.steps["verification"]).toMatchObject({ kind: "race", errors: [] })
    expect(signUp.steps["startBilling"]).toEqual({
      kind: "start",
      owner: "Subscription",
      workflow: "billingCycle",
      awaits: false,
      parentClose: "leave",
    })
  })

  it("locates steps, markers and events at their keys", async () => {
    const { manifests } = await loadManifests({ dir: "manifests" })
    const order = manifests.find((m) => m.manifest.owner === "Order")!
    const text = (await readFile("manifests/order.yaml", "utf8")).split("\n")
    const keyAt = (pos: { line: number; column: number } | undefined) =>
      text[pos!.line - 1]!.slice(pos!.column - 1)
    expect(keyAt(order.positions.locate(["workflows", "fulfill", "steps", "reserve"]))).toBe(
      "reserve:",
    )
    expect(
      keyAt(order.positions.locate(["workflows", "fulfill", "versions", "fraudCheck"])),
    ).toMatch(/^fraudCheck: /)
    expect(keyAt(order.positions.locate(["events", "PaymentConfirmed"]))).toMatch(
      /^PaymentConfirmed: /,
    )
    expect(
      keyAt(order.positions.locate(["workflows", "fulfill", "steps", "reserve", "errors", 0])),
    ).toMatch(/^OutOfStock\]/)
    expect(keyAt(order.positions.locateValue(["workflows", "fulfill", "key"]))).toBe("orderId")
    expect(order.positions.locate(["workflows", "fulfill", "steps", "nope"])).toBeUndefined()
  })
})

describe("the type language", () => {
  const withTypes = (types: string) =>
    `akter: 1\nowner: T\ntypes:\n${types}\nworkflows:\n  w:\n    steps:\n      s: { kind: activity }\n`

  it("the long object form allows fields named like construct keys", () => {
    const manifest = onlyManifest(
      withTypes("  Box: { object: { type: string, description?: string, enum: integer } }"),
    )
    expect(manifest.types["Box"]).toEqual({
      kind: "object",
      fields: {
        type: { type: { kind: "string" }, optional: false },
        description: { type: { kind: "string" }, optional: true },
        enum: { type: { kind: "integer" }, optional: false },
      },
    })
  })

  it("arrays, records, unions and described types parse into their nodes", () => {
    const manifest = onlyManifest(
      withTypes(
        [
          "  Sku: string",
          '  Grid: "Sku[][]"',
          "  Lines: { array: { sku: Sku, qty: integer }, description: Order lines }",
          "  Stock: { record: integer }",
          "  Id: { oneOf: [string, integer] }",
          "  Note: { text: { type: string, description: The note's text } }",
          "  Anything: json",
          "  Nothing: {}",
        ].join("\n"),
      ),
    )
    expect(manifest.types["Grid"]).toEqual({
      kind: "array",
      items: { kind: "array", items: { kind: "ref", name: "Sku" } },
    })
    expect(manifest.types["Lines"]).toEqual({
      kind: "array",
      description: "Order lines",
      items: {
        kind: "object",
        fields: {
          sku: { type: { kind: "ref", name: "Sku" }, optional: false },
          qty: { type: { kind: "integer" }, optional: false },
        },
      },
    })
    expect(manifest.types["Stock"]).toEqual({ kind: "record", values: { kind: "integer" } })
    expect(manifest.types["Id"]).toEqual({
      kind: "oneOf",
      variants: [{ kind: "string" }, { kind: "integer" }],
    })
    expect(manifest.types["Note"]).toEqual({
      kind: "object",
      fields: {
        text: {
          type: { kind: "string", description: "The note's text" },
          optional: false,
          description: "The note's text",
        },
      },
    })
    expect(manifest.types["Anything"]).toEqual({ kind: "json" })
    expect(manifest.types["Nothing"]).toEqual({ kind: "object", fields: {} })
  })

  it('quoted "null" is the null type and keys like null: are field names', () => {
    const manifest = onlyManifest(
      withTypes('  Maybe: { oneOf: ["null", string] }\n  Odd: { null: string, true: boolean }'),
    )
    expect(manifest.types["Maybe"]).toEqual({
      kind: "oneOf",
      variants: [{ kind: "null" }, { kind: "string" }],
    })
    expect(Object.keys((manifest.types["Odd"] as { fields: object }).fields)).toEqual([
      "null",
      "true",
    ])
  })

  it("a field named __proto__ is an ordinary own field", () => {
    const manifest = onlyManifest(withTypes("  Odd: { __proto__: string }"))
    const fields = (manifest.types["Odd"] as { fields: Record<string, unknown> }).fields
    expect(Object.hasOwn(fields, "__proto__")).toBe(true)
    expect(Object.getPrototypeOf(fields)).toBe(Object.prototype)
  })

  it("anchors and aliases within the budget are followed", () => {
    const manifest = onlyManifest(withTypes("  A: &money { amount: integer }\n  B: *money"))
    expect(manifest.types["B"]).toEqual(manifest.types["A"])
  })

  it("a type 32 levels deep is accepted and 33 levels are refused at the 33rd", () => {
    const nested = (levels: number) =>
      "{ a: ".repeat(levels - 1) + "string" + " }".repeat(levels - 1)
    expect(loadText(withTypes(`  Deep: ${nested(32)}`)).diagnostics).toEqual([])
    const { diagnostics } = loadText(withTypes(`  Deep: ${nested(33)}`))
    expect(diagnostics.map((d) => [d.rule, d.line, d.column])).toEqual([
      ["type-too-deep", 4, 9 + 32 * 5],
    ])
    expect(diagnostics[0]!.path).toBe(`types.Deep${".a".repeat(32)}`)
  })
})

describe("hostile input", () => {
  it("the billion-laughs file is refused within a second, at the alias that exceeds the budget", async () => {
    const text = await readFile(`${FIXTURES}/billion-laughs.yaml`, "utf8")
    const [{ diagnostics }, ms] = await elapsedMs(() => loadText(text))
    expect(diagnostics.map((d) => [d.rule, d.line, d.column])).toEqual([["alias-limit", 7, 56]])
    expect(diagnostics[0]!.message).toBe("aliases in this file expand to more than 10000 nodes")
    expect(ms).toBeLessThan(1_000)
  })

  it("a type nested 1000 deep is refused at level 33 without exhausting the stack", async () => {
    const text = await readFile(`${FIXTURES}/type-nested-1000-deep.yaml`, "utf8")
    const [{ diagnostics }, ms] = await elapsedMs(() => loadText(text))
    expect(diagnostics.map((d) => [d.rule, d.line, d.column, d.message])).toEqual([
      ["type-too-deep", 5, 172, "this type nests deeper than 32 levels"],
    ])
    expect(ms).toBeLessThan(1_000)
  })

  it("a type nested 100 000 deep is refused at level 33 too, in linear time", async () => {
    const text =
      "akter: 1\nowner: Deep\nworkflows:\n  w:\n    steps: { s: { kind: sleep } }\n    input: " +
      "{ a: ".repeat(100_000) +
      "string" +
      " }".repeat(100_000) +
      "\n"
    const [{ diagnostics }, ms] = await elapsedMs(() => loadText(text))
    expect(diagnostics.map((d) => [d.rule, d.line, d.column])).toEqual([
      ["type-too-deep", 6, 12 + 32 * 5],
    ])
    expect(ms).toBeLessThan(5_000)
  })

  it("never throws, and yields no model with an error, on arbitrary or mangled text", async () => {
    const example = await readFile("manifests/order.yaml", "utf8")
    const mangled = fc
      .tuple(fc.nat({ max: example.length }), fc.nat({ max: 40 }), fc.string({ maxLength: 8 }))
      .map(([at, cut, insert]) => example.slice(0, at) + insert + example.slice(at + cut))
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 200 }), mangled), (text) => {
        const { manifests, diagnostics } = loadManifestSources([
          { file: "manifests/order.yaml", text },
          {
            file: "manifests/subscription.yaml",
            text: "akter: 1\nowner: Subscription\nworkflows: { billingCycle: { steps: { s: { kind: sleep } } } }\n",
          },
        ])
        const failed = diagnostics.some((d) => d.severity === "error")
        expect(manifests.length === 0).toBe(failed)
        for (const d of diagnostics) {
          expect(d.line).toBeGreaterThanOrEqual(1)
          expect(d.column).toBeGreaterThanOrEqual(1)
          expect(d.rule).toMatch(/^[a-z]+(-[a-z]+)*$/)
        }
      }),
      { numRuns: 300 },
    )
  })
})

describe("folders", () => {
  it("every problem of every file is reported at once, in file and line order", async () => {
    const dir = `${FIXTURES}/all-problems-at-once`
    const { manifests, diagnostics } = await loadManifests({ dir })
    expect(manifests).toEqual([])
    expect(
      diagnostics.map((d) => [d.file.slice(dir.length + 1), d.rule, d.line, d.column]),
    ).toEqual([
      ["one.yaml", "unresolved-type", 4, 19],
      ["one.yaml", "invalid-retry", 8, 49],
      ["one.yaml", "unknown-event", 9, 34],
      ["three.yml", "duplicate-key", 7, 7],
      ["two.yaml", "invalid-key-field", 5, 10],
      ["two.yaml", "invalid-duration", 7, 38],
    ])
  })

  it("a missing folder is a diagnostic, not an exception", async () => {
    const { manifests, diagnostics } = await loadManifests({ dir: "no/such/folder" })
    expect(manifests).toEqual([])
    expect(diagnostics).toEqual([
      expect.objectContaining({
        file: "no/such/folder",
        rule: "manifest-folder-missing",
        line: 1,
        column: 1,
        severity: "error",
      }),
    ])
  })

  it("reads only *.yaml and *.yml, relative to the given root, and warns about an empty folder", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "akter-manifests-"))
    try {
      const { diagnostics: empty } = await loadManifests({ dir: "manifests", root: root }).then(
        async (first) => {
          expect(first.diagnostics[0]?.rule).toBe("manifest-folder-missing")
          await import("node:fs/promises").then((fs) => fs.mkdir(path.join(root, "manifests")))
          return loadManifests({ dir: "manifests", root })
        },
      )
      expect(empty.map((d) => [d.rule, d.severity])).toEqual([["no-manifests", "warning"]])
      await writeFile(path.join(root, "manifests", "notes.txt"), "not a manifest")
      await writeFile(
        path.join(root, "manifests", "shop.yml"),
        "akter: 1\nowner: Shop\nworkflows: { order: { steps: { pay: { kind: activity } } } }\n",
      )
      const { manifests, diagnostics } = await loadManifests({ dir: "manifests", root })
      expect(diagnostics).toEqual([])
      expect(manifests.map((m) => m.file)).toEqual(["manifests/shop.yml"])
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })
})
