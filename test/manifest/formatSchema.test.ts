import { readFile } from "node:fs/promises"
import { describe, expect, it } from "vitest"
import { parse } from "yaml"
import {
  manifestFormatJsonSchema,
  manifestFormatWithTypes,
} from "../../codegen/manifest/formatSchema.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { validateJsonSchema } from "./jsonSchemaSubset.js"

const FIXTURES = "test/fixtures/manifests/invalid"
const EXAMPLES = ["manifests/order.yaml", "manifests/subscription.yaml", "manifests/user.yaml"]
const schema = manifestFormatJsonSchema() as Record<string, unknown>
const plainOf = async (file: string): Promise<unknown> => parse(await readFile(file, "utf8"))

/** Fixtures whose only problem is one of format, which an editor can show from the schema alone. */
const FORMAT_ERRORS = [
  "unknown-top-level-key.yaml",
  "unsupported-format.yaml",
  "missing-owner.yaml",
  "invalid-owner-name.yaml",
  "no-workflows.yaml",
  "missing-steps.yaml",
  "no-steps.yaml",
  "invalid-workflow-name.yaml",
  "invalid-step-name.yaml",
  "missing-kind.yaml",
  "unknown-step-kind.yaml",
  "step-key-of-another-kind.yaml",
  "unknown-workflow-key.yaml",
  "unknown-retry-key.yaml",
  "wrong-type-description.yaml",
  "wrong-type-step.yaml",
  "wrong-type-error-list.yaml",
  "invalid-type-name.yaml",
  "invalid-type-string.yaml",
  "enum-empty.yaml",
  "enum-non-string.yaml",
  "one-of-single-variant.yaml",
  "construct-key-as-field.yaml",
  "construct-with-typo.yaml",
  "two-construct-keys.yaml",
  "invalid-field-name.yaml",
  "type-is-a-list.yaml",
  "unquoted-null-type.yaml",
  "invalid-error-name.yaml",
  "wait-without-event.yaml",
  "marker-current-zero.yaml",
  "marker-not-integer.yaml",
  "invalid-marker-name.yaml",
  "duration-written-out.yaml",
  "duration-number.yaml",
  "retry-zero-attempts.yaml",
  "retry-factor-below-one.yaml",
  "retry-without-attempts.yaml",
  "start-without-workflow.yaml",
]

describe("the manifest format's JSON Schema", () => {
  it("is draft-07 with the type language as a recursive definition", () => {
    expect(schema["$schema"]).toBe("http://json-schema.org/draft-07/schema#")
    expect(Object.keys(schema["definitions"] as object)).toEqual(["TypeExpression"])
    expect(schema["required"]).toEqual(["akter", "owner", "workflows"])
    expect(schema["additionalProperties"]).toBe(false)
  })

  it("accepts the three example manifests", async () => {
    for (const file of EXAMPLES)
      expect(validateJsonSchema(schema, await plainOf(file)), file).toEqual([])
  })

  it("accepts a manifest with every form of the type language", () => {
    const text = `akter: 1
owner: Forms
types:
  Sku: { type: string, description: An article. }
  Grid: "Sku[][]"
  Lines: { array: { sku: Sku, qty?: integer }, description: Order lines }
  Stock: { record: integer }
  Id: { oneOf: ["null", string, { enum: [a, b] }] }
  Box: { object: { type: string, description?: string } }
  Empty: {}
  Described: { description: An object, note: json }
workflows:
  w:
    steps:
      s: { kind: activity, input: { lines: Lines }, output: Grid, retry: { attempts: 2, initial: 5s, factor: 1.5, max: 1h } }
`
    expect(loadManifestSources([{ file: "forms.yaml", text }]).diagnostics).toEqual([])
    expect(validateJsonSchema(schema, parse(text))).toEqual([])
  })

  it("refuses every fixture whose error is one of format", async () => {
    for (const name of FORMAT_ERRORS) {
      expect(
        validateJsonSchema(schema, await plainOf(`${FIXTURES}/${name}`)).length,
        name,
      ).toBeGreaterThan(0)
    }
  })

  it("agrees with the full zod format it is derived from", async () => {
    for (const file of EXAMPLES)
      expect(manifestFormatWithTypes.safeParse(await plainOf(file)).success, file).toBe(true)
    for (const name of FORMAT_ERRORS) {
      expect(
        manifestFormatWithTypes.safeParse(await plainOf(`${FIXTURES}/${name}`)).success,
        name,
      ).toBe(false)
    }
  })

  it("names the step kinds with a constant each, so editors complete them", () => {
    const text = JSON.stringify(schema)
    for (const kind of ["activity", "sleep", "wait", "race", "start"])
      expect(text).toContain(`"const":"${kind}"`)
  })
})
