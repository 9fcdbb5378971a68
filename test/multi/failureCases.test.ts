/**
 * The failure matrix of issue 3, one test each, with real runner processes on Postgres. Every test
 * judges the engine by what the database committed: a trigger logs each settle (no step may be
 * recorded twice) and each write made by a process that did not hold the owner's current generation
 * (there must be none); the activity journal shows which process ran which attempt under which key.
 */
import { randomInt } from "node:crypto"
import { sql } from "kysely"
import { describe, expect, it } from "vitest"
import { ForeignTenant } from "../../runtime/errors.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { decodeExecutionId } from "../../runtime/model/executionId.js"
import { readJournal, type JournalEntry } from "../support/activityJournal.js"
import { describePostgres } from "../support/backends.js"
import { limitConcurrency } from "../support/concurrencyLimit.js"
import { openGate } from "../support/fileGates.js"
import { databaseNow, leaseHolders, ownerIdInBuckets } from "../support/leaseView.js"
import { withScenario, type Scenario } from "../support/scenarioDatabase.js"
import { sleep, waitUntil } from "../support/waitUntil.js"
import {
  readWriteAudit,
  settledThenFinished,
  settlesOf,
  type WriteAudit,
} from "../support/writeAudit.js"
import { registration } from "./multiApp.js"

const APP = "test/multi/multiApp.ts"
/**
 * A kill costs about a lease: long enough that a loaded machine's late heartbeat rarely lets it
 * lapse (a lapse abandons passes, and their activities run again). Everything else is polled for.
 */
const FAST = ["--lease-ms", "3000", "--recovery-ms", "1000", "--pool-size", "4"]

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const clientOf = (scenario: Scenario, caller?: { tenant: string; subject?: string }): AnyClient =>
  makeOwnerClient<AnyClient>(scenario.akter, registration, caller)

const journalEntry = (
  scenario: Scenario,
  what: string,
  match: (entry: JournalEntry) => boolean,
): Promise<JournalEntry> =>
  waitUntil(what, () => readJournal(scenario.journal).find(match), {
    timeoutMs: 60_000,
    details: scenario.outputs,
  })

/** Two runners that hold half the buckets each, and the buckets of the first. */
const twoBalancedRunners = async (scenario: Scenario, args: readonly string[]) => {
  const fleet = scenario.fleet({ app: APP, args })
  const first = fleet.spawn()
  const second = fleet.spawn()
  const [firstId, secondId] = await Promise.all([first.runnerId(), second.runnerId()])
  const holders = await waitUntil(
    "the two runners hold 128 buckets each",
    async () => {
      const held = await leaseHolders(scenario.db)
      return held.get(firstId)?.length === 128 && held.get(secondId)?.length === 128
        ? held
        : undefined
    },
    { timeoutMs: 180_000, details: scenario.outputs },
  )
  return { fleet, first, second, firstBuckets: new Set(holders.get(firstId)!) }
}

/** One runner serving the scenario, and the test's client. */
const oneRunner = async (scenario: Scenario, args: readonly string[] = FAST) => {
  const fleet = scenario.fleet({ app: APP, args })
  const runner = fleet.spawn()
  await runner.runnerId()
  return { fleet, runner, client: clientOf(scenario) }
}

/** `count` rounds of a race, all at once. */
const inRounds = <A>(count: number, round: (index: number) => Promise<A>): Promise<A[]> =>
  Promise.all(Array.from({ length: count }, (_, index) => round(index)))

const stepRows = (scenario: Scenario, executionId: string) =>
  scenario.db
    .selectFrom("akter.steps")
    .select(["step", "attempt", "exit"])
    .where("execution_id", "=", executionId)
    .where("kind", "<>", "version")
    .orderBy("step")
    .orderBy("attempt")
    .execute()

const settled = async (scenario: Scenario, executionId: string) =>
  settlesOf(await readWriteAudit(scenario.db), executionId)

/** An execution's settles as `step#attempt by writer`, in commit order. */
const settledBy = (audit: WriteAudit, executionId: string) =>
  audit.settles
    .filter((settle) => settle.executionId === executionId)
    .map((settle) => `${settle.step}#${settle.attempt} by ${settle.writer}`)

