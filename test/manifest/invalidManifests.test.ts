import { readFile } from "node:fs/promises"
import { describe, expect, it } from "vitest"
import { formatDiagnostic } from "../../codegen/manifest/diagnostics.js"
import { loadManifests, loadManifestSources } from "../../codegen/manifest/loadManifests.js"

const FIXTURES = "test/fixtures/manifests/invalid"

type Expected = readonly [rule: string, line: number, column: number]

/**
 * Each invalid manifest and every diagnostic it must produce, as [rule, line, column]. Positions are
 * counted by hand from the fixture text: the offending key for unknown or misplaced keys, the value
 * for wrong values, the entry's key for something missing inside it.
 */
const SINGLE_FILES: Record<string, readonly Expected[]> = {
  "yaml-syntax.yaml": [["yaml-syntax", 7, 1]],
  "invalid-cron.yaml": [["invalid-cron", 10, 11]],
  "duplicate-key.yaml": [["duplicate-key", 7, 7]],
  "duplicate-key-and-more.yaml": [
    ["duplicate-key", 3, 1],
    ["unknown-event", 7, 34],
  ],
  "multiple-documents.yaml": [["multiple-documents", 7, 1]],
  "unsupported-tag.yaml": [["unsupported-tag", 2, 8]],
  "empty-manifest.yaml": [["empty-manifest", 1, 1]],
  "not-a-mapping.yaml": [["wrong-type", 1, 1]],
  "missing-akter.yaml": [["missing-key", 1, 1]],
  "unsupported-format.yaml": [["unsupported-format", 1, 8]],
  "missing-owner.yaml": [["missing-key", 1, 1]],
  "invalid-owner-name.yaml": [["invalid-name", 2, 8]],
  "reserved-owner-name.yaml": [["reserved-name", 2, 8]],
  "unknown-top-level-key.yaml": [["unknown-key", 3, 1]],
  "no-workflows.yaml": [["no-workflows", 3, 1]],
  "missing-workflows.yaml": [["missing-key", 1, 1]],
  "missing-steps.yaml": [["missing-key", 4, 3]],
  "no-steps.yaml": [["no-steps", 5, 5]],
  "invalid-workflow-name.yaml": [["invalid-name", 4, 3]],
  "reserved-workflow-name.yaml": [["reserved-name", 4, 3]],
  "reserved-step-name.yaml": [["reserved-name", 7, 7]],
  "reserved-dollar-step-name.yaml": [["reserved-name", 6, 7]],
  "invalid-step-name.yaml": [["invalid-name", 6, 7]],
  "missing-kind.yaml": [["missing-key", 6, 7]],
  "unknown-step-kind.yaml": [["unknown-step-kind", 6, 20]],
  "step-key-of-another-kind.yaml": [["unknown-key", 8, 9]],
  "unknown-workflow-key.yaml": [["unknown-key", 5, 5]],
  "unknown-retry-key.yaml": [["unknown-key", 8, 31]],
  "wrong-type-description.yaml": [["wrong-type", 3, 14]],
  "wrong-type-step.yaml": [["wrong-type", 6, 12]],
  "wrong-type-error-list.yaml": [["wrong-type", 8, 38]],
  "invalid-type-name.yaml": [["invalid-name", 4, 3]],
  "unresolved-type.yaml": [["unresolved-type", 7, 21]],
  "unresolved-scalar.yaml": [["unresolved-type", 8, 28]],
  "recursive-type.yaml": [["recursive-type", 4, 37]],
  "invalid-type-string.yaml": [["invalid-type", 8, 26]],
  "enum-empty.yaml": [["invalid-type", 4, 21]],
  "enum-duplicate-value.yaml": [["invalid-type", 4, 32]],
  "enum-non-string.yaml": [["wrong-type", 4, 25]],
  "one-of-single-variant.yaml": [["invalid-type", 4, 16]],
  "construct-key-as-field.yaml": [["unknown-key", 6, 5]],
  "construct-with-typo.yaml": [["unknown-key", 4, 33]],
  "two-construct-keys.yaml": [["invalid-type", 4, 23]],
  "invalid-field-name.yaml": [["invalid-name", 5, 14]],
  "reserved-field-name.yaml": [["reserved-name", 5, 14]],
  "duplicate-field.yaml": [["duplicate-key", 7, 7]],
  "description-not-a-string.yaml": [["wrong-type", 5, 18]],
  "type-is-a-list.yaml": [["wrong-type", 5, 13]],
  "unquoted-null-type.yaml": [["wrong-type", 5, 13]],
  "empty-type.yaml": [["wrong-type", 4, 3]],
  "event-payload-not-object.yaml": [["not-an-object", 6, 9]],
  "workflow-input-not-object.yaml": [["not-an-object", 5, 12]],
  "step-input-not-object.yaml": [["not-an-object", 6, 37]],
  "error-payload-not-object.yaml": [["not-an-object", 6, 17]],
  "invalid-error-name.yaml": [["invalid-name", 6, 7]],
  "unknown-event.yaml": [["unknown-event", 8, 34]],
  "wait-without-event.yaml": [["missing-key", 8, 7]],
  "undeclared-error.yaml": [["undeclared-error", 10, 28]],
  "key-not-a-field.yaml": [["invalid-key-field", 6, 10]],
  "key-optional-field.yaml": [["invalid-key-field", 6, 10]],
  "key-not-a-string.yaml": [["invalid-key-field", 8, 10]],
  "key-without-input.yaml": [["invalid-key-field", 5, 10]],
  "concurrency-key-not-a-field.yaml": [["invalid-concurrency-key", 6, 25]],
  "concurrency-key-optional-field.yaml": [["invalid-concurrency-key", 6, 25]],
  "concurrency-key-not-groupable.yaml": [["invalid-concurrency-key", 6, 25]],
  "concurrency-key-through-scalar.yaml": [["invalid-concurrency-key", 6, 25]],
  "concurrency-key-without-input.yaml": [["invalid-concurrency-key", 5, 25]],
  "concurrency-key-malformed.yaml": [["invalid-concurrency-key", 6, 25]],
  "concurrency-limit-zero.yaml": [["invalid-concurrency", 6, 36]],
  "marker-min-above-current.yaml": [["invalid-marker-range", 6, 26]],
  "marker-current-zero.yaml": [["invalid-marker-range", 6, 38]],
  "marker-not-integer.yaml": [["invalid-marker-range", 7, 14]],
  "invalid-marker-name.yaml": [["invalid-name", 6, 7]],
  "duration-written-out.yaml": [["invalid-duration", 6, 41]],
  "duration-zero.yaml": [["invalid-duration", 6, 41]],
  "duration-too-long.yaml": [["invalid-duration", 6, 41]],
  "duration-number.yaml": [["invalid-duration", 8, 49]],
  "deadline-written-out.yaml": [["invalid-duration", 5, 15]],
  "deadline-too-long.yaml": [["invalid-duration", 5, 15]],
  "retry-zero-attempts.yaml": [["invalid-retry", 8, 28]],
  "retry-factor-below-one.yaml": [["invalid-retry", 8, 39]],
  "retry-max-below-initial.yaml": [["invalid-retry", 11, 16]],
  "retry-without-attempts.yaml": [["missing-key", 8, 9]],
  "retry-on-undeclared-error.yaml": [["undeclared-retry-error", 12, 41]],
  "retry-on-unknown-error.yaml": [
    ["duplicate-key", 13, 31],
    ["undeclared-retry-error", 13, 41],
  ],
  "error-conflict.yaml": [["error-conflict", 11, 7]],
  "name-collision-type-and-input.yaml": [["name-collision", 9, 3]],
  "name-collision-event-and-type.yaml": [["name-collision", 4, 3]],
  "name-collision-step-names.yaml": [
    ["name-collision", 7, 7],
    ["name-collision", 7, 7],
  ],
  "name-collision-owner-client.yaml": [["name-collision", 4, 3]],
  "start-without-workflow.yaml": [["missing-key", 6, 7]],
  "start-unknown-workflow.yaml": [["unknown-workflow", 6, 38]],
  "start-unknown-owner.yaml": [["unknown-owner", 6, 35]],
  "billion-laughs.yaml": [["alias-limit", 7, 56]],
  "alias-to-enclosing-node.yaml": [["alias-limit", 4, 28]],
  "type-nested-1000-deep.yaml": [["type-too-deep", 5, 172]],
  "type-too-deep-through-refs.yaml": [["type-too-deep", 28, 16]],
}

