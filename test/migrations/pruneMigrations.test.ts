/**
 * `akter lock --prune` and migrations of recorded data, as the real CLI against a real Postgres
 * database: while executions started under release 1 or 2 of the loan workflow are open, release
 * 3's migrations from their shapes stay; once release 3's runner has finished release 1's, the
 * quote's migration (release 2 recorded the new shape) is reported retirable, located; once release
 * 2's have finished too, every migration is. The report says what to remove; the manifest stays.
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { makeOwnerClient, startRunner } from "../../runtime/index.js"
import { runUntilIdle, testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import {
  createCliProject,
  positionOf,
  withoutProgress,
  type CliProject,
} from "../cli/cliProject.js"
import { loan, loanYaml, type LoanRelease, type LoanVersion } from "./loanReleases.js"

// Every test runs the real CLI, a few seconds per call on a loaded machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

interface LockJson {
  readonly pruned: readonly { owner: string; release: number }[]
  readonly retirable: readonly {
    owner: string
    workflow?: string
    step?: string
    event?: string
    migration: string
    location?: { file: string; line: number; column: number }
  }[]
}

describePostgres("akter lock --prune reports the migrations nothing needs any more", () => {
  let akter: TestAkter
  let drop: () => Promise<void>
  let url: string
  let project: CliProject
  let releases: Record<LoanVersion, LoanRelease>
  const v3Text = loanYaml(3)

  /** Runs release `version`'s runner in this process until nothing is left to do. */
  const withRunner = async (version: LoanVersion, work: (client: AnyClient) => Promise<void>) => {
    const runner = await startRunner({ akter, workflows: [releases[version].apply], pollMs: 20 })
    try {
      await work(makeOwnerClient<AnyClient>(akter, releases[version].registration))
      await runUntilIdle(akter, runner, { timeoutMs: 30_000 })
    } finally {
      await runner.close()
    }
  }

  const prune = async (format: "json" | "text") => {
    const run = await project.akter([
      "lock",
      "--prune",
      "--database-url",
      url,
      ...(format === "json" ? ["--format", "json"] : []),
    ])
    expect(withoutProgress(run.stderr)).toBe("")
    expect(run.code).toBe(0)
    return run.stdout
  }

  beforeAll(async () => {
    const database = await createPostgresDatabase()
    drop = database.drop
    url = database.url
    akter = await testAkter({ databaseUrl: url })
    const [v1, v2, v3] = await Promise.all([loan(1), loan(2), loan(3)])
    releases = { 1: v1, 2: v2, 3: v3 }
    project = createCliProject()
    // ann starts under release 1 and bob under release 2; both wait for their approval.
    for (const [version, applicant] of [
      [1, "ann"],
      [2, "bob"],
    ] as const) {
      project.write("manifests/loan.yaml", loanYaml(version))
      expect((await project.akter(["lock"])).code).toBe(0)
      await withRunner(version, (client) => client.apply.start(applicant, { applicant }))
    }
    project.write("manifests/loan.yaml", v3Text)
  })

  afterAll(async () => {
    await akter?.close()
    await drop?.()
    project?.remove()
  })

  it("keeps every migration while executions of release 1 and 2 are open", async () => {
    const report = JSON.parse(await prune("json")) as LockJson
    expect(report.pruned).toEqual([])
    expect(report.retirable).toEqual([])
  })

  it("reports the quote's migration, located, once release 1's execution has finished", async () => {
    await withRunner(3, async (client) => {
      await client.emit("ann", "Approved", { by: { name: "zoe" } })
      await client.emit("ann", "Signed", { by: "ann-signer" })
    })
    const text = await prune("text")
    const at = positionOf(v3Text, "v1:", "quote:")
    // Release 1's lock entry goes: no open execution uses it.
    expect(text).toMatch(/^- Loan release 1 /m)
    expect(text.split("\n").filter((line) => line.startsWith("~ "))).toEqual([
      `~ migration "v1" of the output of step "quote" of Loan.apply can be retired (manifests/loan.yaml:${at.line}:${at.column}): no lock entry and no open execution recorded its shape; remove it from the manifest and its function from the implementation`,
    ])
    expect(text).toContain("1 pruned, 1 migration retirable")
  })

  it("reports every migration once release 2's execution has finished too", async () => {
    await withRunner(3, async (client) => {
      await client.emit("bob", "Approved", { by: { name: "yan" } })
      await client.emit("bob", "Signed", { by: "bob-signer" })
    })
    const report = JSON.parse(await prune("json")) as LockJson
    expect(report.pruned.map((entry) => entry.release)).toEqual([2])
    const location = (needle: string, after: string) => ({
      file: "manifests/loan.yaml",
      ...positionOf(v3Text, needle, after),
    })
    expect(report.retirable).toEqual([
      { owner: "Loan", event: "Approved", migration: "v1", location: location("v1:", "Approved:") },
      { owner: "Loan", workflow: "apply", migration: "v1", location: location("v1:", "input:") },
      {
        owner: "Loan",
        workflow: "apply",
        step: "quote",
        migration: "v1",
        location: location("v1:", "quote:"),
      },
      {
        owner: "Loan",
        workflow: "apply",
        error: "Flagged",
        migration: "v1",
        location: location("v1:", "Flagged:"),
      },
    ])
    // Only the release that runs now stays locked.
    const locked = JSON.parse(project.read("manifests/akter.lock.json")).owners.Loan as Record<
      string,
      { release: number }
    >
    expect(Object.values(locked).map((entry) => entry.release)).toEqual([3])
  })
})
