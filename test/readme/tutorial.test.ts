/**
 * The README tutorial, run as written: every fenced block whose info string says `tutorial` is
 * taken in order — `file=PATH` blocks are written into a fresh project outside the repository
 * (its `node_modules/akter` a link to this repository), `sh` blocks are run line by line with the
 * real CLI, each expected to exit 0 unless the line ends in `# exit N`. `npx akter` is this
 * repository's `bin/akter.js`; `npx tsx` is `node --import tsx`; `<execution-id>` is the id the
 * tutorial's main.ts printed. So the README cannot rot.
 */
import { spawnSync } from "node:child_process"
import { readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { createTempProject } from "../codegen/tempProject.js"
import { REPO } from "../codegen/typeCheck.js"

interface TutorialBlock {
  readonly language: string
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
    blocks.push({ language: open[1]!, file, text: `${body.join("\n")}\n`, line: index + 1 })
    index = end
  }
  return blocks
}

const { DATABASE_URL: _postgres, ...environment } = process.env

/** Runs one tutorial command line in the project, as a user's shell would with akter installed. */
const runLine = (root: string, line: string, executionId: string | undefined) => {
  const words = line.replace("<execution-id>", executionId ?? "<no id printed>").split(/\s+/)
  const [tool, command, ...args] = words
  if (tool !== "npx") throw new Error(`tutorial commands start with npx: ${line}`)
  const argv =
    command === "akter"
      ? [join(REPO, "bin", "akter.js"), ...args]
      : command === "tsx"
        ? ["--import", "tsx", ...args]
        : undefined
  if (argv === undefined) throw new Error(`no way to run "${command}" in the tutorial test`)
  const result = spawnSync(process.execPath, argv, {
    cwd: root,
    encoding: "utf8",
    env: { ...environment, NO_COLOR: "1", AKTER_LOG: "warn" },
    timeout: 240_000,
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe("the README tutorial", () => {
  const readme = readFileSync(join(REPO, "README.md"), "utf8")
  const blocks = tutorialBlocks(readme)
  const project = createTempProject()
  symlinkSync(join(REPO, "node_modules", "tsx"), join(project.root, "node_modules", "tsx"), "dir")
  afterAll(() => project.remove())

  it("has the files and commands of every step", () => {
    expect(blocks.filter((block) => block.file !== undefined).map((block) => block.file)).toEqual([
      "manifests/ticket.yaml",
      "src/app.ts",
      "src/main.ts",
      "manifests/ticket.yaml",
      "manifests/ticket.yaml",
      "src/app.ts",
      "test/triage.test.ts",
    ])
    expect(blocks.filter((block) => block.language === "sh").length).toBe(8)
  })

  it("runs end to end on PGlite in a fresh project", { timeout: 900_000 }, () => {
    let executionId: string | undefined
    const outputs: string[] = []
    for (const block of blocks) {
      if (block.file !== undefined) {
        project.write(block.file, block.text)
        continue
      }
      for (const raw of block.text.split("\n")) {
        const line = raw.trim()
        if (line === "" || line.startsWith("#")) continue
        const expected = /#\s*exit\s+(\d+)\s*$/.exec(line)
        const command = line.replace(/\s*#.*$/, "")
        const result = runLine(project.root, command, executionId)
        const shown = `README.md:${block.line}: ${command}\n${result.stdout}${result.stderr}`
        expect(result.code, shown).toBe(expected === null ? 0 : Number(expected[1]))
        outputs.push(shown)
        executionId ??= /^waiting: (ak1\.\S+)$/m.exec(result.stdout)?.[1]
      }
    }
    const output = (command: string) => outputs.filter((text) => text.includes(`: ${command}\n`))
    // What the prose around the commands says they print.
    const [firstMain, secondMain] = output("npx tsx src/main.ts")
    expect(firstMain).toContain("{ _tag: 'Success', value: { agent: 'ada', team: 'billing' } }")
    expect(executionId).toMatch(/^ak1\./)
    expect(secondMain).toContain("{ _tag: 'Success', value: { agent: 'ada', team: 'billing' } }")
    const [listing] = output("npx akter inspect --workflow Ticket.triage")
    expect(listing).toMatch(/Ticket\/t-1\s+triage\s+finished: succeeded/)
    expect(listing).toMatch(/Ticket\/t-2\s+triage\s+suspended/)
    const [detail] = output("npx akter inspect <execution-id>")
    expect(detail).toContain("status     suspended\n")
    expect(detail).toMatch(/classify\s+activity\s+1\s+settled\s+Success \{"team":"support"\}/)
    expect(detail).toMatch(/assigned\s+wait\s+1\s+pending\s+in 4 h\s+waiting for Assigned after #0/)
    const [broken, fixed] = output("npx akter check")
    expect(broken).toContain(
      'manifests/ticket.yaml:14:5: error[step-removed] step "escalate" of Ticket.triage is not declared by this manifest',
    )
    expect(fixed).toContain("compatible")
    const [testRun] = output("npx tsx --test test/triage.test.ts")
    expect(testRun).toMatch(/# pass 1\n# fail 0/)
    expect(JSON.parse(project.read("manifests/akter.lock.json"))).toBeTruthy()
  })
})
