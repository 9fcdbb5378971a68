/**
 * Issue 15's children, on PGlite and on Postgres with the test clock: a start step that awaits its
 * child receives the child's output or its declared error (as the child workflow's error class), and
 * the child's finish wakes the parent; a parent's end interrupts its open children whose policy is
 * `interrupt`, once each (the audit triggers count finishes), and leaves the others running. Every
 * test asserts the rows the database holds afterwards.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { implementWorkflow, makeOwnerClient, type Runner } from "../../runtime/index.js"
import { showExecution } from "../../runtime/inspect/executionQueries.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { type UntypedSteps as Wf } from "../support/untypedSteps.js"
import { installSettleAudit, readWriteAudit } from "../support/writeAudit.js"
import { withRunner as runnerFor } from "../support/withRunner.js"

const FAMILY = `
akter: 1
owner: Family
events:
  Go: { n: integer }
workflows:
  parent:
    input: { fail: boolean, child: string }
    output: { got: string }
    steps:
      check: { kind: start, workflow: child, await: true }
  child:
    input: { fail: boolean }
    output: { value: string }
    errors:
      Refused: { reason: string }
    steps:
      decide:
        kind: activity
        input: { fail: boolean }
        output: { value: string }
        errors: [Refused]
  holder:
    input: { leave: boolean, id: string }
    steps:
      taken: { kind: start, workflow: sleeper, await: true }
      left: { kind: start, workflow: sleeper, await: true, parentClose: leave }
      loose: { kind: start, workflow: sleeper, parentClose: interrupt }
  sleeper:
    steps:
      book: { kind: activity }
      unbook: { kind: activity }
      hold: { kind: wait, event: Go }
`

const registration = await registrationFromYaml(FAMILY, "manifests/family.yaml")
const Refused = registration.workflows["child"]!.errors["Refused"]!

/** Compensations of each sleeper, by owner id: an interrupt that reached it twice would show 2. */
const unbooked = new Map<string, number>()

const workflows = [
  implementWorkflow(registration, "parent", {
    activities: {},
    body: ((input: { fail: boolean; child: string }, wf: Wf) =>
      Effect.gen(function* () {
        const checked = wf.check(input.child, { fail: input.fail }) as Effect.Effect<
          { value: string },
          { readonly _tag: "Refused"; readonly reason: string }
        >
        const got = yield* checked.pipe(
          Effect.map((done) => `value ${done.value}`),
          Effect.catchTag("Refused", (refused) =>
            Effect.succeed(
              `${refused instanceof Refused ? "typed" : "untyped"} refusal: ${refused.reason}`,
            ),
          ),
        )
        return { got }
      })) as never,
  }),
  implementWorkflow(registration, "child", {
    activities: {
      decide: ({ fail }: { fail: boolean }) =>
        fail
          ? Effect.fail(new Refused({ reason: "limit reached" } as never))
          : Effect.succeed({ value: "approved" }),
    },
    body: ((input: { fail: boolean }, wf: Wf) => wf.decide(input)) as never,
  }),
  implementWorkflow(registration, "holder", {
    activities: {},
    body: ((input: { leave: boolean; id: string }, wf: Wf) =>
      Effect.gen(function* () {
        yield* wf.loose(`loose-${input.id}`)
        yield* input.leave ? wf.left(`left-${input.id}`) : wf.taken(`taken-${input.id}`)
      })) as never,
  }),
  implementWorkflow(registration, "sleeper", {
    activities: {
      book: () => Promise.resolve(),
      unbook: (ctx: { ownerId: string }) => {
        unbooked.set(ctx.ownerId, (unbooked.get(ctx.ownerId) ?? 0) + 1)
        return Promise.resolve()
      },
    },
    body: ((_: unknown, wf: Wf) =>
      Effect.gen(function* () {
        yield* wf.withCompensation(wf.book(), () => wf.unbook())
        yield* wf.hold()
      })) as never,
  }),
]

