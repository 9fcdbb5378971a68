/**
 * The README tutorial, run as written, as a user runs it: every fenced block whose info string
 * says `tutorial` is taken in order — `file=PATH` blocks are written into a fresh project under the
 * OS temp dir, `sh` blocks are run line by line with the real tools, each expected to exit 0 unless
 * the line ends in `# exit N`. `npm install akter` installs the tarball `npm pack` makes of this
 * checkout (test/support/packedAkter.ts); everything else — effect, zod, typescript, @types/node,
 * tsx — comes from the npm registry at the versions a user gets today. `npx` runs the project's own
 * bins; `<execution-id>` is the id the tutorial's main printed; a line may start with `NAME=value`
 * environment settings. A `sh tutorial background` block's commands (`akter dev`) are started in
 * the background, awaited until they print a `DATABASE_URL=`, and stopped with SIGINT (expected to
 * exit 0) once the next block has run. So the README cannot rot, and what
 * it promises of the package — compiled code on plain Node, types that pass `tsc --init`'s strict
 * settings, one copy of effect — is checked on the package itself.
 */
import { spawn } from "node:child_process"
import { openSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  describeWithRegistry,
  freshProject,
  REPO,
  type InstalledProject,
} from "../support/packedAkter.js"

interface TutorialBlock {
  readonly language: string
  readonly background: boolean
  readonly file: string | undefined
  readonly text: string
  /** 1-based line of the opening fence, for failure messages. */
  readonly line: number
}

/** The README's tutorial blocks, in order. */
export const tutorialBlocks = (markdown: string): TutorialBlock[] => {
  const blocks: TutorialBlock[] = []
  const lines = markdown.split("\n")
  for (let index = 0; index < lines.length; index++) {
    const open = /^```(\w+)\s+(.*)$/.exec(lines[index]!)
    if (open === null || !open[2]!.split(/\s+/).includes("tutorial")) continue
    const file = /(?:^|\s)file=(\S+)/.exec(open[2]!)?.[1]
    const body: string[] = []
    let end = index + 1
    while (end < lines.length && lines[end] !== "```") body.push(lines[end++]!)
    blocks.push({
      language: open[1]!,
      background: open[2]!.split(/\s+/).includes("background"),
      file,
      text: `${body.join("\n")}\n`,
      line: index + 1,
    })
    index = end
  }
  return blocks
}

/** The tutorial runs on PGlite, as a newcomer's machine does, and without any loader preloaded. */
const environment = { DATABASE_URL: undefined, NODE_OPTIONS: undefined }

/**
 * The README's TypeScript blocks that are not tutorial steps: the examples of its reference. A block
 * tagged `excerpt` is a few lines of a larger file (an `implement` call's migrations) and is compiled
 * where that file is: test/migrations/generatedMigrations.test.ts for the declared error's migration.
 */
const readmeExamples = (markdown: string): string[] =>
  [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!)

/**
 * What an example uses without declaring: the handle, the tutorial's workflows and client, as the
 * surrounding prose assumes them.
 */
const preludeFor = (example: string): string => {
  const free = (name: string) =>
    new RegExp(`\\b${name}\\b`).test(example.replace(/"[^"\n]*"/g, '""')) &&
    !new RegExp(`(const|let)\\s+${name}\\b|import\\s*(type\\s*)?\\{[^}]*\\b${name}\\b`).test(
      example,
    )
  return [
    free("akter") ? 'import type { Akter } from "akter"\ndeclare const akter: Akter\n' : "",
    free("Ticket") ? 'import { Ticket } from "../generated/index.js"\n' : "",
    free("workflows") ? 'import { workflows } from "../src/app.js"\n' : "",
  ].join("")
}

/**
 * Runs one tutorial command line in the project, as a user's shell would. `a && b` runs both;
 * `npm install akter` installs the packed tarball in akter's place.
 */
/** A command's words, without the leading `NAME=value` settings, which become its environment. */
const commandOf = (command: string) => {
  const words = command.split(/\s+/)
  const settings: Record<string, string> = {}
  while (/^[A-Z_]+=/.test(words[0] ?? "")) {
    const setting = words.shift()!
    settings[setting.slice(0, setting.indexOf("="))] = setting.slice(setting.indexOf("=") + 1)
  }
  return { words, settings }
}

const lineEnvironment = (project: InstalledProject) => ({
  ...environment,
  NO_COLOR: "1",
  AKTER_LOG: "warn",
  PATH: `${join(project.root, "node_modules", ".bin")}:${process.env["PATH"] ?? ""}`,
})

/** Background processes still running: killed when the suite ends, whatever failed. */
const running = new Set<number>()

/** Starts a background command of the tutorial (`npx akter dev …`); its output goes to a file. */
const startInBackground = (project: InstalledProject, line: string) => {
  const { words, settings } = commandOf(line)
  const [tool, ...args] = words
  if (tool !== "npx") throw new Error(`background tutorial commands run npx: ${line}`)
  const log = join(project.root, `background-${Date.now()}.log`)
  const out = openSync(log, "w")
  const child = spawn("npx", ["--no-install", ...args], {
    cwd: project.root,
    env: { ...process.env, ...lineEnvironment(project), ...settings },
    stdio: ["ignore", out, out],
    // Its own process group, so that SIGINT reaches node under npx as a terminal's Ctrl-C does.
    detached: true,
  })
  running.add(child.pid!)
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      running.delete(child.pid!)
      resolve(code)
    }),
  )
  return { line, child, exited, output: () => readFileSync(log, "utf8") }
}

