/**
 * `akter diff`: every change between the last release (the newest locked manifest of each owner
 * type) and `manifests/`, breaking or not, for review: workflows, steps, markers, events and errors
 * added or removed, kinds changed, and type changes down to the field. Whether a change breaks
 * executions in flight is `akter check`'s question.
 */
import { ownerHash } from "../runtime/model/canonicalManifest.js"
import { currentManifests } from "./compatibility/checkProject.js"
import { outputFormatOf, printInvalidInput, runReporting } from "./commandOutput.js"
import {
  EMPTY_LOCK,
  LOCK_OPTION,
  lockFileLocation,
  newestEntries,
  readLockFile,
} from "./compatibility/lockFile.js"
import { diffManifests, formatChange, type ManifestChange } from "./compatibility/manifestDiff.js"
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
  name: "diff",
  summary:
    "Prints every change between the newest locked manifest of each owner type and the manifests, breaking or not, each located in the manifest: + added, - removed, ~ changed.",
  options: {
    ...MANIFESTS_OPTION.spec,
    ...LOCK_OPTION.spec,
    format: { type: "string" },
  },
  optionHelp: [
    MANIFESTS_OPTION.help,
    LOCK_OPTION.help,
    [
      "--format text|json",
      "json prints { lockFile, owners: [{ owner, file, locked, current, changes }] }",
    ],
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

interface OwnerDiff {
  readonly owner: string
  readonly file?: string
  readonly locked?: { readonly hash: string; readonly release: number }
  readonly current?: { readonly hash: string }
  readonly changes: readonly ManifestChange[]
}

export const run = (args: readonly string[]): Promise<number> =>
  runReporting(spec, args, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const format = outputFormatOf(options.format, ["text", "json"] as const)
    const cwd = process.cwd()
    const folders = await projectFolders({ cwd, manifests: options.manifests })
    const { path: lockPath, file: lockFile } = lockFileLocation(folders, cwd, options.lock)
    const loaded = await loadManifests({ dir: folders.manifestsDir, root: folders.root })
    const reading = await readLockFile(lockPath, lockFile)
    if (reading === undefined && options.lock !== undefined) {
      throw new UsageError(`there is no lock file ${lockFile}`)
    }
    const invalid = [
      ...loaded.diagnostics.filter((d) => d.severity === "error"),
      ...(reading?.diagnostics ?? []),
    ]
    if (invalid.length > 0) return printInvalidInput(spec.name, format, invalid)

    const current = currentManifests(loaded.manifests)
    const files = new Map(loaded.manifests.map((m) => [m.manifest.owner, m.file]))
    const newest = newestEntries(reading?.lock ?? EMPTY_LOCK)
    const names = [...new Set([...newest.keys(), ...current.owners.keys()])].sort()
    const owners: OwnerDiff[] = names.map((owner) => {
      const locked = newest.get(owner)
      const now = current.owners.get(owner)
      const file = files.get(owner)
      return {
        owner,
        ...(file === undefined ? {} : { file }),
        ...(locked === undefined ? {} : { locked: { hash: locked.hash, release: locked.release } }),
        ...(now === undefined ? {} : { current: { hash: ownerHash(now) } }),
        changes: diffManifests(locked?.manifest, now, (at) => current.locate(owner, at)),
      }
    })

    if (format === "json") {
      console.log(JSON.stringify({ lockFile, owners }, null, 2))
      return EXIT_OK
    }
    if (reading === undefined) {
      console.log(
        `no lock file ${lockFile}: every manifest is new (\`akter lock\` records a release)`,
      )
    }
    for (const owner of owners) {
      const against =
        owner.locked === undefined
          ? "not locked yet"
          : `against release ${owner.locked.release} (${owner.locked.hash}) of ${lockFile}`
      const changes = owner.changes.length
      console.log(
        `${owner.owner}: ${owner.file ?? "no manifest"} ${against}: ${changes === 0 ? "no changes" : `${changes} change${changes === 1 ? "" : "s"}`}`,
      )
      for (const change of owner.changes) console.log(`  ${formatChange(change)}`)
    }
    return EXIT_OK
  })
