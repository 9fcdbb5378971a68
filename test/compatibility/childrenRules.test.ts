/**
 * The compatibility rules of issue 15's children, on manifests loaded by the manifest loader: a
 * start step that starts or stops awaiting its child records a different value (its settled rows
 * cannot be replayed: `step-result-incompatible` at its `await:`), a changed parent-close policy is
 * a located warning, and an awaited child whose output changes incompatibly is refused at the
 * child's output (`output-incompatible`: the parent awaits it like any client). A start that
 * declares neither keeps the hash it had before children existed.
 */
import { describe, expect, it } from "vitest"
import { formatDiagnostic } from "../../codegen/manifest/diagnostics.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { compareManifests } from "../../runtime/compatibility/compareManifests.js"
import { canonicalOwner, workflowHashes } from "../../runtime/model/canonicalManifest.js"

const manifest = (start: string, childOutput = "{ trackingId: string }") => `akter: 1
owner: Order
workflows:
  fulfill:
    input: { orderId: string }
    steps:
      ship: ${start}
  shipment:
    input: { orderId: string }
    output: ${childOutput}
    steps:
      book: { kind: activity, output: ${childOutput} }
`

const load = (text: string) => {
  const file = "manifests/order.yaml"
  const result = loadManifestSources([{ file, text }])
  expect(result.diagnostics.map(formatDiagnostic)).toEqual([])
  return result.manifests[0]!
}

const findings = (before: string, after: string) => {
  const next = load(after)
  return compareManifests(canonicalOwner(load(before).manifest), canonicalOwner(next.manifest), {
    locate: (path) => {
      const at = next.positions.locate(path)
      return at === undefined ? undefined : { file: next.file, ...at }
    },
  }).map((f) => ({
    rule: f.rule,
    severity: f.severity,
    at: `${f.location?.line}:${f.location?.column}`,
    message: f.message,
  }))
}

describe("children's compatibility rules", () => {
  it("a start that begins awaiting its child cannot replay rows that recorded the child's id", () => {
    expect(
      findings(
        manifest("{ kind: start, workflow: shipment }"),
        manifest("{ kind: start, workflow: shipment, await: true }"),
      ),
    ).toEqual([
      {
        rule: "step-result-incompatible",
        severity: "error",
        at: "7:48",
        message: expect.stringContaining(
          "await: records the child's result instead of the child's execution id",
        ),
      },
      // An awaited child's default policy is interrupt, a plain start's leave.
      {
        rule: "start-parent-close-changed",
        severity: "warning",
        at: "7:48",
        message: expect.stringContaining("is interrupt in this manifest but leave"),
      },
    ])
  })

  it("a changed parent-close policy is a warning at the step (its parentClose when written), and nothing else", () => {
    expect(
      findings(
        manifest("{ kind: start, workflow: shipment, parentClose: interrupt }"),
        manifest("{ kind: start, workflow: shipment }"),
      ),
    ).toEqual([
      {
        rule: "start-parent-close-changed",
        severity: "warning",
        at: "7:7",
        message: expect.stringContaining("is leave in this manifest but interrupt"),
      },
    ])
  })

  it("an awaited child's output changed incompatibly is refused at the child's output", () => {
    const start = "{ kind: start, workflow: shipment, await: true }"
    const found = findings(manifest(start), manifest(start, "{ trackingId: integer }"))
    expect(found.map((f) => `${f.rule} ${f.at}`)).toContain("output-incompatible 10:15")
  })

  it("a start declaring neither await nor parentClose keeps its hash", () => {
    const plain = canonicalOwner(load(manifest("{ kind: start, workflow: shipment }")).manifest)
    const leave = canonicalOwner(
      load(manifest("{ kind: start, workflow: shipment, await: false, parentClose: leave }"))
        .manifest,
    )
    expect(plain.workflows["fulfill"]!.steps["ship"]).toEqual({
      kind: "start",
      target: { owner: "Order", workflow: "shipment" },
    })
    expect(workflowHashes(leave.workflows["fulfill"]!)).toEqual(
      workflowHashes(plain.workflows["fulfill"]!),
    )
  })
})
