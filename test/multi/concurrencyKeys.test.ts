/**
 * Issue 15's acceptance for concurrency keys, with real `akter run` processes on Postgres: three
 * runners share 200 executions of ten customers, at most one per customer at a time. Each
 * execution has an owner of its own, so a customer's executions spread over every runner's
 * buckets and each admission crosses runners. From the admission audit (a trigger's log of every
 * status the database committed, test/support/admissionAudit.ts): never two admitted at once for
 * one customer; each customer's executions admitted in the order they were started; every
 * execution finished, with its own result.
 */
import { sql } from "kysely"
import { expect, it } from "vitest"
import { makeOwnerClient } from "../../runtime/index.js"
import { installAdmissionAudit, readAdmissionHistory } from "../support/admissionAudit.js"
import { describePostgres } from "../support/backends.js"
import { leaseHolders } from "../support/leaseView.js"
import { withScenario } from "../support/scenarioDatabase.js"
import { waitUntil } from "../support/waitUntil.js"
import { readWriteAudit } from "../support/writeAudit.js"
import { registration } from "./queueApp.js"

const CUSTOMERS = 10
const PER_CUSTOMER = 20

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describePostgres("concurrency keys across runner processes", () => {
  it(
    "runs 200 executions from 3 runners, one per customer at a time, in start order",
    { timeout: 300_000 },
    () =>
      withScenario(async (scenario) => {
        await installAdmissionAudit(scenario.db)
        const fleet = scenario.fleet({
          app: "test/multi/queueApp.ts",
          args: ["--lease-ms", "5000", "--pool-size", "4"],
        })
        const runners = [fleet.spawn(), fleet.spawn(), fleet.spawn()]
        const ids = await Promise.all(runners.map((runner) => runner.runnerId(120_000)))
        // Every runner must hold buckets before the starts, or the first to start serves them all.
        await waitUntil(
          "each of the 3 runners holds 64 buckets or more",
          async () => {
            const holders = await leaseHolders(scenario.db)
            return ids.every((id) => (holders.get(id)?.length ?? 0) >= 64) || undefined
          },
          { timeoutMs: 90_000, details: scenario.outputs },
        )
        const client = makeOwnerClient<AnyClient>(scenario.akter, registration)

        // Each customer's starts one after another (their order is the order to keep), the
        // customers side by side, while the runners already work.
        const started = await Promise.all(
          Array.from({ length: CUSTOMERS }, async (_, c) => {
            const runs: AnyClient[] = []
            for (let n = 0; n < PER_CUSTOMER; n++) {
              runs.push(await client.order.start(`p-${c}-${n}`, { customerId: `c${c}`, n }))
            }
            return runs
          }),
        )
        const all = started.flat()
        const results = await Promise.all(
          all.map((run: AnyClient) => run.result({ timeout: "240 seconds" })),
        )
        expect(results).toEqual(
          started.flatMap((runs) => runs.map((_, n) => ({ _tag: "Success", value: { n } }))),
        )

        const history = await readAdmissionHistory(scenario.db)
        expect(history.unfinished).toEqual([])
        // The starts raced the finishes: some found their customer free, most had to queue.
        expect(history.queuedAtStart).toBeGreaterThan(0)
        for (const [c, runs] of started.entries()) {
          const group = `default/Purchase/order/customerId=c${c}`
          const ids = runs.map((run) => run.executionId as string)
          expect(history.peak.get(group), group).toBe(1)
          expect(history.started.get(group), group).toEqual(ids)
          expect(history.admitted.get(group), group).toEqual(ids)
        }
        // No write committed under a lost generation, no result twice, and every runner
        // finished some: admissions crossed processes.
        const audit = await readWriteAudit(scenario.db)
        expect(audit.fenceBreaches).toEqual([])
        expect(audit.duplicateFinishes).toEqual([])
        const { rows } = await sql<{ writer: string }>`
          SELECT DISTINCT writer FROM akter_audit.finishes`.execute(scenario.db)
        expect(rows.map((row) => row.writer).sort()).toEqual(
          runners.map((runner) => runner.name).sort(),
        )
      }),
  )
})
