/**
 * The lock file module without a process around it: what pruning keeps and drops, and that what
 * it writes reads back as the same entries.
 */
import { describe, expect, it } from "vitest"
import {
  EMPTY_LOCK,
  appendReleases,
  parseLockFile,
  pruneUnused,
  renderLockFile,
} from "../../codegen/compatibility/lockFile.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import {
  canonicalOwner,
  workflowHashes,
  type CanonicalOwner,
} from "../../runtime/model/canonicalManifest.js"

const owner = (name: string, workflows: string): CanonicalOwner => {
  const { manifests, diagnostics } = loadManifestSources([
    { file: `manifests/${name}.yaml`, text: `akter: 1\nowner: ${name}\nworkflows:\n${workflows}` },
  ])
  expect(diagnostics).toEqual([])
  return canonicalOwner(manifests[0]!.manifest)
}

const napping = (step: string) => `    steps: { ${step}: { kind: sleep, duration: 1h } }\n`
const deskV1 = owner("Desk", `  open:\n${napping("greet")}  close:\n${napping("wave")}`)
const deskV2 = owner("Desk", `  open:\n${napping("hello")}  close:\n${napping("wave")}`)
const deskV3 = owner("Desk", `  open:\n${napping("hello")}`)
const gone = owner("Gone", `  work:\n${napping("rest")}`)

const compatibility = (manifest: CanonicalOwner, workflow: string) =>
  workflowHashes(manifest.workflows[workflow]!).compatibility

const released = (...manifests: CanonicalOwner[]) =>
  manifests.reduce((lock, manifest) => appendReleases(lock, [manifest]).lock, EMPTY_LOCK)

describe("pruning the lock file", () => {
  it("keeps an owner's locked manifest while any one of its workflows is in use, and the newest always", () => {
    const lock = released(deskV1, deskV2, deskV3)
    // Desk.close is the same in v1 and v2: an open close execution uses both entries.
    expect(compatibility(deskV1, "close")).toBe(compatibility(deskV2, "close"))
    const inUse = [{ owner: "Desk", workflow: "close", hash: compatibility(deskV1, "close") }]

    const { lock: kept, pruned } = pruneUnused(lock, inUse, new Set(["Desk"]))

    expect(kept.entries.map((entry) => entry.release)).toEqual([1, 2, 3])
    expect(pruned).toEqual([])
    const unused = pruneUnused(lock, [], new Set(["Desk"]))
    expect(unused.lock.entries.map((entry) => entry.release)).toEqual([3])
    expect(unused.pruned.map((entry) => entry.release)).toEqual([1, 2])
  })

  it("keeps a workflow's manifest only for the hash open executions use", () => {
    const lock = released(deskV1, deskV2, deskV3)
    const inUse = [{ owner: "Desk", workflow: "open", hash: compatibility(deskV1, "open") }]

    const { lock: kept } = pruneUnused(lock, inUse, new Set(["Desk"]))

    expect(kept.entries.map((entry) => entry.release)).toEqual([1, 3])
  })

  it("drops every entry of an owner type the manifests no longer declare once nothing uses it", () => {
    const lock = released(deskV3, gone)
    const inUse = [{ owner: "Gone", workflow: "work", hash: compatibility(gone, "work") }]

    expect(pruneUnused(lock, inUse, new Set(["Desk"])).lock.entries.map((e) => e.owner)).toEqual([
      "Desk",
      "Gone",
    ])
    expect(pruneUnused(lock, [], new Set(["Desk"])).lock.entries.map((e) => e.owner)).toEqual([
      "Desk",
    ])
  })
})

describe("the lock file's text", () => {
  it("reads back as the entries it was written from", () => {
    const lock = released(deskV1, gone, deskV2)
    const text = renderLockFile(lock)

    expect(parseLockFile("manifests/akter.lock.json", text)).toEqual({ lock, diagnostics: [] })
    expect(renderLockFile(parseLockFile("manifests/akter.lock.json", text).lock)).toBe(text)
  })
})
