/**
 * The README's "Checking your implementations" section, run as written in a fresh project with the
 * packed package, as the tutorial is: every fenced block whose info string says `implementations`
 * is taken in order — `file=PATH` blocks are written into the project, `sh` blocks run line by line
 * with the real tools, each expected to exit 0 unless the line ends in `# exit N`. effect and zod
 * come from the npm registry. The finding the section shows must be the one the
 * installed `akter check --app` prints, and the fixed app must pass.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  describeWithRegistry,
  installedProject,
  REPO,
  type InstalledProject,
} from "../support/packedAkter.js"
import { sectionBlocks } from "./readmeSections.js"

const TAG = "implementations"

describeWithRegistry("the README's Checking your implementations section", () => {
  const readme = readFileSync(join(REPO, "README.md"), "utf8")
  const blocks = sectionBlocks(readme, [TAG])
  let project: InstalledProject

  beforeAll(() => {
    project = installedProject("akter-implementations")
  }, 900_000)
  afterAll(() => project?.remove())

  it("has the manifest, the app in two versions and the commands", () => {
    expect(blocks.map((block) => block.file ?? block.language)).toEqual([
      "manifests/invoice.yaml",
      "src/dueDate.ts",
      "src/invoices.ts",
      "sh",
      "src/invoices.ts",
      "sh",
    ])
  })

  it(
    "finds the clock read through the helper, as shown, and passes the fixed app",
    {
      timeout: 600_000,
    },
    () => {
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
          const [tool, ...args] = line.replace(/\s*#.*$/, "").split(/\s+/)
          expect(tool).toBe("npx")
          const result = project.run("npx", ["--no-install", ...args], { NO_COLOR: "1" })
          const shown = `README.md:${block.line}: ${line}\n${result.stdout}${result.stderr}`
          expect(result.status, shown).toBe(expected === null ? 0 : Number(expected[1]))
          outputs.push(shown)
        }
      }
      const [broken, fixed] = outputs.filter((output) => output.includes("check --app"))
      const finding = broken!.split("\n").find((text) => text.startsWith("src/dueDate.ts:"))
      expect(finding).toBe(
        "src/dueDate.ts:3:12: error[nondeterministic-call] Date.now reads the clock, which a replay reads again and finds later; it is reached from the body of Invoice.send through dueDate",
      )
      // The README shows exactly what the command printed.
      expect(readme).toContain(`\n${finding}\n`)
      expect(fixed).toContain("0 errors, 0 warnings, 0 infos, 0 ignored")
      expect(fixed).toContain("and 1 implementation in 2 source files: compatible")
    },
  )
})
