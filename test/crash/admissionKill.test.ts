/**
 * A runner killed at each admission fault point, then replaced: the finish of an execution with a
 * concurrency key and the admission of the next queued one of its group commit together or not at
 * all. Six executions of one customer (limit one) are queued before any runner serves; the doomed
 * runner dies at the second finish — before its transaction (`admit.before`), holding the group's
 * lock with nothing written (`admit.locked`), or after the commit, before it woke anyone
 * (`admit.after`) — and a held replacement takes over once the lease lapses. From what Postgres
 * committed: every execution finished with its own result, never two admitted at once, admitted in
 * start order, each result recorded once and under the current generation, nothing left in the
 * outbox.
 */
import { sql } from "kysely"
import { it } from "vitest"
import { createAkter, internalsOf } from "../../runtime/akter.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { installAdmissionAudit, readAdmissionHistory } from "../support/admissionAudit.js"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import { startFleet } from "../support/runnerFleet.js"
import { waitUntil } from "../support/waitUntil.js"
import { installWriteAudit, readWriteAudit } from "../support/writeAudit.js"
import { registration } from "../multi/queueApp.js"

const RUNNER_ARGS = ["--lease-ms", "3000", "--recovery-ms", "1000", "--poll-ms", "250"]
const POINTS = ["admit.before", "admit.locked", "admit.after"] as const
const RUNS = 6

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describePostgres("a runner killed between a finish and the admission it owes", () => {
  it.concurrent.for(POINTS)(
    "keeps one per customer, in start order, after a kill at %s",
    { timeout: 300_000 },
    async (point, { expect }) => {
      const database = await createPostgresDatabase()
      const akter = await createAkter({ databaseUrl: database.url, poolSize: 2 })
      const db = internalsOf(akter).storage.db
      const fleet = startFleet({
        app: "test/multi/queueApp.ts",
        databaseUrl: database.url,
        args: RUNNER_ARGS,
      })
      try {
        await installWriteAudit(database.url)
        await installAdmissionAudit(db)
        const client = makeOwnerClient<AnyClient>(akter, registration)
        const runs: AnyClient[] = []
        for (let n = 0; n < RUNS; n++) {
          runs.push(await client.order.start(`k-${n}`, { customerId: "c", n }))
        }
        const replacement = fleet.spawn({ held: true })
        const doomed = fleet.spawn({ faults: `${point}:2` })
        const exit = await waitUntil(
          `the runner reaches ${point} hit 2 and dies`,
          () => (doomed.gone ? doomed.child.exited : undefined),
          { timeoutMs: 240_000, details: fleet.outputs },
        )
        expect(exit, fleet.outputs()).toEqual({ code: null, signal: "SIGKILL" })
        expect(doomed.child.output()).toContain(`akter fault: killing process at ${point} hit 2`)
        replacement.release()

        const results = await Promise.all(runs.map((run) => run.result({ timeout: "120 seconds" })))
        expect(results, fleet.outputs()).toEqual(
          runs.map((_, n) => ({ _tag: "Success", value: { n } })),
        )
        const history = await readAdmissionHistory(db)
        const group = "default/Purchase/order/customerId=c"
        const ids = runs.map((run) => run.executionId as string)
        expect(history.peak.get(group)).toBe(1)
        expect(history.started.get(group)).toEqual(ids)
        expect(history.admitted.get(group)).toEqual(ids)
        expect(history.unfinished).toEqual([])
        const audit = await readWriteAudit(db)
        expect(audit.duplicateFinishes).toEqual([])
        expect(audit.fenceBreaches).toEqual([])
        expect(audit.finishes).toBe(RUNS)
        const { rows } = await sql<{ outbox: number }>`
          SELECT count(*)::int AS outbox FROM akter.outbox`.execute(db)
        expect(rows).toEqual([{ outbox: 0 }])
      } catch (error) {
        if (error instanceof Error) error.message += `\n${fleet.outputs()}`
        throw error
      } finally {
        await fleet.stopAll()
        await akter.close()
        await database.drop()
      }
    },
  )
})
