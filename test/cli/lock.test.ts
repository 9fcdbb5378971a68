/**
 * `akter lock`, run as the real CLI in a temporary project: the lock file holds every released
 * manifest's canonical form by owner and hash, byte-deterministic, appended per release; a lock file
 * edited by hand or broken by a merge is refused at its location.
 */
import { afterEach, describe, expect, it, vi } from "vitest"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import {
  canonicalOwner,
  ownerHash,
  type CanonicalOwner,
} from "../../runtime/model/canonicalManifest.js"
import { createCliProject, positionOf, type CliProject } from "./cliProject.js"

// Every test runs the real CLI, a few seconds per call on a loaded machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

const projects: CliProject[] = []
afterEach(() => {
  for (const project of projects.splice(0)) project.remove()
})

const project = () => {
  const created = createCliProject()
  projects.push(created)
  return created
}

const canonicalOf = (text: string): CanonicalOwner => {
  const { manifests, diagnostics } = loadManifestSources([{ file: "manifests/shop.yaml", text }])
  expect(diagnostics).toEqual([])
  return canonicalOwner(manifests[0]!.manifest)
}

/** Every object key in `value`, depth first, with the keys of each object in file order. */
const keyOrders = (value: unknown, out: string[][] = []): string[][] => {
  if (Array.isArray(value)) value.forEach((item) => keyOrders(item, out))
  else if (typeof value === "object" && value !== null) {
    out.push(Object.keys(value))
    for (const item of Object.values(value)) keyOrders(item, out)
  }
  return out
}

const LOCK = "manifests/akter.lock.json"

