/**
 * Issue 15's workflow deadline, on PGlite and on Postgres with the test clock: the deadline
 * interrupts a sleeping and a running execution, its compensation runs once, and the result names
 * the deadline — to the client, in inspect and in the list API; a start may shorten the deadline,
 * never lengthen it; a client's interrupt before the deadline stays a request. Then deadline
 * racing completion: each order forced, then 20 racing rounds, each with exactly one finish as the
 * database's write-audit triggers count them.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { renderExecutionDetail } from "../../cli/renderInspection.js"
import {
  implementWorkflow,
  listExecutions,
  makeOwnerClient,
  type Runner,
  type WorkflowImplementation,
} from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { inspectExecution, runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { installSettleAudit, readWriteAudit } from "../support/writeAudit.js"
import { Gates, RunCounter } from "./probeWorkflows.js"
import { withRunner as runnerFor } from "../support/withRunner.js"

const YAML = `
akter: 1
owner: Lease
workflows:
  hold:
    input: { hold: { enum: [sleep, block] } }
    output: { held: string }
    deadline: 7d
    steps:
      book: { kind: activity, output: { booking: string } }
      unbook: { kind: activity, input: { booking: string } }
      block: { kind: activity }
      rest: { kind: sleep, duration: 30d }
`

const DAY = 86_400_000

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("workflow deadline", (backend) => {
  let akter: TestAkter
  let client: AnyClient
  let workflows: readonly WorkflowImplementation[]
  const runs = new RunCounter()
  const gates = new Gates()
  const aborted = new Set<string>()

  beforeAll(async () => {
    const registration = await registrationFromYaml(YAML, "test/runtime/lease.yaml")
    workflows = [
      implementWorkflow(registration, "hold", {
        activities: {
          book: (ctx: { ownerId: string }) => {
            runs.bump(ctx.ownerId, "book")
            return Promise.resolve({ booking: `b-${ctx.ownerId}` })
          },
          unbook: (_: { booking: string }, ctx: { ownerId: string }) => {
            runs.bump(ctx.ownerId, "unbook")
            return Promise.resolve()
          },
          block: async (ctx: { ownerId: string; signal: AbortSignal }) => {
            runs.bump(ctx.ownerId, "block")
            ctx.signal.addEventListener("abort", () => aborted.add(ctx.ownerId))
            await gates.wait(ctx.ownerId, ctx.signal)
          },
        },
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        body: (input: { hold: "sleep" | "block" }, wf: any) =>
          Effect.gen(function* () {
            const booked = yield* wf.withCompensation(wf.book(), (b: { booking: string }) =>
              wf.unbook({ booking: b.booking }),
            )
            if (input.hold === "sleep") yield* wf.rest()
            else yield* wf.block()
            return { held: booked.booking }
          }) as Effect.Effect<unknown, unknown>,
      }),
    ]
    akter = await openTestAkter(backend)
    await installSettleAudit(internalsOf(akter).storage.db)
    client = makeOwnerClient<AnyClient>(akter, registration)
  })

  afterAll(async () => {
    await akter?.close()
  })

  const db = () => internalsOf(akter).storage.db

  const withRunner = <A>(run: (runner: Runner) => Promise<A>): Promise<A> =>
    runnerFor({ akter, workflows, pollMs: 20 }, run)

  const executionRow = (executionId: string) =>
    db()
      .selectFrom("akter.executions")
      .select(["started_at_ms", "deadline_at_ms", "interrupted_by", "outcome", "status"])
      .where("execution_id", "=", executionId)
      .executeTakeFirstOrThrow()

  const timerDue = async (executionId: string) =>
    (
      await db()
        .selectFrom("akter.outbox")
        .select("due_at_ms")
        .where("id", "=", executionId)
        .executeTakeFirst()
    )?.due_at_ms

  const finishesOf = async (executionId: string) => {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM akter_audit.finishes WHERE execution_id = ${executionId}`.execute(
      db(),
    )
    return rows[0]!.n
  }

  const waitFor = async (condition: () => boolean | Promise<boolean>, what: string) => {
    const until = Date.now() + 20_000
    while (!(await condition())) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  const newOwner = (label: string) => `${label}-${randomUUID().slice(0, 8)}`

  it("interrupts a sleeping execution at its deadline: compensation once, the result names the deadline", async () => {
    await withRunner(async (runner) => {
      const owner = newOwner("sleeper")
      const run = await client.hold.start(owner, { hold: "sleep" })
      await runUntilIdle(akter, runner)
      const row = await executionRow(run.executionId)
      expect(row.deadline_at_ms).toBe(row.started_at_ms + 7 * DAY)
      // The 30-day sleep is due after the deadline: the timer is armed at the deadline instead.
      expect(await timerDue(run.executionId)).toBe(row.deadline_at_ms)
      akter.advance("6 days")
      await runUntilIdle(akter, runner)
      expect(await run.status()).toEqual({ status: "suspended", interrupting: false })
      akter.advance("1 day")
      await runUntilIdle(akter, runner)
      expect(await run.result()).toEqual({ _tag: "Interrupted", cause: "deadline" })
      expect(runs.of(owner, "unbook")).toBe(1)
      expect(await executionRow(run.executionId)).toMatchObject({
        status: "finished",
        outcome: "interrupted",
        interrupted_by: "deadline",
      })
      // Visible to inspect and the list API, and nothing runs again.
      const detail = (await inspectExecution(akter, run.executionId))!
      expect(detail.interruptedBy).toBe("deadline")
      expect(detail.result).toEqual({ _tag: "Interrupt", cause: "deadline" })
      const text = renderExecutionDetail(detail, akter.now())
      expect(text).toMatch(/^status +finished: interrupted by deadline$/m)
      expect(text).toMatch(/^result +Interrupt by deadline$/m)
      const page = await listExecutions(akter, { ownerType: "Lease", ownerId: owner })
      expect(page.executions.map((e) => [e.outcome, e.interruptedBy])).toEqual([
        ["interrupted", "deadline"],
      ])
      akter.advance("30 days")
      await runUntilIdle(akter, runner)
      expect(runs.of(owner, "unbook")).toBe(1)
      expect(await finishesOf(run.executionId)).toBe(1)
    })
  })

  it("interrupts a running execution at its deadline: its activity is aborted, compensation once", async () => {
    await withRunner(async (runner) => {
      const owner = newOwner("runner")
      const run = await client.hold.start(owner, { hold: "block" })
      await waitFor(() => gates.entered(owner), "the blocking activity")
      expect((await run.status()).status).toBe("running")
      akter.advance("7 days")
      expect(await run.result({ timeout: "20 seconds" })).toEqual({
        _tag: "Interrupted",
        cause: "deadline",
      })
      expect(aborted.has(owner)).toBe(true)
      expect(runs.of(owner, "unbook")).toBe(1)
      gates.open(owner)
      await runUntilIdle(akter, runner)
      expect(runs.of(owner, "unbook")).toBe(1)
      expect(runs.of(owner, "block")).toBe(1)
      expect(await finishesOf(run.executionId)).toBe(1)
    })
  })

  it("takes a shorter deadline at start, refuses a longer one, and keeps a request a request", async () => {
    await withRunner(async (runner) => {
      const owner = newOwner("short")
      const run = await client.hold.start(owner, { hold: "sleep" }, { deadline: "1 hour" })
      await runUntilIdle(akter, runner)
      const row = await executionRow(run.executionId)
      expect(row.deadline_at_ms).toBe(row.started_at_ms + 3_600_000)
      akter.advance("1 hour")
      await runUntilIdle(akter, runner)
      expect(await run.result()).toEqual({ _tag: "Interrupted", cause: "deadline" })

      const longer = newOwner("longer")
      await expect(
        client.hold.start(longer, { hold: "sleep" }, { deadline: "8 days" }),
      ).rejects.toMatchObject({
        _tag: "InvalidPayload",
        path: "deadline",
        message:
          "start options of Lease.hold is invalid at deadline: 691200000 ms is later than the workflow's deadline of 604800000 ms; a start may only shorten it",
      })
      const written = await db()
        .selectFrom("akter.executions")
        .select("execution_id")
        .where("owner_id", "=", longer)
        .execute()
      expect(written).toEqual([])

      // Asked for before the deadline: a request, though the deadline passes while it is handled.
      const asked = await client.hold.start(newOwner("asked"), { hold: "sleep" })
      await runUntilIdle(akter, runner)
      await asked.interrupt()
      akter.advance("8 days")
      await runUntilIdle(akter, runner)
      expect(await asked.result()).toEqual({ _tag: "Interrupted", cause: "request" })
      expect((await executionRow(asked.executionId)).interrupted_by).toBe("request")
    })
    // Asked for after the deadline passed, before any runner looked: the deadline's.
    const late = await client.hold.start(newOwner("late"), { hold: "sleep" })
    akter.advance("8 days")
    await late.interrupt()
    await withRunner(async (runner) => {
      await runUntilIdle(akter, runner)
      expect(await late.result()).toEqual({ _tag: "Interrupted", cause: "deadline" })
    })
  })

  it("gives exactly one result when the deadline races completion: each order forced, then 20 racing rounds", async () => {
    await withRunner(async (runner) => {
      const startBlocked = async (label: string) => {
        const owner = newOwner(label)
        const run = await client.hold.start(owner, { hold: "block" })
        await waitFor(() => gates.entered(owner), "the blocking activity")
        return { owner, run }
      }
      // Completion first: the activity returns, the result is recorded, then the deadline passes.
      const done = await startBlocked("done")
      gates.open(done.owner)
      expect(await done.run.result({ timeout: "20 seconds" })).toEqual({
        _tag: "Success",
        value: { held: `b-${done.owner}` },
      })
      akter.advance("7 days")
      await runUntilIdle(akter, runner)
      expect(await done.run.result()).toMatchObject({ _tag: "Success" })
      expect(runs.of(done.owner, "unbook")).toBe(0)
      // Deadline first: the execution is interrupted, then the activity returns.
      const late = await startBlocked("late")
      akter.advance("7 days")
      expect(await late.run.result({ timeout: "20 seconds" })).toEqual({
        _tag: "Interrupted",
        cause: "deadline",
      })
      gates.open(late.owner)
      await runUntilIdle(akter, runner)
      expect(runs.of(late.owner, "unbook")).toBe(1)

      // Racing: the activity returns while the clock passes the deadline.
      const racing = []
      for (let round = 0; round < 20; round++) {
        const blocked = await startBlocked(`race${round}`)
        akter.advance("7 days")
        await new Promise((resolve) => setTimeout(resolve, round % 4))
        gates.open(blocked.owner)
        racing.push(blocked)
      }
      await runUntilIdle(akter, runner)
      const outcomes = { Success: 0, Interrupted: 0 }
      for (const { owner, run } of [done, late, ...racing]) {
        const result = await run.result()
        expect(["Success", "Interrupted"]).toContain(result._tag)
        outcomes[result._tag as "Success" | "Interrupted"] += 1
        // One finish each, and compensation exactly when interrupted.
        expect(await finishesOf(run.executionId)).toBe(1)
        expect(runs.of(owner, "unbook")).toBe(result._tag === "Interrupted" ? 1 : 0)
        const row = await executionRow(run.executionId)
        expect(row.outcome).toBe(result._tag === "Interrupted" ? "interrupted" : "succeeded")
        if (result._tag === "Interrupted") {
          expect(result).toEqual({ _tag: "Interrupted", cause: "deadline" })
          expect(row.interrupted_by).toBe("deadline")
        }
      }
      expect(outcomes.Success + outcomes.Interrupted).toBe(22)
      expect(outcomes.Success).toBeGreaterThanOrEqual(1)
      expect(outcomes.Interrupted).toBeGreaterThanOrEqual(1)
      expect((await readWriteAudit(db())).duplicateFinishes).toEqual([])
    })
  })
})
