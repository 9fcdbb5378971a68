/**
 * Issue 2's engine acceptance, on PGlite and on Postgres: replay, retries, clocks, races,
 * interrupts, attach, waits and their races, markers, bad input. Every test asserts what the
 * database holds, not only what the client saw; the races count settles and finishes with the
 * write-audit triggers, and force each order before they let it race.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeOwnerClient, startRunner, type Runner } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { decodeExecutionId, encodeExecutionId } from "../../runtime/model/executionId.js"
import { InvalidPayload } from "../../runtime/errors.js"
import { readExecutionSnapshots } from "../../runtime/engine/executionStore.js"
import { claimDue, deleteTimerPart } from "../../runtime/outbox/outboxStore.js"
import { composeStatement } from "../../runtime/storage/statementParts.js"
import { runUntilIdle, testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createPostgresDatabase, describeEachBackend } from "../support/backends.js"
import { installSettleAudit, readWriteAudit } from "../support/writeAudit.js"
import { makeProbe, probeYaml, type Probe } from "./probeWorkflows.js"
import { withRunner as runnerFor } from "../support/withRunner.js"

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("engine", (backend) => {
  let akter: TestAkter
  let probe: Probe
  let client: AnyClient
  let drop: (() => Promise<void>) | undefined

  beforeAll(async () => {
    probe = await makeProbe()
    if (backend === "postgres") {
      const database = await createPostgresDatabase()
      drop = database.drop
      akter = await testAkter({ databaseUrl: database.url })
    } else akter = await testAkter()
    await installSettleAudit(internalsOf(akter).storage.db)
    client = makeOwnerClient<AnyClient>(akter, probe.registration)
  })

  afterAll(async () => {
    await akter?.close()
    await drop?.()
  })

  const db = () => internalsOf(akter).storage.db
  const newOwner = () => `o-${randomUUID().slice(0, 8)}`

  const withRunner = <A>(run: (runner: Runner) => Promise<A>): Promise<A> =>
    runnerFor({ akter, workflows: probe.workflows, pollMs: 20 }, run)

  const stepRows = async (executionId: string) =>
    db()
      .selectFrom("akter.steps")
      .select(["step", "attempt", "kind", "exit", "due_at_ms", "matched"])
      .where("execution_id", "=", executionId)
      .orderBy("step")
      .orderBy("attempt")
      .execute()

  const timerRows = async (executionId: string) =>
    db().selectFrom("akter.outbox").select(["due_at_ms"]).where("id", "=", executionId).execute()

  /** How many times each execution became finished, as the write-audit triggers saw it. */
  const finishesByExecution = async () => {
    const { rows } = await sql<{ execution_id: string; n: number }>`
      SELECT execution_id, count(*)::int AS n FROM akter_audit.finishes
      GROUP BY execution_id`.execute(db())
    return new Map(rows.map((row) => [row.execution_id, row.n]))
  }

  const decodeOwner = (executionId: string) => {
    const address = decodeExecutionId(executionId)
    if (address instanceof Error) throw address
    return address.ownerId
  }

  const executionRow = async (executionId: string) =>
    db()
      .selectFrom("akter.executions")
      .select(["status", "interrupt", "workflow", "execution_key", "caller"])
      .where("execution_id", "=", executionId)
      .executeTakeFirst()

  const waitFor = async (condition: () => boolean | Promise<boolean>, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error("condition not reached in time")
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }

  describe("replay", () => {
    it("does not rerun a recorded activity when the execution resumes", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.replay.start(owner, { label: "a" })
        await runUntilIdle(akter, runner)
        expect(await run.status()).toEqual({ status: "suspended", interrupting: false })
        expect(probe.runs.of(owner, "count")).toBe(1)
        const before = await stepRows(run.executionId)
        expect(before.map((r) => [r.step, r.kind, r.exit !== null])).toEqual([
          ["count", "activity", true],
          ["nap", "sleep", false],
        ])
        akter.advance("61 minutes")
        await runUntilIdle(akter, runner)
        expect(await run.result()).toEqual({ _tag: "Success", value: { count: 1, after: "later" } })
        expect(probe.runs.of(owner, "count")).toBe(1)
        expect(probe.runs.of(owner, "after")).toBe(1)
        expect(await stepRows(run.executionId)).toEqual([])
        expect(await timerRows(run.executionId)).toEqual([])
      })
    })

    it("records each retry attempt as its own row and replays the final one", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.retry.start(owner)
        await waitFor(async () => (await executionRow(run.executionId))?.status === "suspended")
        const rows = await stepRows(run.executionId)
        const flaky = rows.filter((r) => r.step === "flaky")
        expect(flaky.map((r) => r.attempt)).toEqual([1, 2, 3])
        expect(flaky.every((r) => r.exit !== null)).toBe(true)
        expect(flaky.map((r) => r.due_at_ms !== null)).toEqual([true, true, false])
        expect(probe.runs.of(owner, "flaky")).toBe(3)
        akter.advance("2 hours")
        await runUntilIdle(akter, runner)
        expect(await run.result()).toEqual({ _tag: "Success", value: { attempts: 3 } })
        expect(probe.runs.of(owner, "flaky")).toBe(3)
      })
    })

    it("resumes a clock after a runner restart, keeping its due time across replays", async () => {
      const owner = newOwner()
      const run = await withRunner(async (runner) => {
        const started = await client.replay.start(owner, { label: "clock" })
        await runUntilIdle(akter, runner)
        return started
      })
      const due = (await stepRows(run.executionId)).find((r) => r.step === "nap")!.due_at_ms
      expect(due).not.toBeNull()
      await withRunner(async (runner) => {
        akter.advance("30 minutes")
        await runUntilIdle(akter, runner)
        expect(await run.status()).toEqual({ status: "suspended", interrupting: false })
        expect((await stepRows(run.executionId)).find((r) => r.step === "nap")!.due_at_ms).toBe(due)
        expect((await timerRows(run.executionId))[0]!.due_at_ms).toBe(due)
      })
      await withRunner(async (runner) => {
        akter.advance("31 minutes")
        await runUntilIdle(akter, runner)
        expect((await run.result())._tag).toBe("Success")
      })
    })

    it("replays a race's recorded winner without rerunning any branch", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.raced.start(owner)
        await runUntilIdle(akter, runner)
        const race = (await stepRows(run.executionId)).find((r) => r.step === "first")
        expect(race?.exit).not.toBeNull()
        expect(probe.aborted.has(owner) || probe.runs.of(owner, "slow") === 1).toBe(true)
        akter.advance("2 hours")
        await runUntilIdle(akter, runner)
        expect(await run.result()).toEqual({ _tag: "Success", value: { winner: "fast" } })
        expect(probe.runs.of(owner, "fast")).toBe(1)
        expect(probe.runs.of(owner, "slow")).toBe(1)
      })
    })

    it("returns a step's first result when the body calls it twice", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.twice.start(owner)
        await runUntilIdle(akter, runner)
        expect(await run.result()).toEqual({ _tag: "Success", value: { same: true } })
        expect(probe.runs.of(owner, "count")).toBe(1)
      })
    })

    it("dies with a clear message when the body calls a step the manifest does not declare", async () => {
      await withRunner(async (runner) => {
        const run = await client.undeclared.start(newOwner())
        await runUntilIdle(akter, runner)
        const result = await run.result()
        expect(result._tag).toBe("Defect")
        expect(result.message).toContain('called step "nope"')
        expect(result.message).toContain("test/fixtures/runtime/probe.yaml does not declare")
      })
    })
  })

  describe("interrupt", () => {
    it("interrupts a suspended execution: compensation runs once and Interrupt is recorded", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.compensated.start(owner, { hold: "sleep" })
        await runUntilIdle(akter, runner)
        expect(await run.status()).toEqual({ status: "suspended", interrupting: false })
        await run.interrupt()
        await runUntilIdle(akter, runner)
        expect(await run.result()).toEqual({ _tag: "Interrupted", cause: "request" })
        expect(probe.runs.of(owner, "book")).toBe(1)
        expect(probe.runs.of(owner, "unbook")).toBe(1)
        await run.interrupt()
        await runUntilIdle(akter, runner)
        expect(await run.result()).toEqual({ _tag: "Interrupted", cause: "request" })
        expect(probe.runs.of(owner, "unbook")).toBe(1)
        expect(await stepRows(run.executionId)).toEqual([])
        expect(await timerRows(run.executionId)).toEqual([])
      })
    })

    it("interrupts a running execution: the running activity is aborted, compensation runs once", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.compensated.start(owner, { hold: "block" })
        await waitFor(() => probe.gates.entered(`${owner}/block`))
        await run.interrupt()
        expect(await run.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Interrupted",
          cause: "request",
        })
        expect(probe.aborted.has(owner)).toBe(true)
        expect(probe.runs.of(owner, "unbook")).toBe(1)
        await runUntilIdle(akter, runner)
        expect(await stepRows(run.executionId)).toEqual([])
      })
    })

    it("keeps an interrupt that came after a pass loaded as a durable resume, though the pass suspends and its runner dies", async () => {
      const owner = newOwner()
      const run = await client.waits.start(owner, { mode: "single" })
      await withRunner((runner) => runUntilIdle(akter, runner))
      // Suspended on an untimed wait: no timer.
      expect(await timerRows(run.executionId)).toEqual([])
      const { rows } = await sql<{ routing_key: string }>`
        SELECT routing_key::text FROM akter.executions WHERE execution_id = ${run.executionId}`.execute(
        db(),
      )
      const routingKey = rows[0]!.routing_key
      // A pass loads the execution, then the interrupt pokes its timer and a runner claims it (as a
      // poll does while that pass is still live in the same runner).
      const [snapshot] = await readExecutionSnapshots(db(), [
        { routingKey, executionId: run.executionId },
      ])
      const loaded = snapshot?.execution
      expect(loaded?.pokes).toBe(0)
      await run.interrupt()
      const buckets = Array.from({ length: 256 }, (_, bucket) => bucket)
      const claimed = await claimDue(db(), internalsOf(akter).clock, buckets, [], 10, 60_000)
      expect(claimed.map((row) => row.id)).toEqual([run.executionId])
      // The pass suspends as it would have without the interrupt, and its runner dies before rerunning.
      await composeStatement(
        [
          deleteTimerPart(routingKey, run.executionId, {
            when: sql`true`,
            pokesSeen: loaded!.pokes,
          }),
        ],
        sql`true AS done`,
      ).execute(db())
      expect(await timerRows(run.executionId)).toHaveLength(1)
      akter.advance("2 minutes")
      await withRunner((runner) => runUntilIdle(akter, runner))
      expect(await run.result()).toEqual({ _tag: "Interrupted", cause: "request" })
      expect(await timerRows(run.executionId)).toEqual([])
    })

    it("gives exactly one result when interrupt races completion: each order forced, then 20 racing rounds, one finish each", async () => {
      // Interrupt first: asked before any runner saw the execution, so no step ever runs.
      const interruptedFirst = await Promise.all(
        Array.from({ length: 3 }, async (_, round) => {
          const run = await client.quick.start(newOwner(), { id: `first-${round}` })
          await run.interrupt()
          return run
        }),
      )
      await withRunner(async (runner) => {
        await runUntilIdle(akter, runner)
        // Completion first: interrupted once its result is recorded, which changes nothing.
        const completedFirst = await Promise.all(
          Array.from({ length: 3 }, async (_, round) => {
            const run = await client.quick.start(newOwner(), { id: `done-${round}` })
            expect(await run.result({ timeout: "5 seconds" })).toEqual({
              _tag: "Success",
              value: { id: `done-${round}` },
            })
            await run.interrupt()
            return run
          }),
        )
        const racing = await Promise.all(
          Array.from({ length: 20 }, async (_, round) => {
            const owner = newOwner()
            const run = await client.quick.start(owner, { id: `race-${round}` })
            await new Promise((resolve) => setTimeout(resolve, round % 5))
            await run.interrupt()
            return run
          }),
        )
        await runUntilIdle(akter, runner)
        const finishes = await finishesByExecution()
        const outcomes = { Success: 0, Interrupted: 0 }
        const judge = async (run: AnyClient, expected?: "Success" | "Interrupted") => {
          const first = await run.result()
          expect(["Success", "Interrupted"]).toContain(first._tag)
          if (expected !== undefined) expect(first._tag).toBe(expected)
          outcomes[first._tag as "Success" | "Interrupted"] += 1
          expect(await run.result()).toEqual(first)
          expect(finishes.get(run.executionId)).toBe(1)
          expect(await stepRows(run.executionId)).toEqual([])
          expect(await timerRows(run.executionId)).toEqual([])
        }
        for (const run of interruptedFirst) await judge(run, "Interrupted")
        for (const run of completedFirst) await judge(run, "Success")
        for (const run of racing) await judge(run)
        expect(outcomes.Success).toBeGreaterThanOrEqual(3)
        expect(outcomes.Interrupted).toBeGreaterThanOrEqual(3)
        for (const run of interruptedFirst) {
          expect(probe.runs.of(decodeOwner(run.executionId), "touch")).toBe(0)
        }
        for (const run of completedFirst) {
          expect((await executionRow(run.executionId))?.interrupt).toBe(false)
        }
        expect((await readWriteAudit(db())).duplicateFinishes).toEqual([])
      })
    })
  })

  describe("start, attach and results", () => {
    it("says unknown for an id that was never started, and gives a finished one's typed result", async () => {
      const never = encodeExecutionId({
        tenant: "default",
        ownerType: "Probe",
        ownerId: "nobody",
        workflow: "failing",
        key: "k",
      })
      expect(await client.failing.attach(never).status()).toEqual({ status: "unknown" })
      await withRunner(async (runner) => {
        const run = await client.failing.start(newOwner())
        await runUntilIdle(akter, runner)
        const result = await run.result()
        expect(result._tag).toBe("Failure")
        expect(result.error._tag).toBe("Refused")
        expect(result.error).toBeInstanceOf(
          probe.registration.workflows["failing"]!.errors["Refused"]!,
        )
        expect(result.error.reason).toBe("no stock")
        const reattached = await client.failing.attach(run.executionId).status()
        expect(reattached.status).toBe("finished")
      })
    })

    it("runs a start this process's runner takes on one statement per write: the start rides on the first, the pass reads nothing, the result is handed over", async () => {
      const runner = await startRunner({
        akter,
        workflows: probe.workflows,
        pollMs: 60_000,
        leaseMs: 120_000,
        heartbeatMs: 60_000,
      })
      try {
        await runUntilIdle(akter, runner)
        const counters = internalsOf(akter).storage.counters
        const before = counters.statements
        const owner = newOwner()
        const run = await client.quick.start(owner, { id: "counted" })
        expect(await run.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { id: "counted" },
        })
        // The start with the activation and the pending activity; its settle with the finish.
        expect(counters.statements - before).toBe(2)
        expect(probe.runs.of(owner, "touch")).toBe(1)
        expect((await executionRow(run.executionId))?.status).toBe("finished")
      } finally {
        await runner.close()
      }
    })

    it("reads nothing for a caller awaiting an execution whose pass runs here, however long it runs", async () => {
      const owner = newOwner()
      // A runner that polls and renews nothing in the window counted.
      const runner = await startRunner({
        akter,
        workflows: probe.workflows,
        pollMs: 60_000,
        leaseMs: 120_000,
        heartbeatMs: 60_000,
      })
      try {
        const run = await client.compensated.start(owner, { hold: "block" })
        await waitFor(() => probe.gates.entered(`${owner}/block`))
        const counters = internalsOf(akter).storage.counters
        // The runner's start-up work (its first poll and look-ahead) is over.
        let seen = -1
        await waitFor(async () => {
          const now = counters.statements
          await new Promise((resolve) => setTimeout(resolve, 60))
          const settled = now === seen && now === counters.statements
          seen = now
          return settled
        })
        const before = counters.statements
        const result = run.result({ timeout: "10 seconds" })
        // Past the first polls of a caller that reads (100 ms, then 200 ms).
        await new Promise((resolve) => setTimeout(resolve, 400))
        expect(counters.statements - before).toBe(0)
        probe.gates.open(`${owner}/block`)
        expect(await result).toEqual({ _tag: "Success", value: undefined })
      } finally {
        probe.gates.open(`${owner}/block`)
        await runner.close()
      }
    })

    it("records the result of a body that finishes before any step, for a start this process's runner took", async () => {
      const owner = newOwner()
      await withRunner(async () => {
        const run = await client.instant.start(owner, { skip: true })
        expect(await run.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { skipped: true },
        })
        const row = await db()
          .selectFrom("akter.executions")
          .select(["status", "result"])
          .where("execution_id", "=", run.executionId)
          .executeTakeFirstOrThrow()
        expect(row.status).toBe("finished")
        expect(await client.instant.attach(run.executionId).status()).toEqual({
          status: "finished",
          result: { _tag: "Success", value: { skipped: true } },
        })
        expect(await timerRows(run.executionId)).toEqual([])
      })
    })

    it("writes a start itself when the runner that took it fails its first write, and the execution still runs", async () => {
      const owner = newOwner()
      const refused = encodeExecutionId({
        tenant: "default",
        ownerType: "Probe",
        ownerId: owner,
        workflow: "quick",
        key: "refused",
      })
      // While the triggers stand, its step rows are refused, and so is its owner created activated:
      // whichever write of the pass that took the start would have recorded it (the flush of the
      // start alone, or the start with the pending activity) fails, and no later pass gets further.
      await sql`CREATE FUNCTION akter_test_refuse_steps() RETURNS trigger AS $$
        BEGIN
          IF TG_TABLE_NAME = 'steps' THEN
            IF NEW.execution_id = ${sql.lit(refused)} THEN RAISE EXCEPTION 'refused by the test'; END IF;
          ELSIF NEW.owner_id = ${sql.lit(owner)} AND NEW.generation > 0 THEN
            RAISE EXCEPTION 'refused by the test';
          END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql`.execute(db())
      await sql`CREATE TRIGGER akter_test_refuse_steps BEFORE INSERT ON akter.steps FOR EACH ROW
        EXECUTE FUNCTION akter_test_refuse_steps()`.execute(db())
      await sql`CREATE TRIGGER akter_test_refuse_owners BEFORE INSERT ON akter.owners FOR EACH ROW
        EXECUTE FUNCTION akter_test_refuse_steps()`.execute(db())
      let run: { executionId: string; result: (o: object) => Promise<unknown> }
      try {
        run = await withRunner(async () => {
          const started = await client.quick.start(owner, { id: "refused" })
          const row = await db()
            .selectFrom("akter.executions")
            .select(["status", "awaited"])
            .where("execution_id", "=", started.executionId)
            .executeTakeFirst()
          // Written by the start itself (which marks it awaited), not by the refused pass.
          expect(row).toEqual({ status: "running", awaited: true })
          return started
        })
      } finally {
        await sql`DROP TRIGGER akter_test_refuse_steps ON akter.steps`.execute(db())
        await sql`DROP TRIGGER akter_test_refuse_owners ON akter.owners`.execute(db())
        await sql`DROP FUNCTION akter_test_refuse_steps()`.execute(db())
      }
      await withRunner(async (runner) => {
        await sql`UPDATE akter.outbox SET due_at_ms = 0 WHERE id = ${run.executionId}`.execute(db())
        await runUntilIdle(akter, runner)
      })
      expect(await run.result({ timeout: "5 seconds" })).toEqual({
        _tag: "Success",
        value: { id: "refused" },
      })
      expect(probe.runs.of(owner, "touch")).toBe(1)
    })

    it("runs a start at once whose owner another runner activated since this one took it", async () => {
      const owner = newOwner()
      await withRunner(async () => {
        const first = await client.quick.start(owner, { id: "first" })
        expect((await first.result({ timeout: "5 seconds" }))._tag).toBe("Success")
        // Another runner takes the owner: this runner's activation is stale, and the write that
        // carries the next start commits the start but nothing under the old generation.
        await sql`UPDATE akter.owners SET generation = generation + 1
          WHERE owner_id = ${owner}`.execute(db())
        const second = await client.quick.start(owner, { id: "second" })
        // Well inside the 30 s recovery interval: the start left its timer due now.
        expect(await second.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { id: "second" },
        })
      })
      expect(probe.runs.of(owner, "touch")).toBe(2)
    })

    it("runs the body once for two concurrent starts with one key", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const [one, two] = await Promise.all([
          client.quick.start(owner, { id: "same" }),
          client.quick.start(owner, { id: "same" }),
        ])
        expect(one.executionId).toBe(two.executionId)
        await runUntilIdle(akter, runner)
        expect(probe.runs.of(owner, "touch")).toBe(1)
        const count = await db()
          .selectFrom("akter.executions")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("owner_id", "=", owner)
          .executeTakeFirst()
        expect(Number(count?.n)).toBe(1)
      })
    })

    it("attaches a retried start with the same command id, and makes a new execution for a new one", async () => {
      const owner = newOwner()
      const commandId = randomUUID()
      const first = await client.keyless.start(owner, undefined, { commandId })
      const retried = await client.keyless.start(owner, undefined, { commandId })
      const other = await client.keyless.start(owner, undefined)
      expect(retried.executionId).toBe(first.executionId)
      expect(other.executionId).not.toBe(first.executionId)
      await withRunner((runner) => runUntilIdle(akter, runner))
      expect(probe.runs.of(owner, "touch")).toBe(2)
    })

    it("refuses a start whose input fails its schema, naming the field, and writes nothing", async () => {
      const owner = newOwner()
      const error = await client.compensated
        .start(owner, { hold: "sideways" })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(InvalidPayload)
      expect((error as InvalidPayload).path).toBe("hold")
      expect((error as InvalidPayload).message).toContain(
        "input of Probe.compensated is invalid at hold",
      )
      const extra = await client.quick.start(owner, { id: "x", extra: 1 }).catch((e: unknown) => e)
      expect((extra as InvalidPayload).message).toContain("extra")
      const owners = await db()
        .selectFrom("akter.owners")
        .select("owner_id")
        .where("owner_id", "=", owner)
        .execute()
      expect(owners).toEqual([])
    })

    it("starts another workflow exactly once through the outbox and records its id", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.parent.start(owner)
        await runUntilIdle(akter, runner)
        const result = await run.result()
        expect(result._tag).toBe("Success")
        const child = client.quick.attach(result.value.child)
        expect(await child.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { id: "kid" },
        })
        expect(probe.runs.of("child-of-parent", "touch")).toBe(1)
        const staged = await db()
          .selectFrom("akter.outbox")
          .select("id")
          .where("kind", "=", "start")
          .execute()
        expect(staged).toEqual([])
      })
    })
  })

  describe("waits", () => {
    it("sees an event emitted between the start and the wait's registration", async () => {
      const owner = newOwner()
      const run = await client.waits.start(owner, { mode: "single" })
      await client.emit(owner, "Ping", { n: 7 })
      await withRunner(async (runner) => {
        await runUntilIdle(akter, runner)
        expect(await run.result()).toEqual({ _tag: "Success", value: { seen: [7] } })
      })
    })

    it("ignores an event emitted before the start", async () => {
      const owner = newOwner()
      await client.emit(owner, "Ping", { n: 1 })
      await withRunner(async (runner) => {
        const run = await client.waits.start(owner, { mode: "single" })
        await runUntilIdle(akter, runner)
        expect(await run.status()).toEqual({ status: "suspended", interrupting: false })
        await client.emit(owner, "Ping", { n: 2 })
        expect(await run.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { seen: [2] },
        })
      })
    })

    it("resolves a wait whose event is emitted while the run registers or suspends, 20 rounds", async () => {
      await withRunner(async () => {
        const runs = await Promise.all(
          Array.from({ length: 20 }, async (_, round) => {
            const owner = newOwner()
            const run = await client.waits.start(owner, { mode: "single" })
            await new Promise((resolve) => setTimeout(resolve, round))
            await client.emit(owner, "Ping", { n: round })
            return { run, round }
          }),
        )
        for (const { run, round } of runs) {
          expect(await run.result({ timeout: "10 seconds" })).toEqual({
            _tag: "Success",
            value: { seen: [round] },
          })
        }
      })
    })

    it("resolves two sequential waits with two events", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.waits.start(owner, { mode: "sequential" })
        await runUntilIdle(akter, runner)
        await client.emit(owner, "Ping", { n: 1 })
        await runUntilIdle(akter, runner)
        await client.emit(owner, "Ping", { n: 2 })
        expect(await run.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { seen: [1, 2] },
        })
      })
    })

    it("resolves concurrent waits for one event with that event", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.waits.start(owner, { mode: "concurrent" })
        await runUntilIdle(akter, runner)
        await client.emit(owner, "Ping", { n: 5 })
        expect(await run.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { seen: [5, 5] },
        })
      })
    })

    it("skips events its where filter refuses", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.waits.start(owner, { mode: "filtered" })
        await client.emit(owner, "Ping", { n: 3 })
        await runUntilIdle(akter, runner)
        expect(await run.status()).toEqual({ status: "suspended", interrupting: false })
        await client.emit(owner, "Ping", { n: 4 })
        expect(await run.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { seen: [4] },
        })
      })
    })

    it("settles a wait once whichever of its timeout and its event comes first: each order forced, then 20 racing rounds", async () => {
      // The event first: emitted before any runner registers the wait, so the first scan finds it
      // (a scan is always looked at before the deadline).
      const eventFirst = await Promise.all(
        Array.from({ length: 3 }, async (_, round) => {
          const owner = newOwner()
          const run = await client.timed.start(owner)
          const { sequence } = await client.emit(owner, "Ping", { n: 100 + round })
          return { run, n: 100 + round, sequence, expected: `event ${100 + round}` }
        }),
      )
      await withRunner(async (runner) => {
        // The timeout first: the event is emitted only once the timeout is recorded.
        const timeoutFirst = await Promise.all(
          Array.from({ length: 3 }, async (_, round) => {
            const owner = newOwner()
            const run = await client.timed.start(owner)
            await waitFor(async () =>
              (await stepRows(run.executionId)).some((r) => r.step === "ping" && r.exit !== null),
            )
            const { sequence } = await client.emit(owner, "Ping", { n: 200 + round })
            return { run, n: 200 + round, sequence, expected: "timeout" }
          }),
        )
        const racing = await Promise.all(
          Array.from({ length: 20 }, async (_, round) => {
            const owner = newOwner()
            const run = await client.timed.start(owner)
            await new Promise((resolve) => setTimeout(resolve, 40 + (round % 5) * 5))
            const { sequence } = await client.emit(owner, "Ping", { n: round })
            return { run, n: round, sequence, expected: undefined }
          }),
        )
        await runUntilIdle(akter, runner)
        const rounds = [...eventFirst, ...timeoutFirst, ...racing]
        const audit = await readWriteAudit(db())
        const settlesOfPing = (executionId: string) =>
          audit.settles.filter((s) => s.executionId === executionId && s.step === "ping")
        for (const { run } of rounds) {
          const rows = (await stepRows(run.executionId)).filter((r) => r.step === "ping")
          expect(rows).toHaveLength(1)
          expect(rows[0]!.exit).not.toBeNull()
          expect(settlesOfPing(run.executionId)).toHaveLength(1)
        }
        expect(audit.overwrites).toEqual([])
        akter.advance("2 hours")
        await runUntilIdle(akter, runner)
        const outcomes = { event: 0, timeout: 0 }
        for (const { run, n, sequence, expected } of rounds) {
          const result = await run.result()
          expect(result._tag).toBe("Success")
          // The event is this round's own, and the settle recorded which event it took.
          expect([`event ${n}`, "timeout"]).toContain(result.value.outcome)
          if (expected !== undefined) expect(result.value.outcome).toBe(expected)
          const [settle] = settlesOfPing(run.executionId)
          if (result.value.outcome === "timeout") {
            outcomes.timeout += 1
            expect(settle!.matched).toBeNull()
          } else {
            outcomes.event += 1
            expect(settle!.matched).toBe(sequence)
          }
        }
        expect(outcomes.event).toBeGreaterThanOrEqual(3)
        expect(outcomes.timeout).toBeGreaterThanOrEqual(3)
      })
    })
  })

  describe("clocks and markers", () => {
    it("fires two concurrent clocks each at its own time", async () => {
      const owner = newOwner()
      await withRunner(async (runner) => {
        const run = await client.clocks.start(owner)
        await runUntilIdle(akter, runner)
        akter.advance("90 seconds")
        await runUntilIdle(akter, runner)
        expect(probe.runs.of(owner, "stampA")).toBe(1)
        expect(probe.runs.of(owner, "stampB")).toBe(0)
        akter.advance("1 minute")
        await runUntilIdle(akter, runner)
        expect(await run.result()).toEqual({ _tag: "Success", value: { a: 1, b: 1 } })
      })
    })

    it("reads a marker's recorded value, and 0 for an execution that started before the marker", async () => {
      const withoutMarker = await makeProbe(
        probeYaml.replace(/    versions:\n      fraud: \{ min: 0, current: 2 \}\n/, ""),
      )
      const oldClient = makeOwnerClient<AnyClient>(akter, withoutMarker.registration)
      const before = newOwner()
      const old = await oldClient.marked.start(before)
      const after = newOwner()
      await withRunner(async (runner) => {
        const fresh = await client.marked.start(after)
        await runUntilIdle(akter, runner)
        await client.emit(before, "Signal", { from: "test" })
        await client.emit(after, "Signal", { from: "test" })
        expect(await old.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { fraud: 0 },
        })
        expect(await fresh.result({ timeout: "5 seconds" })).toEqual({
          _tag: "Success",
          value: { fraud: 2 },
        })
      })
    })
  })

  it("records the starting caller and keeps it on resume", async () => {
    const owner = newOwner()
    const acme = makeOwnerClient<AnyClient>(akter, probe.registration, {
      tenant: "acme",
      subject: "ada",
    })
    const run = await acme.quick.start(owner, { id: "attributed" })
    await withRunner((runner) => runUntilIdle(akter, runner))
    const row = await executionRow(run.executionId)
    expect(JSON.parse(row!.caller)).toEqual({ tenant: "acme", subject: "ada" })
    const { rows } = await sql<{
      n: number
    }>`SELECT count(*)::int AS n FROM akter.owners WHERE owner_id = ${owner}`.execute(db())
    expect(rows[0]!.n).toBe(1)
  })
})