/** Folders of manifests checked together, for the problems only the whole set shows. */
const FOLDERS: Record<string, readonly (readonly [file: string, ...Expected])[]> = {
  "duplicate-owner": [["b-shop-again.yaml", "duplicate-owner", 3, 8]],
  "start-across-owners": [
    ["shop.yaml", "unknown-workflow", 6, 59],
    ["shop.yaml", "unknown-owner", 7, 35],
  ],
}

const loadFile = async (name: string) => {
  const file = `${FIXTURES}/${name}`
  return loadManifestSources([{ file, text: await readFile(file, "utf8") }])
}

describe("invalid manifests", () => {
  it("number at least forty", () => {
    expect(Object.keys(SINGLE_FILES).length + Object.keys(FOLDERS).length).toBeGreaterThanOrEqual(
      40,
    )
  })

  for (const [name, expected] of Object.entries(SINGLE_FILES)) {
    it(`${name} is refused with ${expected.map(([rule, line, column]) => `${rule} at ${line}:${column}`).join(", ")}`, async () => {
      const { manifests, diagnostics } = await loadFile(name)
      expect(manifests).toEqual([])
      expect(diagnostics.map((d) => [d.rule, d.line, d.column])).toEqual(expected)
      for (const d of diagnostics) {
        expect(d.file).toBe(`${FIXTURES}/${name}`)
        expect(d.severity).toBe("error")
        expect(d.message.length).toBeGreaterThan(0)
      }
    })
  }

  for (const [folder, expected] of Object.entries(FOLDERS)) {
    it(`the manifests of ${folder}/ are refused together with ${expected.map(([, rule]) => rule).join(", ")}`, async () => {
      const { manifests, diagnostics } = await loadManifests({ dir: `${FIXTURES}/${folder}` })
      expect(manifests).toEqual([])
      expect(diagnostics.map((d) => [d.file, d.rule, d.line, d.column])).toEqual(
        expected.map(([file, ...rest]) => [`${FIXTURES}/${folder}/${file}`, ...rest]),
      )
    })
  }
})

