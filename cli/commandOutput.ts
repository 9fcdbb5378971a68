/**
 * How the compatibility commands (`check`, `lock`, `diff`, `migrate`) end when they cannot do their
 * work: invalid input printed located in the format asked for, any other failure printed as one
 * error, and exit 2 either way, so that a tool reading JSON or GitHub annotations sees the problem
 * too, and a crash is never taken for the "breaking" exit 1.
 */
import { githubAnnotation } from "../runtime/compatibility/report.js"
import { formatDiagnostic, type Diagnostic } from "../codegen/manifest/diagnostics.js"
import {
  EXIT_INVALID,
  UsageError,
  usageText,
  type CommandSpec,
  type OptionSpec,
} from "./commandLine.js"

export type OutputFormat = "text" | "json" | "github"

/**
 * The `--format` value, checked against the formats a command supports.
 *
 * @example
 * outputFormatOf("github", ["text", "json", "github"]) // "github"
 */
export const outputFormatOf = <F extends OutputFormat>(
  value: string | undefined,
  allowed: readonly F[],
): F => {
  if (value === undefined) return allowed[0]!
  if ((allowed as readonly string[]).includes(value)) return value as F
  throw new UsageError(`--format must be ${allowed.join(", ")}, not ${JSON.stringify(value)}`)
}

/** The format asked for on a command line that may not parse: `--format X` or `--format=X`. */
const requestedFormat = (args: readonly string[]): OutputFormat => {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const value =
      arg === "--format" ? args[i + 1] : arg.startsWith("--format=") ? arg.slice(9) : undefined
    if (value === "json" || value === "github") return value
  }
  return "text"
}

/**
 * Prints located problems with the command's input (manifests, lock file, ignore file): as
 * `file:line:column: error[rule] message` lines, as `{ exitCode: 2, diagnostics }`, or as GitHub
 * error annotations. Returns exit code 2.
 *
 * @example
 * if (diagnostics.length > 0) return printInvalidInput("check", format, diagnostics)
 */
export const printInvalidInput = (
  command: string,
  format: OutputFormat,
  diagnostics: readonly Diagnostic[],
): number => {
  if (format === "json") {
    console.log(JSON.stringify({ exitCode: EXIT_INVALID, diagnostics }, null, 2))
  } else if (format === "github") {
    for (const d of diagnostics) {
      console.log(
        githubAnnotation(
          d.severity === "error" ? "error" : "warning",
          [
            ["file", d.file],
            ["line", d.line],
            ["col", d.column],
            ["title", d.rule],
          ],
          d.hint === undefined ? d.message : `${d.message}\nhint: ${d.hint}`,
        ),
      )
    }
  } else {
    for (const d of diagnostics) console.log(formatDiagnostic(d))
  }
  const errors = diagnostics.filter((d) => d.severity === "error").length
  console.error(
    `akter ${command}: ${errors} error${errors === 1 ? "" : "s"} in the input; nothing was done`,
  )
  return EXIT_INVALID
}

const printFailure = (spec: CommandSpec<OptionSpec>, format: OutputFormat, error: unknown) => {
  const message = error instanceof Error ? error.message : String(error)
  if (format === "json") {
    console.log(JSON.stringify({ exitCode: EXIT_INVALID, error: message }, null, 2))
  } else if (format === "github") {
    console.log(githubAnnotation("error", [["title", `akter ${spec.name}`]], message))
  }
  console.error(
    error instanceof UsageError
      ? `akter ${spec.name}: ${message}\n\n${usageText(spec)}`
      : `akter ${spec.name}: ${message}`,
  )
}

/**
 * Runs a command body; any failure (a usage error, an unreachable database, a bug) is printed in
 * the format the command line asked for and ends with exit 2, never 1.
 *
 * @example
 * export const run = (args: readonly string[]) => runReporting(spec, args, async () => { … })
 */
export const runReporting = async (
  spec: CommandSpec<OptionSpec>,
  args: readonly string[],
  body: () => Promise<number>,
): Promise<number> => {
  try {
    return await body()
  } catch (error) {
    printFailure(spec, requestedFormat(args), error)
    return EXIT_INVALID
  }
}
