/**
 * The README's "Retries and declared errors" and "Workflow deadlines" sections, run as written:
 * every fenced block whose info string says `retries` or `deadline` is taken in order — `file=PATH` blocks are written into a fresh project
 * whose `akter` is this checkout, the real CLI generates its SDK, tsc type-checks it with strict
 * settings, and the app runs on PGlite with the test clock. What the prose says must happen does:
 * the lapsed policy fails after one attempt with no time passing (a retry would wait for the
 * clock), the rate-limited quote is retried, and the inspect table shown is the one printed.
 */
import { spawnSync } from "node:child_process"
import { readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { renderExecutionDetail } from "../../cli/renderInspection.js"
import { makeOwnerClient, startRunner, type WorkflowImplementation } from "../../runtime/index.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import { inspectExecution, runUntilIdle, testAkter } from "../../runtime/testing/index.js"
import { createTempProject, runAkter, type TempProject } from "../codegen/tempProject.js"
import { REPO } from "../codegen/typeCheck.js"
import { linkedProjectTsconfig, sectionBlocks } from "./readmeSections.js"

const TAGS = ["retries", "deadline"]

/** A table's lines with runs of spaces as one and the relative due time as a placeholder. */
const normalized = (table: string) =>
  table
    .trim()
    .split("\n")
    .map((line) => line.replace(/in \d+\.\d s/, "in N s").replace(/\s+/g, " "))

describe("the README's Retries and declared errors section", { timeout: 240_000 }, () => {
  const readme = readFileSync(join(REPO, "README.md"), "utf8")
  const blocks = sectionBlocks(readme, TAGS)
  let project: TempProject

  beforeAll(() => {
    project = createTempProject()
    symlinkSync(join(REPO, "node_modules", "@types"), join(project.root, "node_modules", "@types"))
    project.write(
      "tsconfig.json",
      `${JSON.stringify(linkedProjectTsconfig(["src", "generated"]), null, 2)}\n`,
    )
    for (const block of blocks) if (block.file !== undefined) project.write(block.file, block.text)
    const generated = runAkter(project.root, ["generate"])
    if (generated.code !== 0) throw new Error(`akter generate failed:\n${generated.stderr}`)
  }, 120_000)
  afterAll(() => project?.remove())

  it("has the manifest, the app and the inspect table", () => {
    expect(blocks.map((block) => block.file ?? block.language)).toEqual([
      "manifests/policy.yaml",
      "src/policy.ts",
      "text",
      "manifests/quote.yaml",
      "src/quote.ts",
    ])
  })

  it("generates and type-checks, then retries only what the prose says", async () => {
    const tsc = spawnSync(
      process.execPath,
      [join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", project.root],
      { encoding: "utf8" },
    )
    expect(tsc.stdout + tsc.stderr).toBe("")

    const app = (await import(pathToFileURL(join(project.root, "src/policy.ts")).href)) as {
      workflows: readonly WorkflowImplementation[]
    }
    const sdk = (await import(
      pathToFileURL(join(project.root, "generated/policy/registration.ts")).href
    )) as { registration: OwnerRegistration }
    const akter = await testAkter()
    const runner = await startRunner({ akter, workflows: app.workflows, pollMs: 20 })
    try {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const policies = makeOwnerClient<any>(akter, sdk.registration)

      // The clock never moves: a retried verifyPolicy would wait for it, and this would time out.
      const lapsed = await policies.renew.start("p-2", { policyId: "p-2" })
      expect(await lapsed.result({ timeout: "20 seconds" })).toMatchObject({
        _tag: "Failure",
        error: { _tag: "PolicyLapsed", lapsedOn: "2026-01-31" },
      })

      const renewed = await policies.renew.start("p-1", { policyId: "p-1" })
      await runUntilIdle(akter, runner)
      const detail = await inspectExecution(akter, renewed.executionId)
      const text = renderExecutionDetail(detail!, akter.now())
      const table = text.slice(text.indexOf("STEP"))
      expect(normalized(table)).toEqual(normalized(blocks[2]!.text))

      akter.advance("5 seconds")
      await runUntilIdle(akter, runner)
      expect(await renewed.result()).toEqual({ _tag: "Success", value: { premium: 300 } })

      // An unknown policy is a fault: four attempts, 1 s, 2 s and 4 s apart, then a defect.
      const unknown = await policies.renew.start("p-3", { policyId: "p-3" })
      for (const seconds of [0, 1, 2, 4]) {
        akter.advance(`${seconds} seconds`)
        await runUntilIdle(akter, runner)
      }
      const failed = await unknown.result()
      expect(failed).toMatchObject({ _tag: "Defect" })
      expect(failed._tag === "Defect" ? failed.message : "").toContain(
        "policy service: no answer for p-3",
      )
    } finally {
      await runner.close()
      await akter.close()
    }
  })

  it("interrupts the short offer by its deadline two days after its start, not before", async () => {
    const quote = (await import(pathToFileURL(join(project.root, "src/quote.ts")).href)) as {
      workflows: readonly WorkflowImplementation[]
      offerBriefly: (
        akter: unknown,
        customerId: string,
      ) => Promise<{ result(): Promise<unknown>; status(): Promise<unknown> }>
    }
    const akter = await testAkter()
    const runner = await startRunner({ akter, workflows: quote.workflows, pollMs: 20 })
    try {
      const offer = await quote.offerBriefly(akter, "c-1")
      await runUntilIdle(akter, runner)
      akter.advance("47 hours")
      await runUntilIdle(akter, runner)
      expect(await offer.status()).toEqual({ status: "suspended", interrupting: false })
      akter.advance("1 hour")
      await runUntilIdle(akter, runner)
      expect(await offer.result()).toEqual({ _tag: "Interrupted", cause: "deadline" })
    } finally {
      await runner.close()
      await akter.close()
    }
  })
})
