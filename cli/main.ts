/**
 * The `akter` command: dispatches to one module per command, loaded only when that command runs, so
 * `akter run` never loads the code generator, and `--help` and `--version` load no command at all.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { PACKAGE_ROOT } from "../runtime/packageFiles.js"

export interface Command {
  readonly summary: string
  readonly load: () => Promise<{ readonly run: (args: readonly string[]) => Promise<number> }>
}

const commands: Readonly<Record<string, Command>> = {
  init: {
    summary: "scaffold a project: a first manifest, an app, a main, npm scripts and .gitignore",
    load: () => import("./init.js"),
  },
  validate: {
    summary: "check the manifests and print every problem, located",
    load: () => import("./validate.js"),
  },
  generate: {
    summary: "write the typed SDK of the manifests (--check: is it fresh? --watch: keep it fresh)",
    load: () => import("./generate.js"),
  },
  hash: {
    summary: "print the manifest hash and every workflow fingerprint",
    load: () => import("./hash.js"),
  },
  run: {
    summary: "serve the workflow implementations a module exports, until SIGTERM",
    load: () => import("./run.js"),
  },
  diff: {
    summary: "print every change between the last released manifests and the manifests",
    load: () => import("./diff.js"),
  },
  check: {
    summary:
      "prove the manifests can still run every released manifest's executions (exit 1: breaking)",
    load: () => import("./check.js"),
  },
  lock: {
    summary: "record the manifests as released (--prune --database-url: drop unused ones)",
    load: () => import("./lock.js"),
  },
  migrate: {
    summary: "apply akter's database migrations",
    load: () => import("./migrate.js"),
  },
  dev: {
    summary: "serve the embedded database to other processes and run the app's workflows on it",
    load: () => import("./dev.js"),
  },
  inspect: {
    summary: "list executions, or show one with its steps, markers and timer (read-only)",
    load: () => import("./inspect.js"),
  },
  schedule: {
    summary: "list the schedules runners tick, or pause or resume one",
    load: () => import("./schedule.js"),
  },
  studio: {
    summary: "serve the web dashboard of executions, owners and runners on 127.0.0.1",
    load: () => import("./studio.js"),
  },
}

const usage = (available: Readonly<Record<string, Command>>): string => {
  const width = Math.max(0, ...Object.keys(available).map((name) => name.length))
  const lines = Object.entries(available).map(
    ([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`,
  )
  return [
    "akter: durable workflows declared in YAML",
    "",
    "usage: akter <command> [options]   (akter <command> --help for its options)",
    "       akter --version",
    "",
    ...lines,
  ].join("\n")
}

/** The version of the installed akter package. */
export const packageVersion = (): string =>
  (JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string })
    .version

/**
 * Runs the CLI; resolves to the process exit code. `extraCommands` are those only akter's own
 * repository has (the demo, which runs the repository's examples).
 */
export const main = async (
  argv: readonly string[],
  extraCommands: Readonly<Record<string, Command>> = {},
): Promise<number> => {
  const available = { ...commands, ...extraCommands }
  const [name, ...rest] = argv
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(usage(available))
    return name === undefined ? 2 : 0
  }
  if (name === "--version" || name === "-v" || name === "version") {
    console.log(packageVersion())
    return 0
  }
  const command = available[name]
  if (command === undefined) {
    const hint =
      name === "demo"
        ? "akter demo runs the examples of akter's repository: clone it, then `npm ci && npm start`"
        : `unknown command "${name}"`
    console.error(`akter: ${hint}\n\n${usage(available)}`)
    return 2
  }
  const module = await command.load()
  return module.run(rest)
}
