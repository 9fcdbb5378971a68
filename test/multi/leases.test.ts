/**
 * Bucket leases across runner processes: buckets spread evenly as runners join, a killed runner's
 * buckets move only once its leases expire, a drained runner hands them over at once, and the work
 * of a killed runner resumes elsewhere within the lease interval plus the recovery and poll
 * intervals. Times are read from the lease rows (the database's clock), so a slow test process
 * cannot make them look better or worse than they were.
 */
import { expect, it } from "vitest"
import { makeOwnerClient } from "../../runtime/index.js"
import { BUCKET_COUNT } from "../../runtime/owners/routing.js"
import { readJournal } from "../support/activityJournal.js"
import { describePostgres } from "../support/backends.js"
import { openGate } from "../support/fileGates.js"
import {
  databaseNow,
  leaseHolders,
  ownerIdInBuckets,
  readLeases,
  type LeaseRow,
} from "../support/leaseView.js"
import { withScenario, type Scenario } from "../support/scenarioDatabase.js"
import { waitUntil } from "../support/waitUntil.js"
import { readWriteAudit } from "../support/writeAudit.js"
import { registration } from "./multiApp.js"

const APP = "test/multi/multiApp.ts"

const counts = (holders: Map<string, number[]>, ids: readonly string[]) =>
  ids.map((id) => holders.get(id)?.length ?? 0)

const percentile = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

/**
 * Watches the leases of `buckets` until every one is held by another runner than `from`, and
 * returns, per bucket, the database time it changed hands: a freshly acquired lease expires
 * `leaseMs` after its acquisition, and the watch reads it long before its first renewal.
 */
const watchHandover = async (
  scenario: Scenario,
  from: string,
  buckets: readonly number[],
  leaseMs: number,
): Promise<Map<number, { readonly acquiredAt: number; readonly by: string }>> => {
  const moved = new Map<number, { acquiredAt: number; by: string }>()
  const watched = new Set(buckets)
  await waitUntil(
    `the buckets of ${from} change hands`,
    async () => {
      for (const lease of await readLeases(scenario.db)) {
        if (!watched.has(lease.bucket) || moved.has(lease.bucket)) continue
        if (lease.runnerId !== null && lease.runnerId !== from) {
          moved.set(lease.bucket, { acquiredAt: lease.expiresAtMs - leaseMs, by: lease.runnerId })
        }
      }
      return moved.size === watched.size
    },
    { timeoutMs: 60_000, intervalMs: 10, details: scenario.outputs },
  )
  return moved
}

const leasesOf = (leases: readonly LeaseRow[], runnerId: string) =>
  leases.filter((lease) => lease.runnerId === runnerId)

/**
 * Stops a runner with `stop` and watches its buckets change hands: its leases just before, when
 * each bucket moved and to whom, and how long after the stop the last one moved.
 */
const handOver = async (
  scenario: Scenario,
  runnerId: string,
  leaseMs: number,
  stop: () => Promise<void>,
) => {
  const before = leasesOf(await readLeases(scenario.db), runnerId)
  const stoppedAt = await databaseNow(scenario.db)
  await stop()
  const moved = await watchHandover(
    scenario,
    runnerId,
    before.map((lease) => lease.bucket),
    leaseMs,
  )
  const last = Math.max(...[...moved.values()].map((bucket) => bucket.acquiredAt))
  return { before, moved, lastMs: last - stoppedAt }
}