const runLine = (project: InstalledProject, line: string, executionId: string | undefined) => {
  let output = ""
  for (const part of line.split("&&").map((text) => text.trim())) {
    const { words, settings } = commandOf(
      part.replace("<execution-id>", executionId ?? "<no id printed>"),
    )
    const [tool, ...args] = words
    if (tool !== "npm" && tool !== "npx" && tool !== "node") {
      throw new Error(`tutorial commands run npm, npx or node: ${line}`)
    }
    const argv =
      tool === "npm" && args[0] === "install"
        ? args.map((word) => (word === "akter" ? project.tarball.path : word))
        : tool === "npx"
          ? ["--no-install", ...args]
          : args
    const result = project.run(tool!, argv, { ...lineEnvironment(project), ...settings })
    output += `${result.stdout}${result.stderr}`
    if (result.status !== 0) return { code: result.status, output }
  }
  return { code: 0, output }
}

describeWithRegistry("the README tutorial, in a fresh project with the packed package", () => {
  const readme = readFileSync(join(REPO, "README.md"), "utf8")
  const blocks = tutorialBlocks(readme)
  let project: InstalledProject

  // Packing compiles the package (once per content, shared by the run's test files).
  beforeAll(() => {
    project = freshProject("akter-tutorial")
  }, 600_000)
  afterAll(() => {
    for (const pid of running) process.kill(-pid, "SIGKILL")
    project?.remove()
  })

  it("has the files and commands of every step", () => {
    expect(blocks.filter((block) => block.file !== undefined).map((block) => block.file)).toEqual([
      "manifests/ticket.yaml",
      "src/app.ts",
      "src/main.ts",
      "src/client.ts",
      "manifests/ticket.yaml",
      "manifests/ticket.yaml",
      "src/app.ts",
      "test/triage.test.ts",
    ])
    expect(blocks.filter((block) => block.language === "sh").length).toBe(12)
  })

  it(
    "runs end to end on PGlite, compiled by tsc and run on plain node",
    { timeout: 1_200_000 },
    async () => {
      let executionId: string | undefined
      const outputs: string[] = []
      let background: ReturnType<typeof startInBackground>[] = []
      for (const block of blocks) {
        if (block.file !== undefined) {
          project.write(block.file, block.text)
          continue
        }
        const lines = block.text
          .split("\n")
          .map((raw) => raw.trim())
          .filter((line) => line !== "" && !line.startsWith("#"))
        if (block.background) {
          for (const line of lines) {
            const started = startInBackground(project, line)
            background.push(started)
            const deadline = Date.now() + 300_000
            while (!/DATABASE_URL=/.test(started.output())) {
              const shown = `README.md:${block.line}: ${line}\n${started.output()}`
              expect(started.child.exitCode, shown).toBeNull()
              expect(Date.now() < deadline, shown).toBe(true)
              await new Promise((resolve) => setTimeout(resolve, 200))
            }
            outputs.push(`README.md:${block.line}: ${line}\n${started.output()}`)
          }
          continue
        }
        for (const line of lines) {
          const expected = /#\s*exit\s+(\d+)\s*$/.exec(line)
          const command = line.replace(/\s*#.*$/, "")
          const result = runLine(project, command, executionId)
          const shown = `README.md:${block.line}: ${command}\n${result.output}`
          expect(result.code, shown).toBe(expected === null ? 0 : Number(expected[1]))
          outputs.push(shown)
          executionId ??= /^waiting: (ak1\.\S+)$/m.exec(result.output)?.[1]
        }
        // The block after a background one was its client: the background process stops now.
        for (const started of background) {
          process.kill(-started.child.pid!, "SIGINT")
          // npx itself may die of the signal; the command under it must stop cleanly.
          await started.exited
          const deadline = Date.now() + 120_000
          while (!/stopped; .* is free/.test(started.output()) && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 200))
          }
          expect(started.output()).toMatch(/akter dev: stopped; \.akter\/pglite is free/)
        }
        background = []
      }
      const output = (command: string) => outputs.filter((text) => text.includes(`: ${command}\n`))
      // What the prose around the commands says they print.
      const [firstMain, secondMain] = output("npx tsx src/main.ts")
      expect(firstMain).toContain("{ _tag: 'Success', value: { agent: 'ada', team: 'billing' } }")
      expect(executionId).toMatch(/^ak1\./)
      expect(secondMain).toContain("{ _tag: 'Success', value: { agent: 'ada', team: 'billing' } }")
      const [dev] = output("npx akter dev src/app.ts")
      expect(dev).toContain(
        "  DATABASE_URL=postgres://postgres@127.0.0.1:54329/postgres?akter_statements=unprepared",
      )
      const [opened] = output(
        "DATABASE_URL=postgres://postgres@127.0.0.1:54329/postgres?akter_statements=unprepared npx tsx src/client.ts open t-3",
      )
      expect(opened).toMatch(/^opened ak1\./m)
      const [assigned] = output(
        "DATABASE_URL=postgres://postgres@127.0.0.1:54329/postgres?akter_statements=unprepared npx tsx src/client.ts assign t-3",
      )
      expect(assigned).toContain("{ _tag: 'Success', value: { agent: 'grace', team: 'billing' } }")
      const [compiled] = output("node dist/src/main.js")
      expect(compiled).toContain("{ _tag: 'Success', value: { agent: 'ada', team: 'billing' } }")
      expect(compiled).toContain(`waiting: ${executionId}`)
      const [listing] = output("npx akter inspect --workflow Ticket.triage")
      expect(listing).toMatch(/Ticket\/t-1\s+triage\s+finished: succeeded/)
      expect(listing).toMatch(/Ticket\/t-2\s+triage\s+suspended/)
      const [detail] = output("npx akter inspect <execution-id>")
      expect(detail).toContain("status     suspended\n")
      expect(detail).toMatch(/classify\s+activity\s+1\s+settled\s+Success \{"team":"support"\}/)
      expect(detail).toMatch(
        /assigned\s+wait\s+1\s+pending\s+in 4 h\s+waiting for Assigned after #0/,
      )
      const [broken, fixed] = output("npx akter check")
      expect(broken).toContain(
        'manifests/ticket.yaml:14:5: error[step-removed] step "escalate" of Ticket.triage is not declared by this manifest',
      )
      expect(fixed).toContain("compatible")
      const [testRun] = output("npx tsx --test test/triage.test.ts")
      expect(testRun).toMatch(/# pass 1\n# fail 0/)
      expect(JSON.parse(project.read("manifests/akter.lock.json"))).toBeTruthy()
    },
  )

  it("runs the README's listing example on the tutorial's database", { timeout: 300_000 }, () => {
    const [listing] = readmeExamples(readme).filter((example) =>
      example.includes("listExecutions(akter, query)"),
    )
    expect(listing).toBeDefined()
    project.write(
      "readme/listing.ts",
      `import { createAkter } from "akter"\nconst akter = await createAkter({})\n${listing!}\nawait akter.close()\n`,
    )
    const compiled = project.run("npx", ["--no-install", "tsc"])
    expect(compiled.stdout + compiled.stderr).toBe("")
    const run = project.run("node", ["dist/readme/listing.js"], {
      ...environment,
      AKTER_LOG: "warn",
    })
    expect(run.status, run.stderr).toBe(0)
    const waiting = /^(ak1\.\S+) triage suspended \d+$/m.exec(run.stdout)
    expect(waiting, run.stdout).not.toBeNull()
    expect(run.stdout).toContain("{ total: 3, queued: 0, running: 0, suspended: 1, finished: 2 }")
  })

  it("type-checks the README's other TypeScript examples against the installed package", () => {
    const examples = readmeExamples(readme)
    expect(examples.length).toBeGreaterThanOrEqual(5)
    examples.forEach((example, index) => {
      project.write(`readme/example-${index + 1}.ts`, `${preludeFor(example)}${example}`)
    })
  })

  it("type-checks the finished project with tsc --init's settings, with one copy of effect", () => {
    const tsconfig = project.read("tsconfig.json")
    for (const setting of [
      '"strict": true',
      '"exactOptionalPropertyTypes": true',
      '"noUncheckedIndexedAccess": true',
      '"verbatimModuleSyntax": true',
      '"types": ["node"]',
    ]) {
      expect(tsconfig).toContain(setting)
    }
    const tsc = project.run("npx", ["--no-install", "tsc", "--noEmit"])
    expect(tsc.stdout + tsc.stderr).toBe("")
    expect(tsc.status).toBe(0)
    // What the tutorial installed: akter compiled, effect and zod once each, no pg types needed.
    const effect = project.run("npm", ["ls", "effect", "--all", "--parseable"])
    expect(effect.status).toBe(0)
    expect(effect.stdout.trim().split("\n")).toEqual([join(project.root, "node_modules", "effect")])
    const ls = project.run("npm", ["ls", "--all", "--json"])
    const tree = JSON.parse(ls.stdout) as { dependencies: Record<string, unknown> }
    expect(Object.keys(tree.dependencies).sort()).toEqual(
      ["@types/node", "akter", "effect", "tsx", "typescript", "zod"].sort(),
    )
    expect(ls.stdout).not.toContain('"@types/pg"')
  })
})