describeEachBackend("children", (backend) => {
  let akter: TestAkter
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let client: any

  beforeAll(async () => {
    akter = await openTestAkter(backend)
    await installSettleAudit(internalsOf(akter).storage.db)
    client = makeOwnerClient(akter, registration)
  })
  afterAll(async () => {
    await akter?.close()
  })

  const db = () => internalsOf(akter).storage.db
  const withRunner = <A>(run: (runner: Runner) => Promise<A>): Promise<A> =>
    runnerFor({ akter, workflows, pollMs: 20 }, run)
  const childrenOf = (executionId: string) =>
    db()
      .selectFrom("akter.executions")
      .select([
        "execution_id",
        "owner_id",
        "workflow",
        "status",
        "interrupt",
        "outcome",
        "parent_step",
        "parent_awaits",
        "parent_close",
      ])
      .where("parent_execution_id", "=", executionId)
      .orderBy("parent_step")
      .execute()
  const leftovers = async (executionIds: readonly string[]) => ({
    steps: await db()
      .selectFrom("akter.steps")
      .select(["execution_id", "step"])
      .where("execution_id", "in", executionIds)
      .execute(),
    outbox: await db()
      .selectFrom("akter.outbox")
      .select(["kind", "id"])
      .where("id", "in", executionIds)
      .execute(),
  })

  it("a parent awaiting a child that fails with a declared error receives it as the child's error class", async () => {
    await withRunner(async (runner) => {
      const run = await client.parent.start(`p-${randomUUID()}`, {
        fail: true,
        child: `c-${randomUUID()}`,
      })
      await runUntilIdle(akter, runner)
      expect(await run.result()).toEqual({
        _tag: "Success",
        value: { got: "typed refusal: limit reached" },
      })
      const [child] = await childrenOf(run.executionId)
      expect(child).toMatchObject({
        workflow: "child",
        status: "finished",
        outcome: "failed",
        parent_step: "check",
        parent_awaits: true,
        parent_close: "interrupt",
      })
      expect(await leftovers([run.executionId, child!.execution_id])).toEqual({
        steps: [],
        outbox: [],
      })
    })
  })

  it("a parent awaiting a child that succeeds receives its output, each finishing once", async () => {
    await withRunner(async (runner) => {
      const run = await client.parent.start(`p-${randomUUID()}`, {
        fail: false,
        child: `c-${randomUUID()}`,
      })
      await runUntilIdle(akter, runner)
      expect(await run.result()).toEqual({ _tag: "Success", value: { got: "value approved" } })
      const [child] = await childrenOf(run.executionId)
      expect(child).toMatchObject({ status: "finished", outcome: "succeeded" })
      const audit = await readWriteAudit(db())
      expect(audit.duplicateSettles).toEqual([])
      expect(audit.duplicateFinishes).toEqual([])
      expect(await leftovers([run.executionId, child!.execution_id])).toEqual({
        steps: [],
        outbox: [],
      })
    })
  })

  it("interrupting a parent interrupts its awaited child and its interrupt-policy child once, compensation once each", async () => {
    await withRunner(async (runner) => {
      const run = await client.holder.start(`h-${randomUUID()}`, {
        leave: false,
        id: randomUUID(),
      })
      await runUntilIdle(akter, runner)
      expect(await run.status()).toEqual({ status: "suspended", interrupting: false })
      const before = await childrenOf(run.executionId)
      expect(before.map((c) => [c.parent_step, c.status, c.interrupt, c.parent_close])).toEqual([
        ["loose", "suspended", false, "interrupt"],
        ["taken", "suspended", false, "interrupt"],
      ])
      // Inspect shows the link from both sides: the parent's pending step names its child, the
      // child names its parent.
      const taken = before[1]!.execution_id
      const parent = await showExecution(db(), run.executionId)
      expect(parent?.steps.find((s) => s.step === "taken")).toMatchObject({
        settled: false,
        child: taken,
      })
      expect((await showExecution(db(), taken))?.parent).toEqual({
        executionId: run.executionId,
        step: "taken",
        awaits: true,
        parentClose: "interrupt",
      })
      await run.interrupt()
      await runUntilIdle(akter, runner)
      expect(await run.result()).toEqual({ _tag: "Interrupted", cause: "request" })
      const after = await childrenOf(run.executionId)
      expect(after.map((c) => [c.parent_step, c.status, c.outcome])).toEqual([
        ["loose", "finished", "interrupted"],
        ["taken", "finished", "interrupted"],
      ])
      for (const child of after) expect(unbooked.get(child.owner_id)).toBe(1)
      const audit = await readWriteAudit(db())
      expect(audit.duplicateFinishes).toEqual([])
      expect(await leftovers([run.executionId, ...after.map((c) => c.execution_id)])).toEqual({
        steps: [],
        outbox: [],
      })
    })
  })

  it("a child whose policy is leave runs on after its parent is interrupted", async () => {
    await withRunner(async (runner) => {
      const run = await client.holder.start(`h-${randomUUID()}`, {
        leave: true,
        id: randomUUID(),
      })
      await runUntilIdle(akter, runner)
      await run.interrupt()
      await runUntilIdle(akter, runner)
      expect(await run.result()).toEqual({ _tag: "Interrupted", cause: "request" })
      const after = await childrenOf(run.executionId)
      expect(after.map((c) => [c.parent_step, c.status, c.interrupt, c.parent_close])).toEqual([
        ["left", "suspended", false, "leave"],
        ["loose", "finished", true, "interrupt"],
      ])
      expect(unbooked.get(after[0]!.owner_id)).toBeUndefined()
      // The child left running still finishes on its own, and its finish pokes no parent.
      await client.emit(after[0]!.owner_id, "Go", { n: 1 })
      await runUntilIdle(akter, runner)
      expect((await childrenOf(run.executionId))[0]).toMatchObject({
        status: "finished",
        outcome: "succeeded",
      })
      expect(await leftovers([run.executionId, after[0]!.execution_id])).toEqual({
        steps: [],
        outbox: [],
      })
    })
  })
})
