/**
 * The README's "Migrating recorded data" section, run as written: every fenced block whose info
 * string says `migrations` is taken in order — release 1's manifest and app go into one fresh
 * project, release 2's into another that takes release 1's lock file, as a repository would at its
 * next release; `sh` blocks run with the real CLI (`# exit N` is the exit code expected, else 0);
 * tsc type-checks each release with strict settings. The check prints the finding the section shows,
 * and fails without the `earlier:` entry; an execution release 1's app started on PGlite and left
 * waiting finishes under release 2's app with the quote release 1 recorded, migrated.
 */
import { spawnSync } from "node:child_process"
import { readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeOwnerClient, startRunner, type WorkflowImplementation } from "../../runtime/index.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import { runUntilIdle, testAkter } from "../../runtime/testing/index.js"
import { createTempProject, runAkter, type TempProject } from "../codegen/tempProject.js"
import { REPO } from "../codegen/typeCheck.js"
import { linkedProjectTsconfig, sectionBlocks, type SectionBlock } from "./readmeSections.js"

const TAG = "migrations"

const LOCK = "manifests/akter.lock.json"

// The client of the generated (untyped here) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describe("the README's Migrating recorded data section", { timeout: 300_000 }, () => {
  const readme = readFileSync(join(REPO, "README.md"), "utf8")
  const blocks = sectionBlocks(readme, [TAG])
  const releases: TempProject[] = []

  const newProject = () => {
    const project = createTempProject()
    symlinkSync(join(REPO, "node_modules", "@types"), join(project.root, "node_modules", "@types"))
    project.write(
      "tsconfig.json",
      `${JSON.stringify(linkedProjectTsconfig(["src", "generated"]), null, 2)}\n`,
    )
    releases.push(project)
    return project
  }

  /** Runs an `sh` block's lines in `project`; returns what each printed. */
  const runLines = (project: TempProject, block: SectionBlock): string[] => {
    const outputs: string[] = []
    for (const raw of block.text.split("\n")) {
      const line = raw.trim()
      if (line === "" || line.startsWith("#")) continue
      const expected = /#\s*exit\s+(\d+)\s*$/.exec(line)
      const [npx, akter, ...args] = line.replace(/\s*#.*$/, "").split(/\s+/)
      expect([npx, akter]).toEqual(["npx", "akter"])
      const result = runAkter(project.root, args)
      const shown = `README.md:${block.line}: ${line}\n${result.stdout}${result.stderr}`
      expect(result.code, shown).toBe(expected === null ? 0 : Number(expected[1]))
      outputs.push(shown)
    }
    return outputs
  }

  const typeCheck = (project: TempProject) => {
    const tsc = spawnSync(
      process.execPath,
      [join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", project.root],
      { encoding: "utf8" },
    )
    expect(tsc.stdout + tsc.stderr).toBe("")
  }

  const load = async (project: TempProject) => {
    const app = (await import(pathToFileURL(join(project.root, "src/loan.ts")).href)) as {
      workflows: readonly WorkflowImplementation[]
    }
    const sdk = (await import(
      pathToFileURL(join(project.root, "generated/loan/registration.ts")).href
    )) as { registration: OwnerRegistration }
    return { workflows: app.workflows, registration: sdk.registration }
  }

  let one: TempProject
  let two: TempProject
  let checked: string
  beforeAll(() => {
    one = newProject()
    two = newProject()
  })
  afterAll(() => {
    for (const project of releases) project.remove()
  })

  it("has two releases of the manifest and the app, the commands and the finding", () => {
    expect(blocks.map((block) => block.file ?? block.language)).toEqual([
      "manifests/loan.yaml",
      "src/loan.ts",
      "sh",
      "manifests/loan.yaml",
      "src/loan.ts",
      "sh",
      "text",
    ])
  })

  it("locks release 1, then checks release 2 as shown, and fails it without the earlier shape", () => {
    one.write(blocks[0]!.file!, blocks[0]!.text)
    one.write(blocks[1]!.file!, blocks[1]!.text)
    runLines(one, blocks[2]!)
    typeCheck(one)

    two.write(LOCK, one.read(LOCK))
    two.write(blocks[3]!.file!, blocks[3]!.text)
    two.write(blocks[4]!.file!, blocks[4]!.text)
    checked = runLines(two, blocks[5]!).join("\n")
    typeCheck(two)
    const finding = blocks[6]!.text.trim()
    expect(checked.split("\n"), checked).toContain(finding)

    // Without `earlier:`, release 1's quotes no longer decode: exit 1.
    const manifest = blocks[3]!.text
    const earlier =
      /output:\n\s+type: \{ limit: Amount \}\n\s+earlier:\n\s+v1: \{ limitCents: integer \}\n/
    expect(manifest).toMatch(earlier)
    two.write(blocks[3]!.file!, manifest.replace(earlier, "output: { limit: Amount }\n"))
    const refused = runAkter(two.root, ["check"])
    expect(refused.code, refused.stdout + refused.stderr).toBe(1)
    expect(refused.stdout).toContain('error[step-result-incompatible] results of step "quote"')
    // With an earlier shape that is not release 1's, the error names release 1.
    two.write(
      blocks[3]!.file!,
      manifest.replace("v1: { limitCents: integer }", "v1: { cents: integer }"),
    )
    const uncovered = runAkter(two.root, ["check"])
    expect(uncovered.code, uncovered.stdout + uncovered.stderr).toBe(1)
    expect(uncovered.stdout).toContain(
      "no earlier shape declared (v1) covers the shape recorded under release 1",
    )
    two.write(blocks[3]!.file!, blocks[3]!.text)
  })

  it("finishes under release 2 an execution release 1 started, with the migrated quote", async () => {
    const [first, second] = [await load(one), await load(two)]
    const akter = await testAkter()
    try {
      const runOne = await startRunner({ akter, workflows: first.workflows, pollMs: 20 })
      let execution: AnyClient
      try {
        const client = makeOwnerClient<AnyClient>(akter, first.registration)
        execution = await client.apply.start("ann", { applicant: "ann" })
        await runUntilIdle(akter, runOne)
      } finally {
        await runOne.close()
      }
      const runTwo = await startRunner({ akter, workflows: second.workflows, pollMs: 20 })
      try {
        await makeOwnerClient<AnyClient>(akter, second.registration).emit("ann", "Approved", {
          approver: "zoe",
        })
        await runUntilIdle(akter, runTwo)
      } finally {
        await runTwo.close()
      }
      expect(await execution.result()).toEqual({
        _tag: "Success",
        value: { summary: "ann: 1234.5 EUR, approved by zoe" },
      })
    } finally {
      await akter.close()
    }
  })
})