const expectCleanAudit = async (scenario: Scenario) => {
  const audit = await readWriteAudit(scenario.db)
  expect(audit.duplicateSettles).toEqual([])
  expect(audit.overwrites).toEqual([])
  expect(audit.fenceBreaches).toEqual([])
  expect(audit.duplicateFinishes).toEqual([])
  return audit
}

describePostgres("runner failures", () => {
  // Cases run a few at a time; each has its own database and runner processes.
  const slot = limitConcurrency(3)
  const scenarioTest = (name: string, test: (scenario: Scenario) => Promise<void>) =>
    it.concurrent(name, { timeout: 300_000 }, () => slot(() => withScenario(test)))

  describe.concurrent("runner death and drain", () => {
    scenarioTest(
      "an execution resumed on another runner keeps its owner, tenant, key and caller",
      async (scenario) => {
        const { first, second, firstBuckets } = await twoBalancedRunners(scenario, FAST)
        const caller = { tenant: "acme", subject: "alice" }
        const ownerId = ownerIdInBuckets("account", firstBuckets, "Multi", "acme")
        const label = "resume-elsewhere"
        const run = await clientOf(scenario, caller).held.start(ownerId, {
          label,
          failFirst: false,
        })
        const before = await journalEntry(
          scenario,
          "hold runs on the first runner",
          (entry) => entry.step === "hold" && entry.pid === first.pid,
        )
        await first.child.kill("SIGKILL")
        const after = await journalEntry(
          scenario,
          "hold reruns on the second runner",
          (entry) => entry.step === "hold" && entry.pid === second.pid,
        )
        openGate(scenario.gates, label)
        const result = await run.result({ timeout: "60 seconds" })

        expect(result).toEqual({
          _tag: "Success",
          value: { label, key: before.key, attempt: 1, done: true },
        })
        for (const seen of [before, after]) {
          expect(seen).toMatchObject({
            execution: run.executionId,
            ownerId,
            caller,
            attempt: 1,
            key: before.key,
          })
        }
        const finalStep = readJournal(scenario.journal).find((entry) => entry.step === "after")
        expect(finalStep).toMatchObject({ pid: second.pid, ownerId, caller })
        const row = await scenario.db
          .selectFrom("akter.executions")
          .select(["tenant", "owner_type", "owner_id", "workflow", "execution_key", "caller"])
          .where("execution_id", "=", run.executionId)
          .executeTakeFirstOrThrow()
        expect({ ...row, caller: JSON.parse(row.caller) }).toEqual({
          tenant: "acme",
          owner_type: "Multi",
          owner_id: ownerId,
          workflow: "held",
          execution_key: label,
          caller,
        })
        expect(decodeExecutionId(run.executionId)).toEqual({
          tenant: "acme",
          ownerType: "Multi",
          ownerId,
          workflow: "held",
          key: label,
        })
        expect(() => clientOf(scenario, { tenant: "other" }).held.attach(run.executionId)).toThrow(
          ForeignTenant,
        )
        const audit = await expectCleanAudit(scenario)
        expect(
          settledThenFinished([`hold#1 by ${second.name}`, `after#1 by ${second.name}`]),
        ).toContainEqual(settledBy(audit, run.executionId))
      },
    )

    scenarioTest(
      "a runner dying during an activity is resumed elsewhere by the recovery timer under the same attempt",
      async (scenario) => {
        // The recovery interval is longer than the lease: the survivor holds the bucket well
        // before the dead runner's claim lapses, so only the timer can be what resumes the run.
        const { first, second, firstBuckets } = await twoBalancedRunners(scenario, [
          ...FAST,
          "--recovery-ms",
          "6000",
        ])
        const label = "retried-then-killed"
        const ownerId = ownerIdInBuckets("payment", firstBuckets, "Multi")
        const run = await clientOf(scenario).held.start(ownerId, { label, failFirst: true })
        const killedAttempt = await journalEntry(
          scenario,
          "the second attempt runs on the first runner",
          (entry) => entry.step === "hold" && entry.attempt === 2,
        )
        expect(killedAttempt.pid).toBe(first.pid)
        await first.child.kill("SIGKILL")
        const timer = await scenario.db
          .selectFrom("akter.outbox")
          .select("due_at_ms")
          .where("id", "=", run.executionId)
          .executeTakeFirstOrThrow()
        const rerun = await journalEntry(
          scenario,
          "the attempt reruns on the survivor",
          (entry) => entry.step === "hold" && entry.pid === second.pid,
        )
        openGate(scenario.gates, label)
        const result = await run.result({ timeout: "60 seconds" })

        expect(rerun).toMatchObject({ attempt: 2, key: killedAttempt.key })
        // Resumed when the dead runner's claim came due, not before (same host: one clock).
        const skew = (await databaseNow(scenario.db)) - Date.now()
        expect(rerun.at + skew).toBeGreaterThanOrEqual(timer.due_at_ms - 50)
        expect(result).toEqual({
          _tag: "Success",
          value: { label, key: killedAttempt.key, attempt: 2, done: true },
        })
        const holds = readJournal(scenario.journal)
          .filter((entry) => entry.step === "hold")
          .map((entry) => [entry.attempt, entry.pid === first.pid ? "first" : "second"])
        expect(holds).toEqual([
          [1, "first"],
          [2, "first"],
          [2, "second"],
        ])
        const audit = await expectCleanAudit(scenario)
        expect(
          settledThenFinished([
            `hold#1 by ${first.name}`,
            `hold#2 by ${second.name}`,
            `after#1 by ${second.name}`,
          ]),
        ).toContainEqual(settledBy(audit, run.executionId))
      },
    )

    scenarioTest(
      "a drained runner abandons its live run recording nothing, and another runner replays it",
      async (scenario) => {
        const { first, second, firstBuckets } = await twoBalancedRunners(scenario, FAST)
        const label = "drained"
        const ownerId = ownerIdInBuckets("shipment", firstBuckets, "Multi")
        const run = await clientOf(scenario).held.start(ownerId, { label, failFirst: false })
        const drained = await journalEntry(
          scenario,
          "hold runs on the runner to drain",
          (entry) => entry.step === "hold",
        )
        expect(drained.pid).toBe(first.pid)
        expect(await first.child.kill("SIGTERM")).toEqual({ code: 0, signal: null })
        expect(first.count("runner drained")).toBe(1)

        // Nothing recorded: the attempt is still pending, nothing after it exists, no settle.
        expect(await stepRows(scenario, run.executionId)).toEqual([
          { step: "hold", attempt: 1, exit: null },
        ])
        expect(await settled(scenario, run.executionId)).toEqual([])
        const status = await scenario.db
          .selectFrom("akter.executions")
          .select("status")
          .where("execution_id", "=", run.executionId)
          .executeTakeFirstOrThrow()
        expect(status.status).toBe("running")

        const replayed = await journalEntry(
          scenario,
          "hold reruns on the other runner",
          (entry) => entry.step === "hold" && entry.pid === second.pid,
        )
        expect(replayed).toMatchObject({ attempt: 1, key: drained.key })
        openGate(scenario.gates, label)
        expect(await run.result({ timeout: "60 seconds" })).toEqual({
          _tag: "Success",
          value: { label, key: drained.key, attempt: 1, done: true },
        })
        await expectCleanAudit(scenario)
        expect(settledThenFinished(["hold#1", "after#1"])).toContainEqual(
          await settled(scenario, run.executionId),
        )
      },
    )
  })

  describe.concurrent("the generation fence", () => {
    scenarioTest(
      "a step write under a stale generation writes nothing and stops the run",
      async (scenario) => {
        const fleet = scenario.fleet({ app: APP, args: [...FAST, "--recovery-ms", "2000"] })
        const runner = fleet.spawn()
        await runner.runnerId()
        const label = "fenced"
        const ownerId = "fenced-owner"
        const run = await clientOf(scenario).held.start(ownerId, { label, failFirst: false })
        const held = await journalEntry(scenario, "hold runs", (entry) => entry.step === "hold")

        // Another activation takes the owner under the live pass, which then tries to settle.
        const bumped = await sql<{ generation: number }>`
          UPDATE akter.owners SET generation = generation + 1
          WHERE owner_type = 'Multi' AND owner_id = ${ownerId} RETURNING generation`.execute(
          scenario.db,
        )
        expect(bumped.rows).toHaveLength(1)
        openGate(scenario.gates, label)
        await waitUntil(
          "the runner reports the refused write",
          () => runner.count("write refused under a stale generation") === 1,
          { timeoutMs: 30_000, details: scenario.outputs },
        )

        // The pass is over and wrote nothing: hold still pending, `after` never ran.
        expect(await stepRows(scenario, run.executionId)).toEqual([
          { step: "hold", attempt: 1, exit: null },
        ])
        expect(await settled(scenario, run.executionId)).toEqual([])
        expect(readJournal(scenario.journal).map((entry) => entry.step)).toEqual(["hold"])

        // The claim's recovery timer brings it back under a fresh activation.
        const result = await run.result({ timeout: "60 seconds" })
        expect(result).toEqual({
          _tag: "Success",
          value: { label, key: held.key, attempt: 1, done: true },
        })
        expect(
          readJournal(scenario.journal).map((entry) => [entry.step, entry.attempt, entry.key]),
        ).toEqual([
          ["hold", 1, held.key],
          ["hold", 1, held.key],
          ["after", 1, expect.any(String)],
        ])
        await expectCleanAudit(scenario)
        expect(settledThenFinished(["hold#1", "after#1"])).toContainEqual(
          await settled(scenario, run.executionId),
        )
        expect(runner.count("write refused under a stale generation")).toBe(1)
      },
    )
  })

  describe.concurrent("races", () => {
    scenarioTest(
      "an event racing a wait's registration resolves exactly one wait, 20 rounds",
      async (scenario) => {
        const { client } = await oneRunner(scenario)
        const rounds = await inRounds(20, async (round) => {
          const ownerId = `racer-${round}`
          const run = await client.twoWaits.start(ownerId)
          await sleep(randomInt(0, 120))
          await client.emit(ownerId, "Ping", { n: 1 })
          await waitUntil(
            `round ${round}: the first wait settles`,
            async () => (await settled(scenario, run.executionId)).includes("first#1"),
            { timeoutMs: 60_000, intervalMs: 50, details: scenario.outputs },
          )
          await client.emit(ownerId, "Ping", { n: 2 })
          return { run, result: await run.result({ timeout: "60 seconds" }) }
        })
        const audit = await expectCleanAudit(scenario)
        for (const { run, result } of rounds) {
          expect(result).toEqual({ _tag: "Success", value: { first: 1, second: 2 } })
          // The first wait took the first event; the second, the second.
          expect(settledThenFinished(["first matched 1", "second matched 2"])).toContainEqual(
            audit.settles
              .filter((settle) => settle.executionId === run.executionId)
              .map((settle) => `${settle.step} matched ${settle.matched}`),
          )
        }
      },
    )

    scenarioTest(
      "a resume delivered while the run is live preempts it for the settled wait",
      async (scenario) => {
        const label = "live"
        const { client } = await oneRunner(scenario, [...FAST, "--recovery-ms", "30000"])
        const run = await client.liveWait.start("live-owner", { label })
        await journalEntry(scenario, "work runs", (entry) => entry.step === "work")
        await waitUntil(
          "the wait registers beside the running activity",
          async () =>
            (await stepRows(scenario, run.executionId)).some((row) => row.step === "ping"),
          { timeoutMs: 30_000, details: scenario.outputs },
        )
        await client.emit("live-owner", "Ping", { n: 5 })
        // Settled while `work` still runs: the live pass was woken, not left to end first.
        await waitUntil(
          "the wait settles in the live pass",
          async () => (await settled(scenario, run.executionId)).includes("ping#1"),
          { timeoutMs: 10_000, details: scenario.outputs },
        )
        expect(await settled(scenario, run.executionId)).toEqual(["ping#1"])
        openGate(scenario.gates, label)
        expect(await run.result({ timeout: "60 seconds" })).toEqual({
          _tag: "Success",
          value: { n: 5, worked: true },
        })
        expect(readJournal(scenario.journal).map((entry) => entry.step)).toEqual(["work"])
        await expectCleanAudit(scenario)
      },
    )

    scenarioTest(
      "a resume delivered while the run suspends is never lost and never leaves it suspended, 20 rounds",
      async (scenario) => {
        // With a 30 s recovery interval, a lost wake-up would show as a run far slower than 15 s.
        // A lease that lapsed on a loaded machine abandons passes, which then wait out that interval
        // by design; the bound holds only when the runner reports no such lapse.
        const { fleet, client } = await oneRunner(scenario, [
          ...FAST,
          "--lease-ms",
          "5000",
          "--recovery-ms",
          "30000",
        ])
        const rounds = await inRounds(20, async (round) => {
          const ownerId = `suspender-${round}`
          const run = await client.pingAfterWork.start(ownerId, { workMs: randomInt(0, 30) })
          await sleep(randomInt(0, 100))
          await client.emit(ownerId, "Ping", { n: round })
          const emitted = Date.now()
          const result = await run.result({ timeout: "60 seconds" })
          return { run, round, result, afterEmitMs: Date.now() - emitted }
        })
        const bound = fleet.leaseDisruptions() === 0 ? 15_000 : 45_000
        const audit = await expectCleanAudit(scenario)
        for (const { run, round, result, afterEmitMs } of rounds) {
          expect(result).toEqual({ _tag: "Success", value: { n: round } })
          expect(afterEmitMs, scenario.outputs()).toBeLessThan(bound)
          expect(settledThenFinished(["work#1", "ping#1"])).toContainEqual(
            settlesOf(audit, run.executionId),
          )
        }
        const open = await scenario.db
          .selectFrom("akter.executions")
          .select("execution_id")
          .where("status", "<>", "finished")
          .execute()
        expect(open).toEqual([])
      },
    )

    scenarioTest(
      "an interrupt delivered while the run suspends is never lost and never leaves it suspended, 40 rounds",
      async (scenario) => {
        // Each run registers an untimed wait and suspends with no timer; the interrupt lands around
        // that moment. A lost interrupt leaves the run suspended for good.
        const { client } = await oneRunner(scenario)
        const rounds = await inRounds(40, async (round) => {
          const run = await client.twoWaits.start(`interrupted-${round}`)
          await sleep(randomInt(0, 60))
          await run.interrupt()
          const result = await run
            .result({ timeout: "20 seconds" })
            .catch((error: unknown) => ({ _tag: String(error) }))
          return { round, result }
        })
        const owed = await scenario.db
          .selectFrom("akter.executions")
          .leftJoin("akter.outbox", (join) =>
            join
              .onRef("akter.outbox.id", "=", "akter.executions.execution_id")
              .on("akter.outbox.kind", "=", "timer"),
          )
          .select(["akter.executions.execution_id", "akter.outbox.due_at_ms"])
          .where("akter.executions.status", "=", "suspended")
          .where("akter.executions.interrupt", "=", true)
          .execute()
        expect(owed).toEqual([])
        expect(rounds.filter(({ result }) => result._tag !== "Interrupted")).toEqual([])
        await expectCleanAudit(scenario)
      },
    )

    scenarioTest(
      "a wait timeout racing its event records exactly one exit, and an earlier event wins: each order forced, then 20 racing rounds",
      async (scenario) => {
        const { client } = await oneRunner(scenario)
        const skew = (await databaseNow(scenario.db)) - Date.now()
        // The wait times out after 2 s: long enough that an event emitted right after the start
        // commits first on a loaded machine, short next to the test's time.
        // Rounds 0-3: the event right after the start, long before the deadline: it wins. Rounds
        // 4-7: the event only once the timeout is recorded: the timeout wins. The rest race.
        const forced = (round: number) =>
          round < 4 ? ("event" as const) : round < 8 ? ("timeout" as const) : undefined
        const rounds = await inRounds(28, async (round) => {
          const ownerId = `timer-${round}`
          const run = await client.timedWait.start(ownerId)
          if (forced(round) === "event") {
            const { sequence } = await client.emit(ownerId, "Ping", { n: round })
            return { run, round, sequence, result: await run.result({ timeout: "60 seconds" }) }
          }
          if (forced(round) === "timeout") {
            await waitUntil(
              `round ${round}: the timeout is recorded`,
              async () => (await settled(scenario, run.executionId)).includes("ping#1"),
              { timeoutMs: 30_000, intervalMs: 10 },
            )
            const { sequence } = await client.emit(ownerId, "Ping", { n: round })
            return { run, round, sequence, result: await run.result({ timeout: "60 seconds" }) }
          }
          const registered = await waitUntil(
            `round ${round}: the wait registers`,
            () =>
              scenario.db
                .selectFrom("akter.steps")
                .select("due_at_ms")
                .where("execution_id", "=", run.executionId)
                .where("step", "=", "ping")
                .executeTakeFirst(),
            { timeoutMs: 30_000, intervalMs: 10 },
          )
          // Emit within 40 ms either side of the deadline.
          await sleep(Math.max(0, registered.due_at_ms! - skew - Date.now() + randomInt(-40, 41)))
          const { sequence } = await client.emit(ownerId, "Ping", { n: round })
          return { run, round, sequence, result: await run.result({ timeout: "60 seconds" }) }
        })
        const audit = await expectCleanAudit(scenario)
        const events = await scenario.db
          .selectFrom("akter.events")
          .select(["owner_id", "emitted_at_ms"])
          .execute()
        const outcomes = { event: 0, timeout: 0 }
        for (const { run, round, sequence, result } of rounds) {
          const settles = audit.settles.filter((settle) => settle.executionId === run.executionId)
          expect(settledThenFinished(["ping", "rest"])).toContainEqual(
            settles.map((settle) => settle.step),
          )
          const emittedAt = events.find(
            (event) => event.owner_id === `timer-${round}`,
          )!.emitted_at_ms
          const value = (result as { value: { outcome: string } }).value.outcome
          expect([`event ${round}`, "timeout"]).toContain(value)
          if (forced(round) !== undefined) {
            expect(value).toBe(forced(round) === "event" ? `event ${round}` : "timeout")
          }
          const settle = settles[0]!
          if (value === "timeout") {
            outcomes.timeout += 1
            expect(settle.matched).toBeNull()
            // An event that committed before the deadline must have won (20 ms for the runner's
            // estimate of the database clock).
            expect(emittedAt).toBeGreaterThanOrEqual(settle.dueAtMs! - 20)
          } else {
            outcomes.event += 1
            expect(settle.matched).toBe(sequence)
          }
        }
        console.log(`wait timeout racing its event: ${JSON.stringify(outcomes)}`)
        expect(outcomes.event).toBeGreaterThanOrEqual(4)
        expect(outcomes.timeout).toBeGreaterThanOrEqual(4)
      },
    )

    scenarioTest(
      "interrupt racing completion records one result, and a repeated interrupt changes nothing: each order forced, then 20 racing rounds",
      async (scenario) => {
        const { client } = await oneRunner(scenario)
        // Rounds 0-3: interrupted while `touch` works for seconds: interrupted. Rounds 4-7:
        // interrupted once the result is in: completed. The rest race.
        const forced = (round: number) =>
          round < 4 ? ("Interrupted" as const) : round < 8 ? ("Success" as const) : undefined
        const rounds = await inRounds(28, async (round) => {
          const workMs = forced(round) === "Interrupted" ? 5_000 : randomInt(0, 40)
          const run = await client.brief.start(`brief-${round}`, { workMs })
          if (forced(round) === "Success") await run.result({ timeout: "60 seconds" })
          else if (forced(round) === undefined) await sleep(randomInt(0, 100))
          await run.interrupt()
          const result = await run.result({ timeout: "60 seconds" })
          await run.interrupt()
          return { round, run, result, again: await run.result({ timeout: "10 seconds" }) }
        })
        const audit = await expectCleanAudit(scenario)
        const journal = readJournal(scenario.journal)
        const outcomes = { completed: 0, interrupted: 0 }
        for (const { round, run, result, again } of rounds) {
          expect(again).toEqual(result)
          if (forced(round) !== undefined) expect(result._tag).toBe(forced(round))
          const settled = settlesOf(audit, run.executionId)
          const undos = journal.filter(
            (entry) => entry.execution === run.executionId && entry.step === "untouch",
          )
          if (result._tag === "Success") {
            outcomes.completed += 1
            expect(result.value).toEqual({ done: true })
            expect(settledThenFinished(["touch#1"])).toContainEqual(settled)
            expect(undos).toEqual([])
          } else {
            outcomes.interrupted += 1
            expect(result).toEqual({ _tag: "Interrupted", cause: "request" })
            // The compensation ran once exactly when the step it undoes had completed: then the
            // step's exit was committed with the compensation's first write.
            if (undos.length === 0) expect(settled).toEqual([])
            else {
              expect(undos).toHaveLength(1)
              expect(settledThenFinished(["touch#1", "untouch#1"])).toContainEqual(settled)
            }
          }
        }
        expect(audit.finishes).toBe(28)
        console.log(`interrupt racing completion: ${JSON.stringify(outcomes)}`)
        expect(outcomes.completed).toBeGreaterThanOrEqual(4)
        expect(outcomes.interrupted).toBeGreaterThanOrEqual(4)
      },
    )
  })
})
