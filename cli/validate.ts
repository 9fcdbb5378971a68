/**
 * `akter validate`: checks every manifest, and the names they would generate, and prints each
 * problem located to the character. Exit 2 on any error, 0 otherwise (warnings are printed too).
 */
import { formatDiagnostic } from "../codegen/manifest/diagnostics.js"
import { projectPath, validateManifests } from "../codegen/emit/generate.js"
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
  name: "validate",
  summary:
    "Checks every manifest of the manifest folder and prints each problem as file:line:column: error[rule] message, with a hint.",
  options: { ...MANIFESTS_OPTION.spec, ...FORMAT_OPTION.spec },
  optionHelp: [
    MANIFESTS_OPTION.help,
    FORMAT_OPTION.help("json prints { ok, diagnostics: [...] }"),
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const format = outputFormat(options.format)
    const folders = await projectFolders({ cwd: process.cwd(), manifests: options.manifests })
    const { manifests, diagnostics } = await validateManifests(folders)
    const ok = !diagnostics.some((d) => d.severity === "error")
    if (format === "json") {
      console.log(JSON.stringify({ ok, diagnostics }, null, 2))
    } else {
      for (const diagnostic of diagnostics) console.log(formatDiagnostic(diagnostic))
      const errors = diagnostics.filter((d) => d.severity === "error").length
      const folder = projectPath(folders.root, folders.manifestsDir)
      console.log(
        ok
          ? `akter validate: ${manifests.length} manifest${manifests.length === 1 ? "" : "s"} in ${folder}/ valid`
          : `akter validate: ${errors} error${errors === 1 ? "" : "s"} in ${folder}/`,
      )
    }
    return ok ? EXIT_OK : EXIT_INVALID
  })
