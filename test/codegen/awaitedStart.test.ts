/**
 * The generated method of an awaiting start step: typed from the child workflow's declaration,
 * its output as the success value and its declared errors as the failure (of another owner's
 * types when the child is another owner's), while a plain start still resolves to the child's id.
 */
import { describe, expect, it } from "vitest"
import { emitProject } from "../../codegen/emit/emitProject.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"

const SHOP = `akter: 1
owner: Shop
workflows:
  fulfill:
    input: { orderId: string }
    steps:
      ship: { kind: start, workflow: shipment, await: true }
      bill: { kind: start, owner: Ledger, workflow: charge, await: true, parentClose: leave }
      note: { kind: start, workflow: shipment }
  shipment:
    input: { orderId: string }
    output: { trackingId: string }
    errors:
      NoCarrier: { region: string }
    steps:
      book: { kind: activity, output: { trackingId: string }, errors: [NoCarrier] }
`
const LEDGER = `akter: 1
owner: Ledger
workflows:
  charge:
    errors:
      Declined: { code: string }
      Frozen: {}
    steps:
      pay: { kind: activity, errors: [Declined, Frozen] }
`

describe("an awaiting start's generated method", () => {
  it("resolves to the child's output and fails with its declared errors", async () => {
    const loaded = loadManifestSources([
      { file: "manifests/shop.yaml", text: SHOP },
      { file: "manifests/ledger.yaml", text: LEDGER },
    ])
    expect(loaded.diagnostics).toEqual([])
    const files = await emitProject(loaded.manifests, { manifestsFolder: "manifests" })
    const workflows = files.find((file) => file.path === "shop/workflows.ts")!.text
    expect(workflows).toContain(
      "ship(ownerId: string, input: ShipmentInput): Effect.Effect<ShipmentOutput, NoCarrier>",
    )
    expect(workflows).toContain("bill(ownerId: string): Effect.Effect<void, Declined | Frozen>")
    expect(workflows).toContain(
      "note(ownerId: string, input: ShipmentInput): Effect.Effect<string>",
    )
    // Doc comments are wrapped: read them as one line.
    const docs = workflows.replace(/\n\s*\*\s*/g, " ")
    expect(docs).toContain("If this workflow ends first, the child is interrupted.")
    expect(docs).toContain("If this workflow ends first, the child runs on.")
  })
})
