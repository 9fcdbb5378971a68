/**
 * The lock file module without a process around it: what pruning keeps and drops, what releasing
 * appends, how the file prints, that what it writes reads back as the same entries, and every way
 * a lock file is refused — the rule, the path and the message of each problem.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { describe, expect, it } from "vitest"
import {
  EMPTY_LOCK,
  appendReleases,
  lockFileLocation,
  newestEntries,
  parseLockFile,
  pruneUnused,
  readLockFile,
  renderLockFile,
  type LockedManifest,
} from "../../cli/compatibility/lockFile.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import {
  canonicalOwner,
  ownerHash,
  workflowHashes,
  type CanonicalOwner,
} from "../../runtime/model/canonicalManifest.js"
import { positionOf } from "./cliProject.js"

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
/** A manifest with arrays (enum values) and empty objects, for how the lock file prints them. */
const enumerated = owner(
  "Shelf",
  `  stock:\n    input: { size: { enum: [s, m, l] } }\n    steps: { count: { kind: activity, output: { sizes: "string[]" } } }\n`,
)

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

describe("reading a lock file", () => {
  const FILE = "manifests/akter.lock.json"
  const valid = released(deskV1, deskV2)
  const [first, second] = valid.entries as [LockedManifest, LockedManifest]
  /** The valid lock file's document, changed by `edit`, as text. */
  const edited = (edit: (doc: any) => unknown) => {
    const doc = JSON.parse(renderLockFile(valid))
    const replaced = edit(doc)
    return JSON.stringify(replaced === undefined ? doc : replaced, null, 2)
  }
  const problems = (text: string) =>
    parseLockFile(FILE, text).diagnostics.map((d) => ({
      rule: d.rule,
      path: d.path,
      message: d.message,
      ...(d.hint === undefined ? {} : { hint: d.hint }),
    }))
  const RESTORE = "restore the file from version control, or delete the entry and run `akter lock`"
  const entry = (hash: string, rest = "") => `owners.Desk.${hash}${rest}`

  it("refuses a document that is not an object, or whose top level is not the lock file's", () => {
    expect(problems("[]")).toEqual([
      { rule: "lock-format", path: "", message: "the lock file must hold a JSON object" },
    ])
    expect(problems(edited((doc) => ({ ...doc, format: 2, owners: [], extra: true })))).toEqual([
      {
        rule: "lock-format",
        path: "extra",
        message: 'unknown key "extra" (known: $comment, format, owners)',
      },
      {
        rule: "lock-format",
        path: "format",
        message: "format must be 1, not 2",
        hint: "this lock file was written by another version of akter; use that version, or upgrade akter",
      },
      { rule: "lock-format", path: "owners", message: "owners must be an object of owner types" },
    ])
    expect(problems(edited(({ format: _, ...doc }) => doc))[0]!.message).toBe(
      "format must be 1, not null",
    )
    expect(problems(edited((doc) => ({ ...doc, owners: { Desk: [] } })))).toEqual([
      {
        rule: "lock-format",
        path: "owners.Desk",
        message: "owners.Desk must be an object of entries by manifest hash",
      },
    ])
  })

  it("refuses an entry under a key that is not a manifest hash, or that is not { release, manifest }", () => {
    const entryOf = (doc: any) => doc.owners.Desk[first.hash]
    expect(
      problems(edited((doc) => void (doc.owners.Desk = { "not-a-hash": entryOf(doc) }))),
    ).toEqual([
      {
        rule: "lock-format",
        path: "owners.Desk.not-a-hash",
        message: '"not-a-hash" is not a manifest hash (akter1:sha256: and 64 hex digits)',
        hint: RESTORE,
      },
    ])
    for (const value of [5, null]) {
      expect(problems(edited((doc) => void (doc.owners.Desk[first.hash] = value)))).toEqual([
        {
          rule: "lock-format",
          path: entry(first.hash),
          message: "an entry must be { release, manifest }",
          hint: RESTORE,
        },
      ])
    }
    expect(
      problems(
        edited(
          (doc) => void (doc.owners.Desk[first.hash] = { note: "x", release: 0, manifest: 1 }),
        ),
      ),
    ).toEqual([
      {
        rule: "lock-format",
        path: entry(first.hash, ".note"),
        message: 'unknown key "note" in a lock entry (known: release, manifest)',
        hint: RESTORE,
      },
      {
        rule: "lock-format",
        path: entry(first.hash, ".release"),
        message: "release must be a positive integer",
        hint: RESTORE,
      },
      {
        rule: "lock-format",
        path: entry(first.hash, ".manifest"),
        message: "manifest must be a canonical manifest, as `akter lock` writes it",
        hint: RESTORE,
      },
    ])
  })

  it("refuses a release that is not a positive integer, and a manifest without workflows or events", () => {
    for (const release of ["1", 1.5, 0, -1, null]) {
      expect(
        problems(edited((doc) => void (doc.owners.Desk[first.hash].release = release))),
        JSON.stringify(release),
      ).toEqual([
        {
          rule: "lock-format",
          path: entry(first.hash, ".release"),
          message: "release must be a positive integer",
          hint: RESTORE,
        },
      ])
    }
    for (const drop of ["workflows", "events"]) {
      expect(
        problems(edited((doc) => void delete doc.owners.Desk[first.hash].manifest[drop])).map(
          (p) => [p.rule, p.path],
        ),
        drop,
      ).toEqual([["lock-format", entry(first.hash, ".manifest")]])
    }
  })

  it("refuses a manifest listed under another owner, and one edited after it was locked, naming its hash", () => {
    expect(
      problems(edited((doc) => void (doc.owners.Desk[first.hash].manifest.owner = "Other"))),
    ).toEqual([
      {
        rule: "lock-owner-mismatch",
        path: entry(first.hash, ".manifest.owner"),
        message: 'the manifest is of owner "Other", but it is listed under Desk',
        hint: RESTORE,
      },
    ])
    const text = edited(
      (doc) => void (doc.owners.Desk[first.hash].manifest.workflows.open.steps.greet.kind = "wait"),
    )
    const changed = JSON.parse(text).owners.Desk[first.hash].manifest
    expect(problems(text)).toEqual([
      {
        rule: "lock-entry-edited",
        path: entry(first.hash),
        message: `the manifest of this entry hashes to ${ownerHash(changed)}, not to its key: it was edited after \`akter lock\` wrote it`,
        hint: RESTORE,
      },
    ])
  })

  it("refuses two entries of one owner with the same release, at the second", () => {
    expect(problems(edited((doc) => void (doc.owners.Desk[second.hash].release = 1)))).toEqual([
      {
        rule: "lock-format",
        path: entry(second.hash, ".release"),
        message: `release 1 of Desk is also the release of ${first.hash}`,
        hint: RESTORE,
      },
    ])
    // Another owner may use the same release number.
    expect(problems(renderLockFile(released(deskV1, gone)))).toEqual([])
    // An entry refused for its own problems is not compared with the others as well.
    expect(
      problems(
        edited((doc) => {
          doc.owners.Desk[second.hash].release = 1
          doc.owners.Desk[second.hash].note = "x"
        }),
      ).map((p) => [p.path, p.message]),
    ).toEqual([
      [
        entry(second.hash, ".note"),
        'unknown key "note" in a lock entry (known: release, manifest)',
      ],
    ])
  })

  it("locates a syntax error where the parser stopped, or at the end of a cut-off file", () => {
    const text = renderLockFile(valid)
    const conflicted = text.replace('  "format": 1,\n', '<<<<<<< ours\n  "format": 1,\n')
    const [syntax] = parseLockFile(FILE, conflicted).diagnostics
    expect(syntax).toMatchObject({
      file: FILE,
      ...positionOf(conflicted, "<<<<<<<"),
      rule: "lock-syntax",
      severity: "error",
      path: "",
      hint: "resolve merge conflicts by keeping the entries of both sides, or restore the file from version control",
    })
    expect(syntax!.message).toMatch(/^not valid JSON: /)
    const cut = text.slice(0, 200)
    const lines = cut.split("\n")
    expect(parseLockFile(FILE, cut).diagnostics[0]).toMatchObject({
      rule: "lock-syntax",
      line: lines.length,
      column: lines.at(-1)!.length + 1,
    })
    expect(parseLockFile(FILE, text).lock).toEqual(valid)
    // A file that ends inside a value: the parser names no position, so the end of the text.
    const ended = '{\n  "format":'
    expect(parseLockFile(FILE, ended).diagnostics[0]).toMatchObject({
      rule: "lock-syntax",
      line: 2,
      column: 12,
      message: "not valid JSON: Unexpected end of JSON input",
    })
  })

  it("reads the entries in the order of owner and release, whatever their order in the file", () => {
    const lock = released(deskV1, deskV2, deskV3, gone)
    const doc = JSON.parse(renderLockFile(lock))
    const reversed = (object: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(object).reverse())
    const shuffled = JSON.stringify({
      ...doc,
      owners: reversed(
        Object.fromEntries(
          Object.entries(doc.owners).map(([owner, entries]) => [
            owner,
            reversed(entries as Record<string, unknown>),
          ]),
        ),
      ),
    })
    expect(Object.keys(JSON.parse(shuffled).owners)).toEqual(["Gone", "Desk"])
    expect(parseLockFile(FILE, shuffled)).toEqual({ lock, diagnostics: [] })
  })

  it("reads the file at a path, and nothing where there is none", async () => {
    const folder = mkdtempSync(path.join(tmpdir(), "akter-lock-"))
    try {
      const at = path.join(folder, "akter.lock.json")
      expect(await readLockFile(at, FILE)).toBeUndefined()
      writeFileSync(at, renderLockFile(valid))
      expect(await readLockFile(at, FILE)).toEqual({ lock: valid, diagnostics: [] })
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  it("finds the lock file in the manifest folder, or where --lock names it from the current directory", () => {
    const folders = { root: "/work/app", manifestsDir: "/work/app/manifests" }
    expect(lockFileLocation(folders, "/work/app/sub", undefined)).toEqual({
      path: "/work/app/manifests/akter.lock.json",
      file: "manifests/akter.lock.json",
    })
    expect(lockFileLocation(folders, "/work/app/sub", "../locks/a.json")).toEqual({
      path: "/work/app/locks/a.json",
      file: "locks/a.json",
    })
  })
})

describe("writing a lock file", () => {
  /** Every object's keys sorted, recursively: how the lock file prints a manifest. */
  const sortedDeep = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sortedDeep)
      : typeof value === "object" && value !== null
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((key) => [key, sortedDeep((value as Record<string, unknown>)[key])]),
          )
        : value

  it("prints the comment, the format and each owner's entries by release, manifests with sorted keys, as JSON.stringify indents them", () => {
    const lock = released(deskV2, gone, deskV1, enumerated)
    const expected = {
      $comment:
        "Released manifests, written by `akter lock`: akter check compares manifests/ against every one. Do not edit by hand.",
      format: 1,
      owners: Object.fromEntries(
        ["Desk", "Gone", "Shelf"].map((owner) => [
          owner,
          Object.fromEntries(
            lock.entries
              .filter((e) => e.owner === owner)
              .sort((a, b) => a.release - b.release)
              .map((e) => [e.hash, { release: e.release, manifest: sortedDeep(e.manifest) }]),
          ),
        ]),
      ),
    }
    expect(renderLockFile(lock)).toBe(`${JSON.stringify(expected, null, 2)}\n`)
    expect(renderLockFile(EMPTY_LOCK)).toBe(
      `${JSON.stringify({ $comment: expected.$comment, format: 1, owners: {} }, null, 2)}\n`,
    )
  })

  it("prints the same text whatever the order of the entries and of a manifest's keys, and an empty array as []", () => {
    const lock = released(deskV1, deskV2, deskV3, gone)
    const text = renderLockFile(lock)
    const rotated = [...lock.entries.slice(2), ...lock.entries.slice(0, 2)]
    for (const entries of [[...lock.entries].reverse(), rotated]) {
      expect(renderLockFile({ entries })).toBe(text)
    }
    // A manifest whose keys come in reverse order, with an empty array: printed sorted, as
    // JSON.stringify indents the sorted object.
    const manifest = Object.fromEntries(
      Object.entries({ ...deskV1, tags: [] as string[] }).reverse(),
    ) as unknown as CanonicalOwner
    const printed = JSON.parse(renderLockFile({ entries: [{ ...lock.entries[0]!, manifest }] }))
    const hash = lock.entries[0]!.hash
    expect(Object.keys(printed.owners.Desk[hash].manifest)).toEqual(
      Object.keys(printed.owners.Desk[hash].manifest).sort(),
    )
    expect(renderLockFile({ entries: [{ ...lock.entries[0]!, manifest }] })).toBe(
      `${JSON.stringify(
        {
          $comment: JSON.parse(text).$comment,
          format: 1,
          owners: { Desk: { [hash]: { release: 1, manifest: sortedDeep(manifest) } } },
        },
        null,
        2,
      )}\n`,
    )
  })
})

describe("releasing manifests", () => {
  it("appends a manifest not locked yet as its owner's next release, and leaves the newest as it is", () => {
    const one = appendReleases(EMPTY_LOCK, [deskV1, gone])
    expect(one.added.map((e) => [e.owner, e.release])).toEqual([
      ["Desk", 1],
      ["Gone", 1],
    ])
    expect(one.released).toEqual([])
    const two = appendReleases(one.lock, [deskV2, gone])
    expect(two.added.map((e) => [e.owner, e.release, e.hash])).toEqual([
      ["Desk", 2, ownerHash(deskV2)],
    ])
    expect(two.lock.entries.map((e) => [e.owner, e.release])).toEqual([
      ["Desk", 1],
      ["Desk", 2],
      ["Gone", 1],
    ])
    expect(appendReleases(two.lock, [deskV2, gone])).toEqual({
      lock: two.lock,
      added: [],
      released: [],
    })
  })

  it("makes an older manifest released again the newest (a rollback), moving its entry, not copying it", () => {
    const lock = released(deskV1, deskV2, gone)
    const { lock: rolledBack, added, released: again } = appendReleases(lock, [deskV1])
    expect(added).toEqual([])
    expect(again.map((e) => [e.owner, e.release, e.hash])).toEqual([["Desk", 3, ownerHash(deskV1)]])
    expect(rolledBack.entries.map((e) => [e.owner, e.release, e.hash])).toEqual([
      ["Desk", 2, ownerHash(deskV2)],
      ["Desk", 3, ownerHash(deskV1)],
      ["Gone", 1, ownerHash(gone)],
    ])
  })

  it("finds each owner's newest entry by release, whatever the order of the entries", () => {
    const lock = released(deskV1, deskV2, deskV3, gone)
    const shuffled = { entries: [...lock.entries].reverse() }
    for (const entries of [lock, shuffled]) {
      const newest = newestEntries(entries)
      expect([...newest].map(([owner, e]) => [owner, e.release]).sort()).toEqual([
        ["Desk", 3],
        ["Gone", 1],
      ])
    }
  })
})
