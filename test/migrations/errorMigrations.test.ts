/**
 * Earlier shapes of a declared error's payload, without a database: the manifest parses them from
 * the workflow's `errors:` entry (and locates a malformed one), `akter check`'s comparison reads the
 * failures a released step may have recorded through them (saying which migration covers them, or
 * that none does), the runner's verdict lists the migration by step and error, and the workflow's
 * result, which clients decode, is only warned about.
 */
import { describe, expect, it } from "vitest"
import { formatDiagnostic } from "../../codegen/manifest/diagnostics.js"
import { loadManifestSources, type LoadedManifest } from "../../codegen/manifest/loadManifests.js"
import { compareManifests } from "../../runtime/compatibility/compareManifests.js"
import { executionVerdict } from "../../runtime/compatibility/executionVerdict.js"
import { canonicalOwner, workflowHashes } from "../../runtime/model/canonicalManifest.js"
import { canonicalEarlierShapes, readerEarlierShapes } from "../../runtime/model/earlierShapes.js"

const FILE = "manifests/order.yaml"

/** An order whose `reserve` activity may fail with `OutOfStock`, declared as `errors`. */
const order = (errors: string) => `akter: 1
owner: Order
workflows:
  fulfill:
    input: { orderId: string }
    steps:
      reserve: { kind: activity, errors: [OutOfStock] }
      ship: { kind: activity }
    errors:
${errors}
`

const RELEASED = "      OutOfStock: { sku: string }"
const MIGRATED = `      OutOfStock:
        type: { item: { sku: string } }
        earlier:
          v1: { sku: string }`

const load = (text: string): LoadedManifest => {
  const result = loadManifestSources([{ file: FILE, text }])
  expect(result.diagnostics.map(formatDiagnostic)).toEqual([])
  return result.manifests[0]!
}

const compare = (next: string) => {
  const after = load(order(next))
  return compareManifests(
    canonicalOwner(load(order(RELEASED)).manifest),
    canonicalOwner(after.manifest),
    {
      earlier: canonicalEarlierShapes(after.manifest),
      released: "release 1",
      locate: (path) => {
        const at = after.positions.locate(path)
        return at === undefined ? undefined : { file: FILE, ...at }
      },
    },
  ).map((f) => `${f.rule} ${f.severity} ${f.location?.line}:${f.location?.column} ${f.message}`)
}

describe("earlier shapes of a declared error's payload", () => {
  it("are parsed from the workflow's errors: entry, canonical and outside the hashed manifest", () => {
    const loaded = load(order(MIGRATED))
    expect(canonicalEarlierShapes(loaded.manifest).workflows?.["fulfill"]?.errors).toEqual({
      OutOfStock: {
        v1: { kind: "object", fields: { sku: { type: { kind: "string" }, optional: false } } },
      },
    })
    // The canonical manifest has the current payload only: declaring earlier shapes moves no hash.
    expect(canonicalOwner(loaded.manifest).workflows["fulfill"]!.errors).toEqual({
      OutOfStock: {
        kind: "object",
        fields: {
          item: {
            type: {
              kind: "object",
              fields: { sku: { type: { kind: "string" }, optional: false } },
            },
            optional: false,
          },
        },
      },
    })
  })

  it("refuses a malformed earlier: under an error, located", () => {
    const text = order(`      OutOfStock:
        type: { item: { sku: string } }
        earlier: 3`)
    const result = loadManifestSources([{ file: FILE, text }])
    expect(result.diagnostics.map(formatDiagnostic)).toEqual([
      `${FILE}:12:18: error[invalid-earlier] earlier: is a mapping of migration names to earlier shapes, found the number 3\n  hint: write e.g. earlier: { v1: { limitCents: integer } }, or leave earlier: out`,
    ])
  })

  it("reads a released step's failures through the migration, and warns about the workflow's result", () => {
    expect(compare(MIGRATED)).toEqual([
      'output-incompatible warning 10:7 the payload of error "OutOfStock" of Order.fulfill changed: failures steps recorded are read through its migration, but a result of Order.fulfill that fails with it decodes only in clients built with the payload it was written with',
      'recorded-data-migrated info 13:11 "OutOfStock" errors of step "reserve" of Order.fulfill recorded under release 1 are read through migration "v1"',
    ])
  })

  it("refuses the change without an earlier shape, and names the release none covers", () => {
    expect(compare("      OutOfStock: { item: { sku: string } }")).toEqual([
      "output-incompatible error 10:7 results of Order.fulfill written under this manifest do not decode in clients built from the previous manifest, which may be awaiting them: errors.OutOfStock.sku: required, but recorded values lack it; and results recorded under the previous manifest do not decode under this manifest: errors.OutOfStock.item: required, but recorded values lack it",
      'step-result-incompatible error 10:21 results of step "reserve" of Order.fulfill recorded under the previous manifest do not decode under this manifest: errors.OutOfStock.item: required, but recorded values lack it',
    ])
    const uncovered = compare(MIGRATED.replace("v1: { sku: string }", "v1: { sku: integer }"))
    expect(uncovered.filter((f) => f.startsWith("step-result-incompatible"))).toEqual([
      'step-result-incompatible error 12:9 results of step "reserve" of Order.fulfill recorded under the previous manifest do not decode under this manifest: errors.OutOfStock.item: required, but recorded values lack it; no earlier shape declared (v1) covers the shape recorded under release 1: declare one with its migration',
    ])
  })

  it("gives a runner the migration of a settled step's failures, by step and error", () => {
    const released = canonicalOwner(load(order(RELEASED)).manifest).workflows["fulfill"]!
    const runner = load(order(MIGRATED)).manifest
    const verdict = executionVerdict(
      canonicalOwner(runner).workflows["fulfill"],
      {
        owner: "Order",
        workflow: "fulfill",
        startManifest: released,
        startManifestHash: workflowHashes(released).compatibility,
        startManifestNewer: false,
        steps: [{ name: "reserve", kind: "activity", settled: true }],
        markers: {},
      },
      readerEarlierShapes(canonicalEarlierShapes(runner), "fulfill"),
    )
    expect(verdict.problems).toEqual([])
    expect(verdict.migrations).toEqual({
      steps: {},
      errors: {
        reserve: {
          OutOfStock: {
            migration: "v1",
            shape: {
              kind: "object",
              fields: { sku: { type: { kind: "string" }, optional: false } },
            },
          },
        },
      },
    })
  })
})