describe("diagnostic texts", () => {
  const textOf = async (name: string) =>
    (await loadFile(name)).diagnostics.map((d) => formatDiagnostic(d)).join("\n")

  it("an unknown key names its place and suggests the closest allowed key", async () => {
    expect(await textOf("unknown-workflow-key.yaml")).toBe(
      `${FIXTURES}/unknown-workflow-key.yaml:5:5: error[unknown-key] unknown key "ouput" in workflow "order"\n` +
        '  hint: did you mean "output"?',
    )
  })

  it("a key of another step kind says which kind it belongs to", async () => {
    expect(await textOf("step-key-of-another-kind.yaml")).toContain(
      'unknown key "event" in activity step "pay"\n  hint: "event" belongs to steps of kind wait',
    )
  })

  it("a field named like a construct key gets the long-form hint", async () => {
    expect(await textOf("construct-key-as-field.yaml")).toContain(
      "write { object: { type: …, weight: … } }",
    )
  })

  it("a misspelt scalar, event and step kind get did-you-mean hints", async () => {
    expect(await textOf("unresolved-scalar.yaml")).toContain(
      'unknown type "strng"\n  hint: did you mean "string"?',
    )
    expect(await textOf("unknown-event.yaml")).toContain(
      'event "Payed" is not declared\n  hint: did you mean "Paid"?',
    )
    expect(await textOf("unknown-step-kind.yaml")).toContain(
      '"activty" is not a step kind\n  hint: did you mean "activity"?',
    )
  })

  it("a retried error the step does not list is named with the errors it does list", async () => {
    expect(await textOf("retry-on-undeclared-error.yaml")).toBe(
      `${FIXTURES}/retry-on-undeclared-error.yaml:12:41: error[undeclared-retry-error] retryOn names "Expired", which activity "pay" does not list under errors:\n` +
        "  hint: retryOn takes errors the step lists (Declined); add it to the step's errors:, or remove it",
    )
  })

  it("a bad duration shows the form a duration takes", async () => {
    expect(await textOf("duration-written-out.yaml")).toContain(
      "hint: write an integer followed by a unit: ms, s, m, h or d",
    )
  })

  it("a diagnostic carries the manifest path of the offending node", async () => {
    const { diagnostics } = await loadFile("retry-max-below-initial.yaml")
    expect(diagnostics[0]!.path).toBe("workflows.order.steps.pay.retry.max")
  })

  it("the recursive-type error names the cycle", async () => {
    expect(await textOf("recursive-type.yaml")).toContain(
      'type "Category" refers to itself through Parent → Category',
    )
  })
})
