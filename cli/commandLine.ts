/**
 * What every akter command does with its arguments: `node:util` `parseArgs` with the command's
 * options, `--help`, and a usage error (exit 2) that names the bad argument and shows the usage.
 */
import { parseArgs, type ParseArgsConfig } from "node:util"

/** Exit codes every command keeps: 0 success, 1 the answer is "no" (stale, breaking), 2 bad input. */
export const EXIT_OK = 0
export const EXIT_NO = 1
export const EXIT_INVALID = 2

export type OptionSpec = NonNullable<ParseArgsConfig["options"]>

export interface CommandSpec<Options extends OptionSpec> {
  /** `generate`, as in `akter generate`. */
  readonly name: string
  /** One paragraph: what the command does. */
  readonly summary: string
  readonly options: Options
  /** One line per option, in the order `--help` shows them. */
  readonly optionHelp: readonly (readonly [string, string])[]
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = "UsageError"
  }
}

export const usageText = (spec: CommandSpec<OptionSpec>): string => {
  const width = Math.max(...spec.optionHelp.map(([flag]) => flag.length))
  return [
    `usage: akter ${spec.name} [options]`,
    "",
    spec.summary,
    "",
    "options:",
    ...spec.optionHelp.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`),
  ].join("\n")
}

export type ParsedOptions<Options extends OptionSpec> = ReturnType<
  typeof parseArgs<{ options: Options; strict: true; allowPositionals: false }>
>["values"]

/**
 * Parses the arguments; `undefined` when `--help` was asked for (the usage is then printed).
 * Throws `UsageError` on an unknown option, a missing value or a positional argument.
 */
export const parseCommandLine = <Options extends OptionSpec>(
  spec: CommandSpec<Options>,
  args: readonly string[],
): ParsedOptions<Options> | undefined => {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(usageText(spec))
    return undefined
  }
  try {
    return parseArgs({
      args: [...args],
      options: spec.options,
      strict: true,
      allowPositionals: false,
    }).values as ParsedOptions<Options>
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

/** The options every command that reads manifests takes, with their `--help` lines. */
export const MANIFESTS_OPTION = {
  spec: { manifests: { type: "string" } },
  help: [
    "--manifests DIR",
    'manifest folder (default: package.json "akter.manifests", else manifests/)',
  ],
} as const

export const FORMAT_OPTION = {
  spec: { format: { type: "string" } },
  help: (json: string) => ["--format text|json", json] as const,
} as const

export const HELP_LINE = ["--help", "show this help"] as const

/** `--format text|json`, checked. */
export const outputFormat = (value: string | undefined): "text" | "json" => {
  if (value === undefined || value === "text") return "text"
  if (value === "json") return "json"
  throw new UsageError(`--format must be text or json, not ${JSON.stringify(value)}`)
}

/**
 * Runs a command body, turning a `UsageError` into its message plus the usage on stderr and exit 2,
 * and any other failure into its message and exit 2 (a crash never exits 1, which means "no").
 */
export const runCommand = async (
  spec: CommandSpec<OptionSpec>,
  body: () => Promise<number>,
): Promise<number> => {
  try {
    return await body()
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`akter ${spec.name}: ${error.message}\n\n${usageText(spec)}`)
    } else {
      console.error(`akter ${spec.name}: ${error instanceof Error ? error.message : String(error)}`)
    }
    return EXIT_INVALID
  }
}
