/**
 * The lock file of released manifests (`manifests/akter.lock.json`): the canonical form of every
 * manifest that was ever released and may still have executions in flight, by owner type and
 * manifest hash, each with its release number. `akter lock` appends the current manifests (the
 * release step), `akter check` compares the manifests against every entry, and `akter lock --prune`
 * drops entries no open execution uses.
 *
 * The file is deterministic to the byte: owners by name, each owner's entries by release (a new
 * release is added at the end of its owner, so a release shows in review as one added block), and
 * inside a manifest every key sorted, as its canonical JSON. Each entry is checked when read: its
 * manifest must hash to its key, so an edit by hand is found before it can mislead a check.
 */
import { join, resolve } from "node:path"
import {
  ownerHash,
  workflowHashes,
  type CanonicalOwner,
} from "../../runtime/model/canonicalManifest.js"
import { isHash, type Hash } from "../../runtime/model/hash.js"
import type { ManifestInUse } from "../../runtime/runner/startupCheck.js"
import { projectPath } from "../../codegen/emit/generate.js"
import type { Diagnostic } from "../../codegen/manifest/diagnostics.js"
import type { ManifestPath } from "../../codegen/manifest/sourcePositions.js"
import { locatedError, readPositioned, readTextIfPresent } from "./positionedDocument.js"

/** Name of the lock file inside the manifest folder. */
export const LOCK_FILE_NAME = "akter.lock.json"

/** The `--lock FILE` option every command that reads the lock file takes, with its `--help` line. */
export const LOCK_OPTION = {
  spec: { lock: { type: "string" } },
  help: [
    "--lock FILE",
    `the lock file of released manifests (default: ${LOCK_FILE_NAME} in the manifest folder)`,
  ],
} as const

/**
 * Where a command finds the lock file: `--lock FILE` relative to the current directory, else
 * `akter.lock.json` in the manifest folder; `file` is how reports name it.
 *
 * @example
 * const { path, file } = lockFileLocation(folders, process.cwd(), options.lock)
 */
export const lockFileLocation = (
  folders: { readonly root: string; readonly manifestsDir: string },
  cwd: string,
  flag: string | undefined,
): { readonly path: string; readonly file: string } => {
  const absolute =
    flag === undefined ? join(folders.manifestsDir, LOCK_FILE_NAME) : resolve(cwd, flag)
  return { path: absolute, file: projectPath(folders.root, absolute) }
}

export const LOCK_FORMAT = 1

const COMMENT =
  "Released manifests, written by `akter lock`: akter check compares manifests/ against every one. Do not edit by hand."

export interface LockedManifest {
  readonly owner: string
  /** `ownerHash(manifest)`: the key of the entry. */
  readonly hash: Hash
  /** 1 for an owner type's first release; the newest entry has the highest. */
  readonly release: number
  readonly manifest: CanonicalOwner
}

export interface LockFile {
  /** Sorted by owner type, then release. */
  readonly entries: readonly LockedManifest[]
}

export const EMPTY_LOCK: LockFile = { entries: [] }

const sortEntries = (entries: readonly LockedManifest[]): LockedManifest[] =>
  [...entries].sort((a, b) =>
    a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : a.release - b.release,
  )

// ── printing ──────────────────────────────────────────────────────────────────────────────────

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** An object whose keys print in the order given, not sorted. */
class Ordered {
  constructor(readonly entries: readonly (readonly [string, unknown])[]) {}
}

const printJson = (value: unknown, indent: string): string => {
  const inner = `${indent}  `
  if (value instanceof Ordered || isRecord(value)) {
    const entries =
      value instanceof Ordered
        ? value.entries
        : Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    const shown = entries.filter(([, item]) => item !== undefined)
    if (shown.length === 0) return "{}"
    const lines = shown.map(
      ([key, item]) => `${inner}${JSON.stringify(key)}: ${printJson(item, inner)}`,
    )
    return `{\n${lines.join(",\n")}\n${indent}}`
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]"
    return `[\n${value.map((item) => `${inner}${printJson(item, inner)}`).join(",\n")}\n${indent}]`
  }
  return JSON.stringify(value)
}

/**
 * The lock file's text: deterministic, two-space indented, with a trailing newline.
 *
 * @example
 * await writeFile("manifests/akter.lock.json", renderLockFile(appendReleases(lock, owners).lock))
 */
export const renderLockFile = (lock: LockFile): string => {
  const owners = new Map<string, LockedManifest[]>()
  for (const entry of sortEntries(lock.entries)) {
    owners.set(entry.owner, [...(owners.get(entry.owner) ?? []), entry])
  }
  const document = new Ordered([
    ["$comment", COMMENT],
    ["format", LOCK_FORMAT],
    [
      "owners",
      new Ordered(
        [...owners].map(([owner, entries]) => [
          owner,
          new Ordered(
            entries.map((entry) => [
              entry.hash,
              new Ordered([
                ["release", entry.release],
                ["manifest", entry.manifest],
              ]),
            ]),
          ),
        ]),
      ),
    ],
  ])
  return `${printJson(document, "")}\n`
}

// ── reading ───────────────────────────────────────────────────────────────────────────────────

