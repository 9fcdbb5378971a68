/**
 * The `akter` command: dispatches to one module per command, loaded only when that command runs, so
 * `akter run` never loads the code generator.
 */
interface Command {
  readonly summary: string
  readonly load: () => Promise<{ readonly run: (args: readonly string[]) => Promise<number> }>
}

const commands: Readonly<Record<string, Command>> = {
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
  inspect: {
    summary: "list executions, or show one with its steps, markers and timer (read-only)",
    load: () => import("./inspect.js"),
  },
  demo: {
    summary:
      "the main job: hundreds of executions on embedded PGlite through a runner killed halfway",
    load: () => import("./demo.js"),
  },
}

const usage = (): string => {
  const width = Math.max(0, ...Object.keys(commands).map((name) => name.length))
  const lines = Object.entries(commands).map(
    ([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`,
  )
  return [
    "akter: durable workflows declared in YAML",
    "",
    "usage: akter <command> [options]   (akter <command> --help for its options)",
    "",
    ...lines,
  ].join("\n")
}

/** Runs the CLI; resolves to the process exit code. */
export const main = async (argv: readonly string[]): Promise<number> => {
  const [name, ...rest] = argv
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(usage())
    return name === undefined ? 2 : 0
  }
  const command = commands[name]
  if (command === undefined) {
    console.error(`akter: unknown command "${name}"\n\n${usage()}`)
    return 2
  }
  const module = await command.load()
  return module.run(rest)
}
