/**
 * `akter lock`: the release step. Records every current manifest in the lock file as released (the
 * newest entry of its owner type), so that `akter check` compares later manifests against it for as
 * long as executions started under it may be in flight. `--prune --database-url` then drops the
 * locked manifests no open execution uses, and reports the declared migrations of recorded data that
 * neither the lock entries left nor the open executions need any more (they can be retired).
 */
import { rename, writeFile } from "node:fs/promises"
import { canonicalOwner } from "../runtime/model/canonicalManifest.js"
import { outputFormatOf, printInvalidInput, runReporting } from "./commandOutput.js"
import { readManifestsInUse } from "../runtime/runner/startupCheck.js"
import {
  databaseUrlProblem,
  describeTarget,
  readOpenSnapshot,
  withDatabase,
} from "./databaseSession.js"
import { checkProject, currentManifests } from "./compatibility/checkProject.js"
import {
  describeMigration,
  retirableMigrations,
  type RetirableMigration,
} from "./compatibility/retirableMigrations.js"
import {
  EMPTY_LOCK,
  LOCK_OPTION,
  lockFileLocation,
  appendReleases,
  pruneUnused,
  readLockFile,
  renderLockFile,
  type LockedManifest,
} from "./compatibility/lockFile.js"
import { readTextIfPresent } from "./compatibility/positionedDocument.js"
import { slowProgress } from "./slowProgress.js"
import { loadManifests } from "../codegen/manifest/loadManifests.js"
import {
  EXIT_OK,
  HELP_LINE,
  MANIFESTS_OPTION,
  UsageError,
  parseCommandLine,
  type CommandSpec,
} from "./commandLine.js"
import { projectFolders } from "./projectConfig.js"

const spec = {
  name: "lock",
  summary:
    "Records the current manifests as released in the lock file (appended as each owner type's newest release, if not already), which akter check compares every later manifest against. With --prune --database-url, also drops the locked manifests no open execution uses, and reports the declared migrations of recorded data (earlier: shapes) that no lock entry left and no open execution needs: they can be retired.",
  options: {
    ...MANIFESTS_OPTION.spec,
    ...LOCK_OPTION.spec,
    prune: { type: "boolean" },
    "database-url": { type: "string" },
    format: { type: "string" },
  },
  optionHelp: [
    MANIFESTS_OPTION.help,
    LOCK_OPTION.help,
    [
      "--prune",
      "drop locked manifests no open execution uses (the newest of each declared owner type stays), and report the migrations (earlier: shapes) nothing needs any more",
    ],
    [
      "--database-url URL",
      "the Postgres database whose open executions --prune keeps (required with --prune)",
    ],
    ["--format text|json", "json prints { lockFile, changed, added, released, pruned, retirable }"],
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

const summaryOf = (entry: LockedManifest) => ({
  owner: entry.owner,
  hash: entry.hash,
  release: entry.release,
})

/** Replaces the file at once: a crash mid-write never leaves half a lock file. */
const writeAtomically = async (file: string, text: string) => {
  const temporary = `${file}.${process.pid}.tmp`
  await writeFile(temporary, text)
  await rename(temporary, file)
}

export const run = (args: readonly string[]): Promise<number> =>
  runReporting(spec, args, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const format = outputFormatOf(options.format, ["text", "json"] as const)
    const databaseUrl = options["database-url"]
    if (options.prune === true && databaseUrl === undefined) {
      throw new UsageError(
        "--prune needs --database-url: only the open executions say which locked manifests are still in use",
      )
    }
    if (options.prune !== true && databaseUrl !== undefined) {
      throw new UsageError("--database-url is only read by --prune")
    }
    if (databaseUrl !== undefined) {
      const problem = databaseUrlProblem(databaseUrl)
      if (problem !== undefined) throw new UsageError(problem)
    }
    const cwd = process.cwd()
    const folders = await projectFolders({ cwd, manifests: options.manifests })
    const { path: lockPath, file: lockFile } = lockFileLocation(folders, cwd, options.lock)

    const loaded = await loadManifests({ dir: folders.manifestsDir, root: folders.root })
    const reading = await readLockFile(lockPath, lockFile)
    const invalid = [
      ...loaded.diagnostics.filter((d) => d.severity === "error"),
      ...(reading?.diagnostics ?? []),
    ]
    if (invalid.length > 0) return printInvalidInput(spec.name, format, invalid)

    const owners = loaded.manifests.map((manifest) => canonicalOwner(manifest.manifest))
    const released = appendReleases(reading?.lock ?? EMPTY_LOCK, owners)
    let lock = released.lock
    let pruned: readonly LockedManifest[] = []
    let retirable: readonly RetirableMigration[] = []
    if (databaseUrl !== undefined) {
      const { inUse, open } = await withDatabase(
        { databaseUrl },
        slowProgress(spec.name),
        async (storage) => ({
          inUse: await readManifestsInUse(storage.db),
          open: await readOpenSnapshot(storage.db),
        }),
      )
      const outcome = pruneUnused(lock, inUse, new Set(owners.map((owner) => owner.owner)))
      lock = outcome.lock
      pruned = outcome.pruned
      // A migration is needed while the check of what stays locked and what is open reads through it.
      const current = currentManifests(loaded.manifests)
      const { findings } = checkProject({ current, lock, rollback: false, open })
      retirable = retirableMigrations(current, findings)
    }
    const text = renderLockFile(lock)
    const changed = text !== (await readTextIfPresent(lockPath))
    if (changed) await writeAtomically(lockPath, text)

    if (format === "json") {
      console.log(
        JSON.stringify(
          {
            lockFile,
            changed,
            added: released.added.map(summaryOf),
            released: released.released.map(summaryOf),
            pruned: pruned.map(summaryOf),
            retirable: retirable.map(({ path: _path, ...migration }) => migration),
          },
          null,
          2,
        ),
      )
      return EXIT_OK
    }
    const files = new Map(loaded.manifests.map((m) => [m.manifest.owner, m.file]))
    for (const entry of released.added) {
      console.log(
        `+ ${entry.owner} release ${entry.release} ${entry.hash} (${files.get(entry.owner)})`,
      )
    }
    for (const entry of released.released) {
      console.log(
        `+ ${entry.owner} release ${entry.release} ${entry.hash} (${files.get(entry.owner)}, locked before under an older release)`,
      )
    }
    for (const entry of pruned) {
      console.log(
        `- ${entry.owner} release ${entry.release} ${entry.hash} (no open execution in ${describeTarget({ databaseUrl: databaseUrl! })} uses it)`,
      )
    }
    for (const migration of retirable) {
      const at = migration.location
      console.log(
        `~ ${describeMigration(migration)} can be retired${at === undefined ? "" : ` (${at.file}:${at.line}:${at.column})`}: no lock entry and no open execution recorded its shape; remove it from the manifest and its function from the implementation`,
      )
    }
    const counts = [
      `${released.added.length + released.released.length} released`,
      ...(options.prune === true
        ? [
            `${pruned.length} pruned`,
            `${retirable.length} ${retirable.length === 1 ? "migration" : "migrations"} retirable`,
          ]
        : []),
      `${lock.entries.length} locked`,
    ].join(", ")
    console.log(`akter lock: ${lockFile} ${changed ? "written" : "unchanged"} (${counts})`)
    return EXIT_OK
  })