interface Problem {
  readonly path: ManifestPath
  readonly rule: string
  readonly message: string
  readonly hint?: string
}

const RESTORE = "restore the file from version control, or delete the entry and run `akter lock`"

const entryProblems = (owner: string, hash: string, value: unknown): Problem[] => {
  const at = ["owners", owner, hash]
  if (!isHash(hash)) {
    return [
      {
        path: at,
        rule: "lock-format",
        message: `"${hash}" is not a manifest hash (akter1:sha256: and 64 hex digits)`,
        hint: RESTORE,
      },
    ]
  }
  if (!isRecord(value)) {
    return [
      {
        path: at,
        rule: "lock-format",
        message: "an entry must be { release, manifest }",
        hint: RESTORE,
      },
    ]
  }
  const problems: Problem[] = []
  for (const key of Object.keys(value)) {
    if (key !== "release" && key !== "manifest") {
      problems.push({
        path: [...at, key],
        rule: "lock-format",
        message: `unknown key "${key}" in a lock entry (known: release, manifest)`,
        hint: RESTORE,
      })
    }
  }
  const release = value["release"]
  if (typeof release !== "number" || !Number.isInteger(release) || release < 1) {
    problems.push({
      path: [...at, "release"],
      rule: "lock-format",
      message: "release must be a positive integer",
      hint: RESTORE,
    })
  }
  const manifest = value["manifest"]
  if (!isRecord(manifest) || !isRecord(manifest["workflows"]) || !isRecord(manifest["events"])) {
    problems.push({
      path: [...at, "manifest"],
      rule: "lock-format",
      message: "manifest must be a canonical manifest, as `akter lock` writes it",
      hint: RESTORE,
    })
    return problems
  }
  if (manifest["owner"] !== owner) {
    problems.push({
      path: [...at, "manifest", "owner"],
      rule: "lock-owner-mismatch",
      message: `the manifest is of owner ${JSON.stringify(manifest["owner"])}, but it is listed under ${owner}`,
      hint: RESTORE,
    })
  }
  const computed = ownerHash(manifest as unknown as CanonicalOwner)
  if (problems.length === 0 && computed !== hash) {
    problems.push({
      path: at,
      rule: "lock-entry-edited",
      message: `the manifest of this entry hashes to ${computed}, not to its key: it was edited after \`akter lock\` wrote it`,
      hint: RESTORE,
    })
  }
  return problems
}

const documentProblems = (value: unknown): Problem[] => {
  if (!isRecord(value)) {
    return [{ path: [], rule: "lock-format", message: "the lock file must hold a JSON object" }]
  }
  const problems: Problem[] = []
  for (const key of Object.keys(value)) {
    if (key !== "$comment" && key !== "format" && key !== "owners") {
      problems.push({
        path: [key],
        rule: "lock-format",
        message: `unknown key "${key}" (known: $comment, format, owners)`,
      })
    }
  }
  if (value["format"] !== LOCK_FORMAT) {
    problems.push({
      path: ["format"],
      rule: "lock-format",
      message: `format must be ${LOCK_FORMAT}, not ${JSON.stringify(value["format"] ?? null)}`,
      hint: "this lock file was written by another version of akter; use that version, or upgrade akter",
    })
  }
  const owners = value["owners"]
  if (!isRecord(owners)) {
    problems.push({
      path: ["owners"],
      rule: "lock-format",
      message: "owners must be an object of owner types",
    })
    return problems
  }
  for (const [owner, entries] of Object.entries(owners)) {
    if (!isRecord(entries)) {
      problems.push({
        path: ["owners", owner],
        rule: "lock-format",
        message: `owners.${owner} must be an object of entries by manifest hash`,
      })
      continue
    }
    const releases = new Map<number, string>()
    for (const [hash, entry] of Object.entries(entries)) {
      const found = entryProblems(owner, hash, entry)
      problems.push(...found)
      const release = (entry as { release?: unknown } | null)?.release
      if (found.length > 0 || typeof release !== "number") continue
      const other = releases.get(release)
      if (other !== undefined) {
        problems.push({
          path: ["owners", owner, hash, "release"],
          rule: "lock-format",
          message: `release ${release} of ${owner} is also the release of ${other}`,
          hint: RESTORE,
        })
      }
      releases.set(release, hash)
    }
  }
  return problems
}

/** Where a `JSON.parse` error points, as an offset into the text. */
const syntaxErrorOffset = (error: Error, text: string): number => {
  const position = /at position (\d+)/.exec(error.message)
  return position === null ? text.length : Number(position[1])
}

const lineColumnAt = (text: string, offset: number) => {
  const before = text.slice(0, offset)
  const line = before.split("\n").length
  return { line, column: offset - before.lastIndexOf("\n") }
}

/** A lock file as read: its entries, or every problem found in it (then no entries). */
export interface LockReading {
  readonly lock: LockFile
  readonly diagnostics: readonly Diagnostic[]
}

/**
 * Checks a lock file's text and returns its entries, or every problem with `file:line:column`.
 *
 * @example
 * const { lock, diagnostics } = parseLockFile("manifests/akter.lock.json", text)
 */
