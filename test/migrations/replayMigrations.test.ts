/**
 * Migrations of recorded data at run time, on both backends: executions release 1 of the loan
 * workflow started and suspended mid-way finish under release 3's runner with the values release 3's
 * migrations make of what release 1 recorded — a settled activity result, a settled wait's event, an
 * event release 1's client logged that no wait had read yet, the start input, and the payload of a
 * declared error a settled activity failed with and the body caught — and an execution
 * that the runner adopts stays readable on its next pass, because the manifest it is adopted onto
 * keeps the shapes its recorded data has.
 */
import { sql } from "kysely"
import { afterEach, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { Effect } from "effect"
import { implementWorkflow, makeOwnerClient, startRunner } from "../../runtime/index.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { expectedSummary, loan, type LoanRelease, type LoanVersion } from "./loanReleases.js"

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

let releases: Record<LoanVersion, LoanRelease>
beforeAll(async () => {
  const [v1, v2, v3] = await Promise.all([loan(1), loan(2), loan(3)])
  releases = { 1: v1, 2: v2, 3: v3 }
})

describeEachBackend("migrations of recorded data on replay", (backend) => {
  let akter: TestAkter | undefined
  afterEach(async () => {
    await akter?.close()
    akter = undefined
  })

  const withRunner = async (version: LoanVersion, work: () => Promise<void>) => {
    const runner = await startRunner({
      akter: akter!,
      workflows: [releases[version].apply],
      pollMs: 20,
    })
    try {
      await work()
      await runUntilIdle(akter!, runner, { timeoutMs: 30_000 })
    } finally {
      await runner.close()
    }
  }

  const client = (version: LoanVersion): AnyClient =>
    makeOwnerClient<AnyClient>(akter!, releases[version].registration)

  const manifestHashOf = async (ownerId: string) => {
    const { rows } = await sql<{ manifest_hash: string }>`
      SELECT manifest_hash FROM akter.executions WHERE owner_id = ${ownerId}`.execute(
      internalsOf(akter!).storage.db,
    )
    return rows[0]!.manifest_hash
  }

  it("executions release 1 suspended finish under release 3 with migrated values", async () => {
    akter = await openTestAkter(backend)
    const v1 = client(1)
    const v3 = client(3)
    const executions: Record<string, AnyClient> = {}
    await withRunner(1, async () => {
      for (const applicant of ["ann", "bob", "cid"]) {
        executions[applicant] = await v1.apply.start(applicant, { applicant })
      }
    })
    // bob's wait settles under release 1, with release 1's payload.
    await withRunner(1, async () => {
      await v1.emit("bob", "Approved", { approver: "zoe" })
    })
    // ann's event is logged in release 1's shape while no runner runs: no wait has read it.
    await v1.emit("ann", "Approved", { approver: "yan" })
    const releaseOne = await manifestHashOf("ann")
    expect(await manifestHashOf("bob")).toBe(releaseOne)

    await withRunner(3, async () => {
      await v3.emit("cid", "Approved", { by: { name: "xia" } })
    })
    // ann and cid recorded an activity result release 3 reads through a migration and have a wait
    // whose type changed still to settle: adopted onto a manifest that keeps quote's recorded shape
    // and the input's, which is neither release 1's nor release 3's.
    const adopted = await manifestHashOf("ann")
    expect(adopted).not.toBe(releaseOne)
    expect(adopted).not.toBe(releases[3].registration.workflows["apply"]!.hashes.compatibility)
    expect(await manifestHashOf("cid")).toBe(adopted)
    expect(await manifestHashOf("bob")).toBe(releaseOne)

    await withRunner(3, async () => {
      for (const applicant of ["ann", "bob", "cid"]) {
        await v3.emit(applicant, "Signed", { by: `${applicant}-signer` })
      }
    })
    const results = Object.fromEntries(
      await Promise.all(
        Object.entries(executions).map(
          async ([applicant, execution]) =>
            [applicant, await execution.result({ timeout: "10 seconds" })] as const,
        ),
      ),
    )
    expect(results).toEqual({
      ann: { _tag: "Success", value: { summary: expectedSummary("ann", "yan", "ann-signer") } },
      bob: { _tag: "Success", value: { summary: expectedSummary("bob", "zoe", "bob-signer") } },
      cid: { _tag: "Success", value: { summary: expectedSummary("cid", "xia", "cid-signer") } },
    })
  })

  it("release 2, which migrates only the quote, finishes an execution release 1 started", async () => {
    akter = await openTestAkter(backend)
    const execution = await (async () => {
      let started: AnyClient
      await withRunner(1, async () => {
        started = await client(1).apply.start("dee", { applicant: "dee" })
      })
      return started
    })()
    // Release 2 migrates quote's result but not the input release 3 changes: release 3's client
    // cannot start, yet release 2's runner reads release 1's input as it is.
    await withRunner(2, async () => {
      await client(2).emit("dee", "Approved", { approver: "wu" })
      await client(2).emit("dee", "Signed", { by: "dee-signer" })
    })
    expect(await execution.result({ timeout: "10 seconds" })).toEqual({
      _tag: "Success",
      value: { summary: expectedSummary("dee", "wu", "dee-signer") },
    })
  })
})

const implementRelease3 = (migrations: Record<string, unknown>) =>
  implementWorkflow(releases[3].registration, "apply", {
    activities: {
      quote: () => Promise.resolve({ limit: { value: 1, currency: "EUR" } }),
      screen: () => Promise.resolve(),
    },
    body: () => Effect.void,
    migrations,
  })

it("implementing a workflow without a migration its manifest declares is refused", () => {
  const migrate = { v1: (old: unknown) => old }
  expect(() => implementRelease3({ steps: { quote: migrate }, input: migrate })).toThrow(
    'Loan.apply: migration "v1" of event "Approved" (waited for by step "approved") is declared in manifests/loan.yaml but not implemented',
  )
  expect(() =>
    implementRelease3({ steps: { quote: migrate }, input: migrate, events: { Approved: migrate } }),
  ).toThrow(
    'Loan.apply: migration "v1" of error "Flagged" is declared in manifests/loan.yaml but not implemented',
  )
})