describe("akter lock", () => {
  it("writes every manifest's canonical form keyed by owner and manifest hash, with sorted keys and a trailing newline", async () => {
    const shop = project()
    const v1 = canonicalOf(shop.useShop(1))

    const result = await shop.akter(["lock"])

    expect(result).toMatchObject({ code: 0, stderr: "" })
    const text = shop.read(LOCK)
    expect(text.endsWith("}\n")).toBe(true)
    const lock = JSON.parse(text) as {
      format: number
      owners: Record<string, Record<string, { release: number; manifest: unknown }>>
    }
    expect(Object.keys(lock)).toEqual(["$comment", "format", "owners"])
    expect(lock.format).toBe(1)
    expect(lock.owners).toEqual({ Shop: { [ownerHash(v1)]: { release: 1, manifest: v1 } } })
    const manifestKeys = keyOrders(lock.owners["Shop"]![ownerHash(v1)]!.manifest)
    for (const keys of manifestKeys) expect(keys).toEqual([...keys].sort())
    expect(text).toBe(`${JSON.stringify(JSON.parse(text), null, 2)}\n`)
    expect(result.stdout).toBe(
      `+ Shop release 1 ${ownerHash(v1)} (manifests/shop.yaml)\nakter lock: ${LOCK} written (1 released, 1 locked)\n`,
    )
  })

  it("leaves the file byte for byte as it is when the manifests are already the newest release", async () => {
    const shop = project()
    shop.useShop(1)
    await shop.akter(["lock"])
    const before = shop.read(LOCK)

    const again = await shop.akter(["lock", "--format", "json"])

    expect(again.code).toBe(0)
    expect(JSON.parse(again.stdout)).toEqual({
      lockFile: LOCK,
      changed: false,
      added: [],
      released: [],
      pruned: [],
      retirable: [],
    })
    expect(shop.read(LOCK)).toBe(before)
  })

  it("appends a new release after the owner's earlier ones and keeps them", async () => {
    const shop = project()
    const v1 = canonicalOf(shop.useShop(1))
    await shop.akter(["lock"])
    const v2 = canonicalOf(shop.useShop(2))

    const result = await shop.akter(["lock", "--format", "json"])

    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({
      lockFile: LOCK,
      changed: true,
      added: [{ owner: "Shop", hash: ownerHash(v2), release: 2 }],
      released: [],
      pruned: [],
      retirable: [],
    })
    const text = shop.read(LOCK)
    expect(JSON.parse(text).owners).toEqual({
      Shop: {
        [ownerHash(v1)]: { release: 1, manifest: v1 },
        [ownerHash(v2)]: { release: 2, manifest: v2 },
      },
    })
    expect(text.indexOf(ownerHash(v1))).toBeLessThan(text.indexOf(ownerHash(v2)))
  })

  it("makes a manifest released again after a rollback the newest release", async () => {
    const shop = project()
    const v1 = canonicalOf(shop.useShop(1))
    await shop.akter(["lock"])
    shop.useShop(2)
    await shop.akter(["lock"])
    shop.useShop(1)

    const result = await shop.akter(["lock", "--format", "json"])

    expect(JSON.parse(result.stdout).released).toEqual([
      { owner: "Shop", hash: ownerHash(v1), release: 3 },
    ])
    const entries = JSON.parse(shop.read(LOCK)).owners.Shop as Record<string, { release: number }>
    expect(Object.values(entries).map((entry) => entry.release)).toEqual([2, 3])
  })

  it("refuses a lock entry edited by hand, at the entry, with exit 2, and writes nothing", async () => {
    const shop = project()
    shop.useShop(1)
    await shop.akter(["lock"])
    const edited = shop.read(LOCK).replace('"kind": "integer"', '"kind": "number"')
    shop.write(LOCK, edited)
    const hash = Object.keys(JSON.parse(edited).owners.Shop)[0]!

    const check = await shop.akter(["check", "--format", "json"])
    const lock = await shop.akter(["lock"])

    expect(check.code).toBe(2)
    const at = positionOf(edited, `"${hash}"`)
    const report = JSON.parse(check.stdout) as { exitCode: number; diagnostics: unknown[] }
    expect(report.exitCode).toBe(2)
    expect(report.diagnostics).toEqual([
      expect.objectContaining({
        file: LOCK,
        ...at,
        rule: "lock-entry-edited",
        severity: "error",
        path: `owners.Shop.${hash}`,
      }),
    ])
    expect(lock.code).toBe(2)
    expect(lock.stdout).toMatch(
      new RegExp(
        `^${LOCK.replace(".", "\\.")}:${at.line}:${at.column}: error\\[lock-entry-edited\\] `,
      ),
    )
    expect(shop.read(LOCK)).toBe(edited)
  })

  it("refuses a lock file left with merge conflict markers, at the first marker", async () => {
    const shop = project()
    shop.useShop(1)
    await shop.akter(["lock"])
    const text = shop.read(LOCK)
    const conflicted = text.replace('  "format": 1,\n', '<<<<<<< ours\n  "format": 1,\n')
    shop.write(LOCK, conflicted)

    const result = await shop.akter(["check"])

    expect(result.code).toBe(2)
    const at = positionOf(conflicted, "<<<<<<<")
    expect(result.stdout).toMatch(
      new RegExp(
        `^manifests/akter\\.lock\\.json:${at.line}:${at.column}: error\\[lock-syntax\\] not valid JSON`,
      ),
    )
    expect(result.stderr).toBe("akter check: 1 error in the input; nothing was done\n")
  })

  it("refuses --prune without a database, and a database without --prune, as usage errors", async () => {
    const shop = project()
    shop.useShop(1)

    const prune = await shop.akter(["lock", "--prune"])
    const url = await shop.akter([
      "lock",
      "--database-url",
      "postgres://127.0.0.1/x",
      "--format",
      "json",
    ])

    expect(prune.code).toBe(2)
    expect(prune.stderr).toMatch(/^akter lock: --prune needs --database-url: /)
    expect(prune.stderr).toContain("usage: akter lock [options]")
    expect(url.code).toBe(2)
    expect(JSON.parse(url.stdout)).toEqual({
      exitCode: 2,
      error: "--database-url is only read by --prune",
    })
    expect(() => shop.read(LOCK)).toThrow()
  })

  it("prints its options with --help", async () => {
    const result = await project().akter(["lock", "--help"])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("usage: akter lock [options]")
    expect(result.stdout).toContain("--prune")
    // --prune also reports the migrations of recorded data nothing needs any more.
    expect(result.stdout).toMatch(/--prune\s[\s\S]*report the migrations \(earlier: shapes\)/)
    expect(result.stdout).toContain("retirable }")
  })
})