export const parseLockFile = (file: string, text: string): LockReading => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    const { line, column } = lineColumnAt(text, syntaxErrorOffset(error as Error, text))
    return {
      lock: EMPTY_LOCK,
      diagnostics: [
        {
          file,
          line,
          column,
          rule: "lock-syntax",
          severity: "error",
          message: `not valid JSON: ${(error as Error).message}`,
          hint: "resolve merge conflicts by keeping the entries of both sides, or restore the file from version control",
          path: "",
        },
      ],
    }
  }
  const problems = documentProblems(value)
  if (problems.length > 0) {
    const { positions } = readPositioned(file, text)
    return {
      lock: EMPTY_LOCK,
      diagnostics: problems.map((problem) =>
        locatedError(file, positions, problem.path, problem.rule, problem.message, problem.hint),
      ),
    }
  }
  const owners = (value as { owners: Record<string, Record<string, Record<string, unknown>>> })
    .owners
  const entries: LockedManifest[] = []
  for (const [owner, byHash] of Object.entries(owners)) {
    for (const [hash, entry] of Object.entries(byHash)) {
      entries.push({
        owner,
        hash: hash as Hash,
        release: entry["release"] as number,
        manifest: entry["manifest"] as CanonicalOwner,
      })
    }
  }
  return { lock: { entries: sortEntries(entries) }, diagnostics: [] }
}

/**
 * Reads the lock file at `path` (absolute; `file` is how reports name it). `undefined` when there
 * is no such file.
 */
export const readLockFile = async (
  path: string,
  file: string,
): Promise<LockReading | undefined> => {
  const text = await readTextIfPresent(path)
  return text === undefined ? undefined : parseLockFile(file, text)
}

// ── releasing and pruning ─────────────────────────────────────────────────────────────────────

/** The entry with the highest release of each owner type, by owner. */
export const newestEntries = (lock: LockFile): Map<string, LockedManifest> => {
  const newest = new Map<string, LockedManifest>()
  for (const entry of lock.entries) {
    const seen = newest.get(entry.owner)
    if (seen === undefined || entry.release > seen.release) newest.set(entry.owner, entry)
  }
  return newest
}

export interface ReleaseOutcome {
  readonly lock: LockFile
  /** Manifests not locked before, now each owner's newest release. */
  readonly added: readonly LockedManifest[]
  /** Manifests locked before under an older release, made the newest again (a rollback released). */
  readonly released: readonly LockedManifest[]
}

/**
 * Records the current manifests as released: each becomes its owner type's newest entry, appended
 * when it is not locked yet; a manifest that is already the newest is left as it is.
 *
 * @example
 * const { lock, added } = appendReleases(current, loaded.map((m) => canonicalOwner(m.manifest)))
 */
export const appendReleases = (
  lock: LockFile,
  owners: readonly CanonicalOwner[],
): ReleaseOutcome => {
  const newest = newestEntries(lock)
  let entries = [...lock.entries]
  const added: LockedManifest[] = []
  const released: LockedManifest[] = []
  for (const manifest of owners) {
    const hash = ownerHash(manifest)
    const latest = newest.get(manifest.owner)
    if (latest?.hash === hash) continue
    const entry: LockedManifest = {
      owner: manifest.owner,
      hash,
      release: (latest?.release ?? 0) + 1,
      manifest,
    }
    const locked = entries.some((e) => e.owner === manifest.owner && e.hash === hash)
    entries = [...entries.filter((e) => !(e.owner === manifest.owner && e.hash === hash)), entry]
    ;(locked ? released : added).push(entry)
  }
  return { lock: { entries: sortEntries(entries) }, added, released }
}

export interface PruneOutcome {
  readonly lock: LockFile
  readonly pruned: readonly LockedManifest[]
}

/**
 * Drops the entries no open execution uses. A workflow's locked manifest is in use when an open
 * execution's start manifest hash is that workflow's compatibility hash; an entry is kept while any
 * of its workflows is in use. The newest entry of every owner type still declared in `declared` is
 * kept as well: it is what runs now. An owner type removed from the manifests loses its entries
 * once its executions have drained.
 *
 * @example
 * const { lock, pruned } = pruneUnused(current, await readManifestsInUse(db), new Set(["Order"]))
 */
export const pruneUnused = (
  lock: LockFile,
  inUse: readonly Omit<ManifestInUse, "concurrencyKey">[],
  declared: ReadonlySet<string>,
): PruneOutcome => {
  const used = new Set(inUse.map((row) => JSON.stringify([row.owner, row.workflow, row.hash])))
  const newest = newestEntries(lock)
  const kept: LockedManifest[] = []
  const pruned: LockedManifest[] = []
  for (const entry of lock.entries) {
    const isNewest = newest.get(entry.owner) === entry && declared.has(entry.owner)
    const isUsed = Object.entries(entry.manifest.workflows).some(([workflow, canonical]) =>
      used.has(JSON.stringify([entry.owner, workflow, workflowHashes(canonical).compatibility])),
    )
    ;(isNewest || isUsed ? kept : pruned).push(entry)
  }
  return { lock: { entries: kept }, pruned }
}
