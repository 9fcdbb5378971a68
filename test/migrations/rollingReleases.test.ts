/**
 * A rolling change across releases 1 → 2 → 3 of the loan workflow with real runner processes on
 * Postgres (`akter run test/migrations/loanApp.ts`, one release each): executions release 1's runner
 * started and suspended mid-way — at the approval wait, or past it — are carried on by release 2's
 * runner and finished by release 3's, which reads what release 1 recorded through its migrations:
 * the quote's `{ limitCents }` result, the `{ applicant: string }` input, the `{ score }` payload
 * of the `Flagged` error the `screen` activity failed with and the body caught (release 3's body
 * reads `risk.score`, which only the migration makes), an `Approved` event in release 1's
 * `{ approver }` shape that a wait settled on under release 1, and one that release 1's client
 * logged while no runner served and that release 3's wait reads first. No activity runs twice: the
 * quote each execution recorded is migrated, not recomputed.
 */
import { sql } from "kysely"
import { expect, it } from "vitest"
import { makeOwnerClient } from "../../runtime/index.js"
import { readJournal } from "../support/activityJournal.js"
import { describePostgres } from "../support/backends.js"
import type { FleetRunner } from "../support/runnerFleet.js"
import { withScenario, type Scenario } from "../support/scenarioDatabase.js"
import { waitUntil } from "../support/waitUntil.js"
import { readWriteAudit } from "../support/writeAudit.js"
import { expectedSummary, loan, type LoanVersion } from "./loanReleases.js"

const APP = "test/migrations/loanApp.ts"
const ARGS = ["--lease-ms", "1000", "--recovery-ms", "1000", "--pool-size", "4"]

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const clientOf = async (scenario: Scenario, version: LoanVersion): Promise<AnyClient> =>
  makeOwnerClient<AnyClient>(scenario.akter, (await loan(version)).registration)

/** Starts release `version`'s runner process and waits until it serves. */
const serve = async (scenario: Scenario, version: LoanVersion): Promise<FleetRunner> => {
  const runner = scenario
    .fleet({ app: APP, args: ARGS, env: { LOAN_RELEASE: String(version) } })
    .spawn()
  await runner.runnerId()
  return runner
}

/** Stops a runner the way a deploy does (SIGTERM: it drains, then exits 0). */
const retire = async (runner: FleetRunner) => {
  expect(await runner.child.kill("SIGTERM")).toEqual({ code: 0, signal: null })
}

/** Waits until each execution has a settled row for `step`. */
const settled = (scenario: Scenario, step: string, executionIds: readonly string[]) =>
  waitUntil(
    `step "${step}" settles for ${executionIds.length} executions`,
    async () => {
      const rows = await scenario.db
        .selectFrom("akter.steps")
        .select("execution_id")
        .where("step", "=", step)
        .where("settled_at_ms", "is not", null)
        .where("execution_id", "in", executionIds)
        .execute()
      return new Set(rows.map((row) => row.execution_id)).size === executionIds.length
    },
    { timeoutMs: 60_000, details: scenario.outputs },
  )

describePostgres("a rolling change of recorded shapes across three releases", () => {
  it(
    "executions release 1 started finish under release 3's runner with the migrated values",
    { timeout: 300_000 },
    () =>
      withScenario(async (scenario) => {
        const [v1, v2, v3] = await Promise.all([1, 2, 3].map((v) => clientOf(scenario, v as 1)))
        const executions: Record<string, AnyClient> = {}

        // Release 1: four applications record their quote as { limitCents } and screen's Flagged
        // failure as { score } (the body catches it), and wait for approval;
        // bob's approval, in release 1's { approver } shape, settles his wait.
        const one = await serve(scenario, 1)
        for (const applicant of ["ann", "bob", "cid", "dee"]) {
          executions[applicant] = await v1.apply.start(applicant, { applicant })
        }
        const releaseOne = Object.values(executions).map((e: AnyClient) => e.executionId)
        await settled(scenario, "quote", releaseOne)
        await v1.emit("bob", "Approved", { approver: "zoe" })
        await settled(scenario, "approved", [executions["bob"].executionId])
        await retire(one)

        // Release 2 (the quote is an amount, read from release 1's through migration v1): cid's
        // approval settles under it, and eve starts with release 2's quote.
        const two = await serve(scenario, 2)
        await v2.emit("cid", "Approved", { approver: "yan" })
        executions["eve"] = await v2.apply.start("eve", { applicant: "eve" })
        await settled(scenario, "approved", [executions["cid"].executionId])
        await settled(scenario, "quote", [executions["eve"].executionId])
        await retire(two)

        // Between deploys, release 1's client logs ann's approval: no wait reads it until release 3.
        await v1.emit("ann", "Approved", { approver: "xia" })

        // Release 3 (the applicant and the approver are people) takes over every execution.
        const three = await serve(scenario, 3)
        await v3.emit("dee", "Approved", { by: { name: "wu" } })
        await v3.emit("eve", "Approved", { by: { name: "vic" } })
        for (const applicant of Object.keys(executions)) {
          await v3.emit(applicant, "Signed", { by: `${applicant}-signer` })
        }
        const results: Record<string, unknown> = {}
        for (const [applicant, execution] of Object.entries(executions)) {
          results[applicant] = await execution.result({ timeout: "60 seconds" })
        }
        const success = (applicant: string, approver: string) => ({
          _tag: "Success",
          value: { summary: expectedSummary(applicant, approver, `${applicant}-signer`) },
        })
        expect(results, scenario.outputs()).toEqual({
          ann: success("ann", "xia"),
          bob: success("bob", "zoe"),
          cid: success("cid", "yan"),
          dee: success("dee", "wu"),
          eve: success("eve", "vic"),
        })

        // Each quote ran once, in the process of the release that started its execution: release
        // 3 read release 1's and release 2's recorded quotes, it did not compute them again.
        const quotes = readJournal(scenario.journal).filter((entry) => entry.step === "quote")
        expect(Object.fromEntries(quotes.map((entry) => [entry.ownerId, entry.pid]))).toEqual({
          ann: one.pid,
          bob: one.pid,
          cid: one.pid,
          dee: one.pid,
          eve: two.pid,
        })
        expect(quotes).toHaveLength(5)
        // Release 3's runner finished every execution, and no step was recorded twice by the
        // runners that handed executions on.
        const finishers = await sql<{ writer: string }>`
          SELECT writer FROM akter_audit.finishes`.execute(scenario.db)
        expect(finishers.rows.map((row) => row.writer)).toEqual(
          Array.from({ length: 5 }, () => three.name),
        )
        const audit = await readWriteAudit(scenario.db)
        expect(audit.duplicateSettles).toEqual([])
        expect(audit.fenceBreaches).toEqual([])
        expect(audit.finishes).toBe(5)
      }),
  )
})
