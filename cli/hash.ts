/**
 * `akter hash`: prints, per owner, the manifest hash that heads its generated files, and per
 * workflow the compatibility hash and the input, output and step fingerprints the runtime and
 * `akter check` compare.
 */
import { canonicalOwner, ownerHash, workflowHashes } from "../runtime/model/canonicalManifest.js"
import type { WorkflowHashes } from "../runtime/model/canonicalManifest.js"
import { formatDiagnostic } from "../codegen/manifest/diagnostics.js"
import { validateManifests } from "../codegen/emit/generate.js"
import {
  EXIT_INVALID,
  EXIT_OK,
  FORMAT_OPTION,
  HELP_LINE,
  MANIFESTS_OPTION,
  outputFormat,
  parseCommandLine,
  runCommand,
  type CommandSpec,
} from "./commandLine.js"
import { projectFolders } from "./projectConfig.js"

const spec = {
  name: "hash",
  summary:
    "Prints the hash of every manifest and, per workflow, its compatibility hash and the fingerprints of its input, output and steps.",
  options: { ...MANIFESTS_OPTION.spec, ...FORMAT_OPTION.spec },
  optionHelp: [
    MANIFESTS_OPTION.help,
    FORMAT_OPTION.help("json prints { ok, owners: [{ owner, file, hash, workflows }] }"),
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

export interface OwnerHashes {
  readonly owner: string
  readonly file: string
  readonly hash: string
  readonly workflows: Readonly<Record<string, WorkflowHashes>>
}

const textReport = (owners: readonly OwnerHashes[]): string => {
  const lines: string[] = []
  for (const owner of owners) {
    lines.push(`${owner.owner} (${owner.file})`, `  manifest  ${owner.hash}`)
    for (const [workflow, hashes] of Object.entries(owner.workflows)) {
      const rows: [string, string][] = [
        ["compatibility", hashes.compatibility],
        ["input", hashes.input],
        ["output", hashes.output],
        ...Object.entries(hashes.steps).map(([step, hash]): [string, string] => [
          `step ${step}`,
          hash,
        ]),
      ]
      const width = Math.max(...rows.map(([label]) => label.length))
      lines.push(
        `  workflow ${workflow}`,
        ...rows.map(([label, hash]) => `    ${label.padEnd(width)}  ${hash}`),
      )
    }
  }
  return lines.join("\n")
}

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const format = outputFormat(options.format)
    const folders = await projectFolders({ cwd: process.cwd(), manifests: options.manifests })
    const { manifests, diagnostics } = await validateManifests(folders)
    if (diagnostics.some((d) => d.severity === "error")) {
      if (format === "json") console.log(JSON.stringify({ ok: false, diagnostics }, null, 2))
      else for (const diagnostic of diagnostics) console.error(formatDiagnostic(diagnostic))
      return EXIT_INVALID
    }
    const owners: OwnerHashes[] = manifests.map(({ file, manifest }) => {
      const canonical = canonicalOwner(manifest)
      const workflows: Record<string, WorkflowHashes> = {}
      for (const [name, workflow] of Object.entries(canonical.workflows)) {
        workflows[name] = workflowHashes(workflow)
      }
      return { owner: manifest.owner, file, hash: ownerHash(canonical), workflows }
    })
    if (format === "json") console.log(JSON.stringify({ ok: true, owners }, null, 2))
    else console.log(textReport(owners))
    return EXIT_OK
  })
