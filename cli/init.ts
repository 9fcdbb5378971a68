/**
 * `akter init`: scaffolds a project in the current folder — a first manifest (with the comment that
 * gives editors its JSON Schema), an implementation, a main that starts an execution, npm scripts,
 * a tsconfig.json and a .gitignore that keeps `.akter/` (the embedded database and generate's
 * cache) out of git. It never overwrites: an existing file is kept and reported, an existing
 * package.json only gains the scripts it lacks.
 */
import { existsSync } from "node:fs"
import { mkdir, readFile, writeFile } from "node:fs/promises"
import { basename, dirname, join, resolve } from "node:path"
import {
  EXIT_OK,
  HELP_LINE,
  UsageError,
  parseCommandLine,
  runCommand,
  type CommandSpec,
} from "./commandLine.js"

const spec = {
  name: "init",
  summary:
    "Scaffolds an akter project in the current folder: manifests/account.yaml, src/app.ts (its implementation), src/main.ts (starts an execution and prints its result), npm scripts, tsconfig.json and .gitignore. Existing files are kept; package.json only gains the scripts it lacks. Then install the dependencies it prints and run `npm run build && npm start`.",
  options: {},
  optionHelp: [HELP_LINE],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

const MANIFEST = `# yaml-language-server: $schema=../generated/manifest.schema.json
akter: 1
owner: Account
description: The entity these workflows belong to. Rename it, then add events, types and steps.

workflows:
  welcome:
    description: Composes a welcome message for a new account.
    input: { accountId: string, name: string }
    output: { message: string }
    key: accountId
    steps:
      compose:
        kind: activity
        input: { name: string }
        output: { message: string }
        retry: { attempts: 3, initial: 1s }
`

const APP = `import { Effect } from "effect"
import { Account } from "../generated/index.js"

export const welcome = Account.welcome.implement({
  activities: {
    // An activity is ordinary code (an email, an API call); its result is recorded once.
    compose: async ({ name }) => ({ message: \`Welcome, \${name}!\` }),
  },
  body: (input, wf) =>
    Effect.gen(function* () {
      const { message } = yield* wf.compose({ name: input.name })
      return { message }
    }),
})

/** What \`akter run dist/src/app.js\` serves. */
export const workflows = [welcome]
`

const MAIN = `import { createAkter, startRunner } from "akter"
import { Account } from "../generated/index.js"
import { workflows } from "./app.js"

// Without DATABASE_URL: embedded PGlite in .akter/pglite. With it: Postgres.
const akter = await createAkter({ databaseUrl: process.env.DATABASE_URL })
const runner = await startRunner({ akter, workflows })

const execution = await Account.client(akter).welcome.start("a-1", { accountId: "a-1", name: "Ada" })
console.log(await execution.result({ timeout: "30 seconds" }))

await runner.close()
await akter.close()
`

const TSCONFIG = `${JSON.stringify(
  {
    compilerOptions: {
      module: "nodenext",
      target: "es2023",
      lib: ["es2023"],
      types: ["node"],
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      verbatimModuleSyntax: true,
      skipLibCheck: true,
      rootDir: ".",
      outDir: "dist",
    },
    include: ["src", "generated"],
  },
  null,
  2,
)}\n`

const SCRIPTS: Readonly<Record<string, string>> = {
  generate: "akter generate",
  build: "akter generate && tsc",
  start: "node dist/src/main.js",
  runner: "akter run dist/src/app.js",
  check: "akter generate --check && akter check",
}

const IGNORED = [".akter/", "node_modules/", "dist/"]

type Outcome = "created" | "kept" | "updated"

const writeNew = async (root: string, path: string, text: string): Promise<Outcome> => {
  const file = join(root, path)
  if (existsSync(file)) return "kept"
  await mkdir(dirname(file), { recursive: true })
  await writeFile(file, text, { flag: "wx" })
  return "created"
}

/** Adds the scripts the package.json lacks, and `"type": "module"` (generated code is ESM). */
const preparePackageJson = async (root: string): Promise<Outcome> => {
  const file = join(root, "package.json")
  if (!existsSync(file)) {
    const manifest = { name: basename(root), private: true, type: "module", scripts: SCRIPTS }
    await writeFile(file, `${JSON.stringify(manifest, null, 2)}\n`, { flag: "wx" })
    return "created"
  }
  const text = await readFile(file, "utf8")
  let manifest: Record<string, unknown>
  try {
    manifest = JSON.parse(text) as Record<string, unknown>
  } catch (error) {
    throw new UsageError(`${file} is not valid JSON: ${(error as Error).message}`)
  }
  if (manifest["type"] !== undefined && manifest["type"] !== "module") {
    throw new UsageError(
      `${file} says "type": ${JSON.stringify(manifest["type"])}; akter's generated SDK is ES modules, so the project needs "type": "module"`,
    )
  }
  const scripts = { ...(manifest["scripts"] as Record<string, string> | undefined) }
  const missing = Object.entries(SCRIPTS).filter(([name]) => scripts[name] === undefined)
  if (missing.length === 0 && manifest["type"] === "module") return "kept"
  for (const [name, command] of missing) scripts[name] = command
  const indent = /^[ \t]+/m.exec(text)?.[0] ?? "  "
  const updated = { ...manifest, type: "module", scripts }
  await writeFile(file, `${JSON.stringify(updated, null, indent)}\n`)
  return "updated"
}

/** Appends to .gitignore the entries it lacks. */
const prepareGitignore = async (root: string): Promise<Outcome> => {
  const file = join(root, ".gitignore")
  const text = existsSync(file) ? await readFile(file, "utf8") : undefined
  const present = new Set((text ?? "").split(/\r?\n/).map((line) => line.trim()))
  const missing = IGNORED.filter(
    (entry) => !present.has(entry) && !present.has(entry.replace(/\/$/, "")),
  )
  if (missing.length === 0) return "kept"
  const prefix = text === undefined || text === "" || text.endsWith("\n") ? "" : "\n"
  await writeFile(file, `${text ?? ""}${prefix}${missing.join("\n")}\n`)
  return text === undefined ? "created" : "updated"
}

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const root = resolve(process.cwd())
    const outcomes: [string, Outcome][] = [
      ["package.json", await preparePackageJson(root)],
      ["manifests/account.yaml", await writeNew(root, "manifests/account.yaml", MANIFEST)],
      ["src/app.ts", await writeNew(root, "src/app.ts", APP)],
      ["src/main.ts", await writeNew(root, "src/main.ts", MAIN)],
      ["tsconfig.json", await writeNew(root, "tsconfig.json", TSCONFIG)],
      [".gitignore", await prepareGitignore(root)],
    ]
    for (const [path, outcome] of outcomes) console.log(`${outcome.padEnd(7)}  ${path}`)
    console.log(
      [
        "",
        "next:",
        "  npm install akter effect zod",
        "  npm install --save-dev typescript @types/node",
        "  npm run build   # akter generate, then tsc",
        "  npm start       # starts an execution on embedded PGlite and prints its result",
      ].join("\n"),
    )
    return EXIT_OK
  })
