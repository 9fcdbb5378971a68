/**
 * A rolling deploy on Postgres with real runner processes of three releases of the shop
 * (test/fixtures/lock/shop): release 2 adds an audit step behind the marker `audit`, release 3
 * removes the reserve step every open order recorded. Release 1's and release 2's runners share the
 * database, each holding about half the buckets; the database's write audit (who settled each step)
 * and the activity journal (which process ran each activity, under which release) prove neither
 * touched an execution it cannot replay. An order release 2 started in a bucket release 1's runner
 * holds is left by that runner, marked as wanting release 2's manifest, and release 2's runner runs
 * it there as a guest without holding the bucket. Release 3's runner refuses to start, and `akter check
 * --database-url` fails naming the open orders, until they drain (so does a restarted release-1
 * runner while release 2's orders are open); `akter lock --prune` drops each release once no open
 * order uses it.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { ownerHash } from "../../runtime/model/canonicalManifest.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { readJournal } from "../support/activityJournal.js"
import { describePostgres } from "../support/backends.js"
import { leaseHolders, ownerIdInBuckets } from "../support/leaseView.js"
import type { Fleet, FleetRunner } from "../support/runnerFleet.js"
import { openScenario, type Scenario } from "../support/scenarioDatabase.js"
import { waitUntil } from "../support/waitUntil.js"
import { readWriteAudit } from "../support/writeAudit.js"
import { createCliProject, positionOf, type CliProject } from "../cli/cliProject.js"
import { shop, shopYaml, type Shop, type ShopVersion } from "../startup/shopVersions.js"
import {
  acceptedManifests,
  activatedBy,
  openExecutions,
  recordedBy,
  statusOf,
  stepRows,
  type Order,
} from "./orderRecord.js"

// Runner processes and CLI calls take seconds each on a loaded machine.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 })

const APP = "test/startup/shopApp.ts"
// Leases long enough that a loaded machine does not lose them between heartbeats (every 666 ms);
// a recovery interval short enough that a left-alone order comes back within a second.
const RUNNER_ARGS = ["--lease-ms", "4000", "--recovery-ms", "1000", "--pool-size", "4"]
const LEFT_ALONE = "execution incompatible with this runner; left for a compatible one"
const WAIT = { timeoutMs: 60_000 }

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const REFUSAL =
  "akter run: this runner's manifests cannot replay open executions; it refused to start and recorded nothing:"
const REFUSAL_FIX =
  "deploy a build that still declares what they recorded, or let them finish first (`akter check --database-url` lists them, with the fix for each rule)"

const BUCKETS = 256
const buckets = (from: number, to: number) =>
  new Set(Array.from({ length: to - from }, (_, i) => from + i))

describePostgres("a rolling deploy of the shop across three releases", () => {
  let scenario: Scenario
  let fleet: Fleet
  let project: CliProject
  let releases: Record<ShopVersion, Shop>
  let v1Runner: FleetRunner
  let v1Id: string
  let v2Id: string
  /** Started held (loaded, not serving) ahead of their part of the test, released when it begins. */
  let v2Runner: FleetRunner
  let v1Restarted: FleetRunner
  let v3Early: FleetRunner
  let v3Late: FleetRunner
  /** Release 1's orders in the buckets release 1's runner keeps, and in those it hands over. */
  let v1Kept: Order[]
  let v1Handed: Order[]
  /** Release 2's orders in release 2's runner's buckets, and in release 1's. */
  let v2Served: Order[]
  let v2LeftAlone: Order[]
  const started = Date.now()
  const marks: string[] = []
  const mark = (what: string) =>
    marks.push(`${((Date.now() - started) / 1000).toFixed(1)} s ${what}`)

  const details = () =>
    `${marks.join("\n")}\nheartbeats that gave buckets up or lost them: ${fleet.leaseDisruptions()}\n${scenario.outputs()}`

  beforeAll(async () => {
    scenario = await openScenario()
    fleet = scenario.fleet({ app: APP, args: RUNNER_ARGS })
    const [v1, v2, v3] = await Promise.all([shop(1), shop(2), shop(3)])
    releases = { 1: v1, 2: v2, 3: v3 }
    project = createCliProject()
  })

  afterAll(async () => {
    console.log(`rolling deploy timeline:\n${marks.join("\n")}`)
    await scenario?.close()
    project?.remove()
  })

  /** The release each runner process was built from (its activities note it in the journal). */
  const releaseOf = new Map<FleetRunner, ShopVersion>()
  const spawnRelease = (release: ShopVersion, held = false) => {
    const runner = fleet.spawn({ env: { SHOP_VERSION: String(release) }, held })
    releaseOf.set(runner, release)
    return runner
  }

  /** Waits for the runner to exit and for its output to be read to the end. */
  const exitOf = async (runner: FleetRunner) => {
    const exit = await runner.child.exited
    const { stdout, stderr } = runner.child.process
    await waitUntil(`${runner.name}'s output closes`, () => stdout!.closed && stderr!.closed)
    return exit
  }

  const clientOf = (release: ShopVersion): AnyClient =>
    makeOwnerClient<AnyClient>(scenario.akter, releases[release].registration)

  const startOrders = async (
    release: ShopVersion,
    prefix: string,
    among: ReadonlySet<number>,
    count: number,
  ): Promise<Order[]> => {
    const client = clientOf(release)
    const orders: Order[] = []
    for (let n = 0; n < count; n++) {
      const ownerId = ownerIdInBuckets(`${prefix}${n}`, among, "Shop")
      const execution = await client.fulfill.start(ownerId, { orderId: "A" })
      orders.push({ ownerId, executionId: execution.executionId, release })
    }
    return orders
  }

  /** Waits until the order is suspended on `paid` with exactly `settled` settled before it. */
  const waitForPayment = (order: Order, settled: readonly string[]) =>
    waitUntil(
      `${order.ownerId} (release ${order.release}) waits for payment after ${settled.join(", ")}`,
      async () => {
        const rows = await stepRows(scenario.db, order)
        const done = rows.filter((row) => row.settled && row.kind !== "version").map((r) => r.step)
        const waiting = rows.some((row) => row.step === "paid" && !row.settled)
        return waiting &&
          (await statusOf(scenario.db, order)) === "suspended" &&
          JSON.stringify(done) === JSON.stringify([...settled].sort())
          ? rows
          : undefined
      },
      { ...WAIT, details },
    )

  const waitForFinish = (orders: readonly Order[]) =>
    waitUntil(
      `${orders.map((o) => o.ownerId).join(", ")} finish`,
      async () => {
        for (const order of orders)
          if ((await statusOf(scenario.db, order)) !== "finished") return false
        return true
      },
      { ...WAIT, details },
    )

  const pay = async (orders: readonly Order[]) => {
    const client = clientOf(2)
    for (const order of orders) await client.emit(order.ownerId, "Paid", { amount: 100 })
  }

  /**
   * Asserts the order's history: which runner recorded each step and finished it (the write
   * audit), and which process ran each activity under which release, in order (the journal).
   */
  const expectHistory = async (
    order: Order,
    recorded: Readonly<Record<string, FleetRunner>>,
    ran: readonly (readonly [step: string, runner: FleetRunner])[],
  ) => {
    expect(await recordedBy(scenario.db, order, "ship")).toEqual(
      Object.fromEntries(Object.entries(recorded).map(([step, runner]) => [step, runner.name])),
    )
    const journal = readJournal(scenario.journal).filter(
      (entry) => entry.execution === order.executionId,
    )
    expect(journal.map(({ step, pid, note }) => ({ step, pid, note }))).toEqual(
      ran.map(([step, runner]) => ({ step, pid: runner.pid, note: `v${releaseOf.get(runner)}` })),
    )
  }

  /** How often a runner logged that it left each of these orders alone, and why. */
  const leftAloneBy = (runner: FleetRunner, orders: readonly Order[]) => {
    const ids = new Set(orders.map((order) => order.executionId))
    const found = new Map<string, { times: number; problems: string[] }>()
    for (const line of runner.logLines()) {
      const id = String(line["executionId"])
      if (line.message !== LEFT_ALONE || !ids.has(id)) continue
      const seen = found.get(id)
      found.set(id, { times: (seen?.times ?? 0) + 1, problems: line["problems"] as string[] })
    }
    return found
  }

  /** The lock file's entries of the shop, as release number and manifest hash, oldest first. */
  const lockedReleases = () =>
    Object.entries(
      JSON.parse(project.read("manifests/akter.lock.json")).owners.Shop as Record<
        string,
        { release: number }
      >,
    )
      .map(([hash, entry]) => ({ release: entry.release, hash }))
      .sort((a, b) => a.release - b.release)

  const hashOf = (release: ShopVersion) => ownerHash(releases[release].registration.canonical)
  const workflowHashOf = (release: Shop) =>
    release.registration.workflows["fulfill"]!.hashes.compatibility

  /** Asserts each order's result, read through the client of the release that started it. */
  const expectShipped = async (orders: readonly Order[]) => {
    for (const order of orders) {
      const execution = clientOf(order.release).fulfill.attach(order.executionId)
      expect(await execution.result({ timeout: "10 seconds" })).toEqual({
        _tag: "Success",
        value: { trackingId: `t-${order.ownerId}` },
      })
    }
  }

  /** The real CLI against the scenario's database, in the project holding the lock file. */
  const checkDatabase = (format: "json" | "text") =>
    project.akter(["check", "--database-url", scenario.databaseUrl, "--format", format])
  const pruneLock = () => project.akter(["lock", "--prune", "--database-url", scenario.databaseUrl])
  const prunedLine = (release: ShopVersion) =>
    `- Shop release ${release} ${hashOf(release)} (no open execution in ${scenario.databaseUrl} uses it)`

  /** Release 3's one breaking finding while `open` executions may reach the reserve step. */
  const reserveRemoved = (open: { count: number; oldest: number | null }) => ({
    rule: "step-removed",
    severity: "error",
    step: "reserve",
    location: { file: "manifests/shop.yaml", ...positionOf(shopYaml(3), "steps:") },
    open: { count: open.count, oldestStartedAtMs: open.oldest },
  })

  /** The findings of a JSON report, with the fields this test judges. */
  const judgedFindings = (stdout: string) =>
    (JSON.parse(stdout) as { findings: Record<string, unknown>[] }).findings.map(
      ({ rule, severity, step, location, open }) => ({ rule, severity, step, location, open }),
    )

  describe("release 1 and release 2 side by side", () => {
    it("release 2's runner joins release 1's and takes half of the buckets, the upper half", async () => {
      v1Runner = spawnRelease(1)
      v2Runner = spawnRelease(2, true)
      // Meanwhile, the release step of releases 1 and 2, then release 3 checked out.
      project.useShop(1)
      expect((await project.akter(["lock"])).code).toBe(0)
      project.useShop(2)
      expect((await project.akter(["lock"])).code).toBe(0)
      project.useShop(3)
      v1Id = await v1Runner.runnerId()
      mark("release 1's runner serves")

      // Release 1's runner holds every bucket; on a join it gives back the highest ones first.
      v1Kept = await startOrders(1, "kept", buckets(0, BUCKETS / 2), 2)
      v1Handed = await startOrders(1, "handed", buckets(BUCKETS / 2, BUCKETS), 2)
      for (const order of [...v1Kept, ...v1Handed]) await waitForPayment(order, ["reserve"])
      mark("release 1's orders reserved")

      // Loading while the buckets split: the runners of the refusal test below.
      v1Restarted = spawnRelease(1, true)
      v3Early = spawnRelease(3, true)
      v2Runner.release()
      v2Id = await v2Runner.runnerId()
      const split = await waitUntil(
        "the buckets split evenly",
        async () => {
          const holders = await leaseHolders(scenario.db)
          return holders.get(v1Id)?.length === BUCKETS / 2 &&
            holders.get(v2Id)?.length === BUCKETS / 2
            ? holders
            : undefined
        },
        { ...WAIT, details },
      )
      mark("buckets split")
      expect(split.get(v1Id)).toEqual([...buckets(0, BUCKETS / 2)])
      expect(split.get(v2Id)).toEqual([...buckets(BUCKETS / 2, BUCKETS)])
    })

    it("release 1's runner leaves release 2's orders in its buckets untouched, logging why, and release 2's runner runs them there as it runs its own", async () => {
      v2Served = await startOrders(2, "served", buckets(BUCKETS / 2, BUCKETS), 2)
      v2LeftAlone = await startOrders(2, "alone", buckets(0, BUCKETS / 2), 2)
      for (const order of [...v2Served, ...v2LeftAlone]) {
        await waitForPayment(order, ["audit", "reserve"])
      }
      mark("release 2's orders reserved, in either runner's buckets")

      // Release 1's runner still holds their buckets: it judged them, and only release 2's wrote.
      expect([...(await leaseHolders(scenario.db)).get(v1Id)!]).toEqual([
        ...buckets(0, BUCKETS / 2),
      ])
      const judged = leftAloneBy(v1Runner, v2LeftAlone)
      for (const order of v2LeftAlone) {
        expect(judged.get(order.executionId)?.problems).toEqual([
          expect.stringMatching(/^marker-removed: .*"audit"/),
          expect.stringMatching(/^step-removed: step "audit"/),
        ])
        expect(await activatedBy(scenario.db, "Shop", order)).toEqual([v2Runner.name])
        await expectHistory(order, { reserve: v2Runner, audit: v2Runner }, [
          ["reserve", v2Runner],
          ["audit", v2Runner],
        ])
      }
      for (const order of v2Served) {
        await expectHistory(order, { reserve: v2Runner, audit: v2Runner }, [
          ["reserve", v2Runner],
          ["audit", v2Runner],
        ])
      }
      for (const order of [...v1Kept, ...v1Handed]) {
        await expectHistory(order, { reserve: v1Runner }, [["reserve", v1Runner]])
      }
      // Release 2's runner never judged anything incompatible.
      expect(v2Runner.count(LEFT_ALONE)).toBe(0)
    })

    it("neither a restarted release-1 runner nor release 3's starts while the orders it cannot replay are open: each exits 2 with one line per problem", async () => {
      v1Restarted.release()
      v3Early.release()
      const [restartedExit, v3Exit] = await Promise.all([exitOf(v1Restarted), exitOf(v3Early)])
      mark("restarted release 1 and release 3 refused")
      const open = await openExecutions(scenario.db)
      expect(open.count).toBe(8)
      const v2Oldest = (await openExecutions(scenario.db, [...v2Served, ...v2LeftAlone])).oldest!
      const since = (ms: number) => new Date(ms).toISOString()

      expect(restartedExit).toEqual({ code: 2, signal: null })
      expect(v1Restarted.child.output().split("\n")).toEqual([
        REFUSAL,
        `  Shop.fulfill  marker-removed  4 open executions, oldest started ${since(v2Oldest)}: marker "audit" of Shop.fulfill is not declared by this manifest, but executions started under their start manifest recorded 1`,
        `  Shop.fulfill  step-removed  4 open executions, oldest started ${since(v2Oldest)}: step "audit" of Shop.fulfill is not declared by this manifest; executions started under their start manifest may have reached it`,
        REFUSAL_FIX,
        "",
      ])
      expect(v3Exit).toEqual({ code: 2, signal: null })
      expect(v3Early.child.output().split("\n")).toEqual([
        REFUSAL,
        `  Shop.fulfill  step-removed  8 open executions, oldest started ${since(open.oldest!)}: step "reserve" of Shop.fulfill is not declared by this manifest; executions started under their start manifest may have reached it`,
        REFUSAL_FIX,
        "",
      ])
      // Refusing, they recorded nothing and took no bucket: still only the two accepted manifests.
      expect([...(await leaseHolders(scenario.db)).keys()].sort()).toEqual([v1Id, v2Id].sort())
      expect(await acceptedManifests(scenario.db)).toEqual(
        [releases[1], releases[2]].map((release) => workflowHashOf(release)).sort(),
      )
    })

    it("akter check --database-url, with releases 1 and 2 locked and release 3 checked out, exits 1 naming the open orders that may reach the removed step", async () => {
      const open = await openExecutions(scenario.db)
      const [json, text] = await Promise.all([checkDatabase("json"), checkDatabase("text")])
      mark("check exits 1")

      expect(json.code).toBe(1)
      expect(judgedFindings(json.stdout)).toEqual([reserveRemoved(open)])
      expect(text.code).toBe(1)
      expect(text.stdout).toContain(
        `  open: 8 open executions, the oldest started ${new Date(open.oldest!).toISOString()}\n`,
      )
      expect(text.stderr).toMatch(
        /(^|\n)akter check: 1 manifest against 2 locked manifests and 8 open executions in postgres:\/\/.*: breaking\n$/,
      )
    })

    it("paying release 1's orders finishes each on the runner that holds its bucket, release 2's without the audit step", async () => {
      await pay([...v1Kept, ...v1Handed])
      await waitForFinish([...v1Kept, ...v1Handed])
      mark("release 1's orders finished")

      await expectShipped([...v1Kept, ...v1Handed])
      for (const order of v1Kept) {
        await expectHistory(order, { reserve: v1Runner, paid: v1Runner, finish: v1Runner }, [
          ["reserve", v1Runner],
          ["ship", v1Runner],
        ])
      }
      for (const order of v1Handed) {
        // Release 2 replays release 1's order: the marker reads 0, so no audit step.
        await expectHistory(order, { reserve: v1Runner, paid: v2Runner, finish: v2Runner }, [
          ["reserve", v1Runner],
          ["ship", v2Runner],
        ])
      }
      // Release 2's orders in release 1's buckets still wait for their payment, written by none but
      // release 2's runner.
      for (const order of v2LeftAlone) await waitForPayment(order, ["audit", "reserve"])
      for (const order of v2LeftAlone) {
        expect(await activatedBy(scenario.db, "Shop", order)).toEqual([v2Runner.name])
      }
    })

    it("once release 1's runner drains, release 2's takes its buckets, with the orders release 1 left alone", async () => {
      const drainedAt = Date.now()
      void v1Runner.child.kill("SIGTERM")
      expect(await exitOf(v1Runner)).toEqual({ code: 0, signal: null })
      expect(v1Runner.count("runner drained")).toBe(1)
      mark("release 1's runner drained")
      const holders = await waitUntil(
        "release 2's runner holds every bucket",
        async () => {
          const holders = await leaseHolders(scenario.db)
          return holders.get(v2Id)?.length === BUCKETS ? holders : undefined
        },
        { ...WAIT, details },
      )
      mark(`release 2 holds every bucket ${Date.now() - drainedAt} ms after the drain began`)
      expect([...holders.keys()]).toEqual([v2Id])
      for (const order of v2LeftAlone) {
        await expectHistory(order, { reserve: v2Runner, audit: v2Runner }, [
          ["reserve", v2Runner],
          ["audit", v2Runner],
        ])
      }
    })
  })

  describe("after release 1 drained", () => {
    it("akter lock --prune drops release 1 and keeps release 2, which open orders use; check still fails for them", async () => {
      // Loading meanwhile: the release-3 runner that starts once everything drained.
      v3Late = spawnRelease(3, true)
      const prune = await pruneLock()
      const check = await checkDatabase("json")
      mark("pruned release 1")

      expect(prune.code).toBe(0)
      expect(prune.stdout.split("\n")).toContain(prunedLine(1))
      // Release 3 appended as the newest release.
      expect(lockedReleases()).toEqual([
        { release: 2, hash: hashOf(2) },
        { release: 3, hash: hashOf(3) },
      ])
      expect(check.code).toBe(1)
      const open = await openExecutions(scenario.db)
      expect(open.count).toBe(4)
      expect(judgedFindings(check.stdout)).toEqual([reserveRemoved(open)])
    })

    it("once release 2's orders drain too, check exits 0, release 3's runner starts and lock --prune drops release 2", async () => {
      const v2Orders = [...v2Served, ...v2LeftAlone]
      await pay(v2Orders)
      await waitForFinish(v2Orders)
      mark("release 2's orders finished")
      await expectShipped(v2Orders)
      expect((await openExecutions(scenario.db)).count).toBe(0)

      const check = await checkDatabase("json")
      expect(check.code).toBe(0)
      v3Late.release()
      await v3Late.runnerId()
      mark("release 3's runner serves")
      const prune = await pruneLock()
      mark("pruned release 2")

      // The removal stays reported, as a warning no open execution observes.
      const findings = (JSON.parse(check.stdout) as { findings: Record<string, string>[] }).findings
      expect(findings.map(({ rule, severity, step }) => [rule, severity, step])).toEqual([
        ["step-removed", "warning", "reserve"],
      ])
      expect(findings[0]!["message"]).toMatch(/; no open execution observes this$/)
      expect(prune.code).toBe(0)
      expect(prune.stdout.split("\n")).toContain(prunedLine(2))
      expect(lockedReleases()).toEqual([{ release: 3, hash: hashOf(3) }])
    })

    it("over the whole deploy every step was recorded once, by a runner of a release that could replay its order", async () => {
      const audit = await readWriteAudit(scenario.db)
      expect(audit.duplicateSettles).toEqual([])
      expect(audit.overwrites).toEqual([])
      expect(audit.fenceBreaches).toEqual([])
      expect(audit.duplicateFinishes).toEqual([])
      expect(audit.finishes).toBe(8)
      const v2Ids = new Set([...v2Served, ...v2LeftAlone].map((order) => order.executionId))
      // Release 1's runner wrote nothing into any order release 2 started.
      expect(
        audit.settles.filter((s) => v2Ids.has(s.executionId) && s.writer !== v2Runner.name),
      ).toEqual([])
      // Audit steps only in release 2's orders.
      expect(audit.settles.filter((s) => s.step === "audit" && !v2Ids.has(s.executionId))).toEqual(
        [],
      )
      for (const order of [...v2Served, ...v2LeftAlone]) {
        // Not even the owner's fence was taken by release 1's runner (release 2's took it again
        // when it came to hold the bucket of an order it had run as a guest).
        expect(new Set(await activatedBy(scenario.db, "Shop", order))).toEqual(
          new Set([v2Runner.name]),
        )
        await expectHistory(
          order,
          { reserve: v2Runner, audit: v2Runner, paid: v2Runner, finish: v2Runner },
          [
            ["reserve", v2Runner],
            ["audit", v2Runner],
            ["ship", v2Runner],
          ],
        )
      }
      // Every activity ran once: release 1's orders reserve and ship, release 2's also audit.
      expect(readJournal(scenario.journal)).toHaveLength(4 * 2 + 4 * 3)
    })
  })
})