describePostgres("bucket leases between runner processes", () => {
  it(
    "spread evenly as runners join, move after expiry when one dies, and at once when one drains",
    { timeout: 300_000 },
    () =>
      withScenario(async (scenario) => {
        const leaseMs = 3000
        const fleet = scenario.fleet({
          app: APP,
          args: ["--lease-ms", String(leaseMs), "--pool-size", "3"],
        })
        const balanced = (ids: readonly string[], low: number, high: number) =>
          waitUntil(
            `${ids.length} runners hold ${low}..${high} buckets each`,
            async () => {
              const holders = await leaseHolders(scenario.db)
              const held = counts(holders, ids)
              return held.every((n) => n >= low && n <= high) &&
                held.reduce((sum, n) => sum + n, 0) === BUCKET_COUNT
                ? held
                : undefined
            },
            { timeoutMs: 90_000, details: scenario.outputs },
          )

        const first = fleet.spawn()
        const firstId = await first.runnerId()
        expect(await balanced([firstId], 256, 256)).toEqual([256])
        const second = fleet.spawn()
        const secondId = await second.runnerId()
        expect(await balanced([firstId, secondId], 128, 128)).toEqual([128, 128])
        const third = fleet.spawn()
        const thirdId = await third.runnerId()
        // Each takes up to ceil(256 / 3) = 86; the newcomer gets what the others gave back.
        const ofThree = await balanced([firstId, secondId, thirdId], 84, 86)
        console.log(`leases with three runners: ${ofThree.join(" / ")}`)

        // A killed runner's buckets wait for its leases to expire.
        const killed = await handOver(scenario, thirdId, leaseMs, async () => {
          await third.child.kill("SIGKILL")
        })
        for (const lease of killed.before) {
          // 5 ms for the rounding of two clock reads.
          expect(killed.moved.get(lease.bucket)!.acquiredAt).toBeGreaterThanOrEqual(
            lease.expiresAtMs - 5,
          )
        }
        expect(killed.lastMs).toBeLessThanOrEqual(leaseMs + leaseMs / 4 + 2000)
        expect(await balanced([firstId, secondId], 128, 128)).toEqual([128, 128])

        // A drained runner releases its buckets: they move long before its leases would expire.
        const drained = await handOver(scenario, secondId, leaseMs, async () => {
          expect(await second.child.kill("SIGTERM")).toEqual({ code: 0, signal: null })
        })
        for (const lease of drained.before) {
          const moved = drained.moved.get(lease.bucket)!
          expect(moved.by).toBe(firstId)
          expect(moved.acquiredAt).toBeLessThan(lease.expiresAtMs)
        }
        expect(await balanced([firstId], 256, 256)).toEqual([256])
        console.log(
          `bucket handover (lease ${leaseMs} ms): kill ${killed.lastMs} ms, drain ${drained.lastMs} ms (from the signal to the last bucket taken)`,
        )
      }),
  )

  it(
    "resumes a killed runner's work elsewhere within the lease interval plus the recovery and poll intervals",
    { timeout: 300_000 },
    () =>
      withScenario(async (scenario) => {
        const leaseMs = 1500
        const recoveryMs = 1000
        const pollMs = 20
        const heartbeatMs = leaseMs / 4
        const bound = leaseMs + heartbeatMs + recoveryMs + pollMs
        const fleet = scenario.fleet({
          app: APP,
          args: [
            "--lease-ms",
            String(leaseMs),
            "--recovery-ms",
            String(recoveryMs),
            "--poll-ms",
            String(pollMs),
            "--pool-size",
            "3",
          ],
        })
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const client = makeOwnerClient<any>(scenario.akter, registration)
        const survivor = fleet.spawn()
        const survivorId = await survivor.runnerId()
        const rounds = 3
        let next = fleet.spawn({ held: true })
        const latencies: number[] = []
        for (let round = 0; round < rounds; round += 1) {
          const doomed = next
          doomed.release()
          const doomedId = await doomed.runnerId()
          if (round + 1 < rounds) next = fleet.spawn({ held: true })
          const holders = await waitUntil(
            `round ${round}: the two runners hold 128 buckets each`,
            async () => {
              const held = await leaseHolders(scenario.db)
              return counts(held, [survivorId, doomedId]).every((n) => n === 128) ? held : undefined
            },
            { timeoutMs: 60_000, details: scenario.outputs },
          )
          const label = `takeover-${round}`
          const ownerId = ownerIdInBuckets(label, new Set(holders.get(doomedId)!), "Multi")
          const run = await client.held.start(ownerId, { label, failFirst: false })
          await waitUntil(
            `round ${round}: hold runs on the doomed runner`,
            () =>
              readJournal(scenario.journal).some(
                (entry) => entry.execution === run.executionId && entry.pid === doomed.pid,
              ),
            { timeoutMs: 60_000, details: scenario.outputs },
          )
          const killedAt = Date.now()
          await doomed.child.kill("SIGKILL")
          const resumed = await waitUntil(
            `round ${round}: hold resumes on the survivor`,
            () =>
              readJournal(scenario.journal).find(
                (entry) => entry.execution === run.executionId && entry.pid === survivor.pid,
              ),
            { timeoutMs: 60_000, details: scenario.outputs },
          )
          latencies.push(resumed.at - killedAt)
          openGate(scenario.gates, label)
          expect((await run.result({ timeout: "60 seconds" }))._tag).toBe("Success")
        }
        const sorted = [...latencies].sort((a, b) => a - b)
        console.log(
          `takeover after a kill (lease ${leaseMs} ms, heartbeat ${heartbeatMs} ms, recovery ${recoveryMs} ms, poll ${pollMs} ms; bound ${bound} ms): ${latencies.join(", ")} ms; p50 ${percentile(sorted, 50)} ms, max ${sorted.at(-1)} ms`,
        )
        // The bound, plus a second for a loaded machine's scheduling.
        for (const latency of latencies) expect(latency).toBeLessThanOrEqual(bound + 1000)
        const audit = await readWriteAudit(scenario.db)
        expect(audit.duplicateSettles).toEqual([])
        expect(audit.fenceBreaches).toEqual([])
      }),
  )
})
