import { describe, expect, it } from "vitest"
import { loadManifests } from "../../codegen/manifest/loadManifests.js"

describe("the example manifests", () => {
  it("load with no diagnostics, sorted by owner", async () => {
    const { manifests, diagnostics } = await loadManifests({ dir: "manifests" })
    expect(diagnostics).toEqual([])
    expect(manifests.map((m) => [m.file, m.manifest.owner])).toEqual([
      ["manifests/order.yaml", "Order"],
      ["manifests/subscription.yaml", "Subscription"],
      ["manifests/user.yaml", "User"],
    ])
  })
})
