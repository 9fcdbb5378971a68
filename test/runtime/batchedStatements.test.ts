/**
 * The statements concurrent passes share, on PGlite and on Postgres. The batch of step writes
 * (settle the held attempt, begin the next, record a result): each row keeps the guarantees of the
 * one-execution statement — the generation fence, one settle per attempt, no begin after a settle
 * that matched nothing, one result. The batched reads of what passes replay from. And the batcher,
 * which sends requests that wait together and retries a failed batch request by request; and the
 * runner's claim of due work riding the batch, which claims after the batch's writes have run.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { StatementBatcher } from "../../runtime/storage/statementBatcher.js"
import {
  composeStepBatch,
  STEP_BATCH_PARTS,
  stepBatchStatement,
  submitClaim,
  submitWrite,
  writeStepBatch,
  writeStepBatchClaiming,
  type ClaimAnswer,
  type StepBatchOutcome,
  type StepBatchWrite,
} from "../../runtime/engine/stepBatch.js"
import { readExecutionSnapshots, snapshotFromJson } from "../../runtime/engine/executionStore.js"
import { FINISHED_CHANNEL, parseFinishedPayload } from "../../runtime/outbox/notifications.js"
import { encodeJson } from "../../runtime/storage/codec.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { waitUntil } from "../support/waitUntil.js"
import { makeProbe, type Probe } from "./probeWorkflows.js"

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("batched statements", (backend) => {
  let akter: TestAkter
  let probe: Probe
  let client: AnyClient

  beforeAll(async () => {
    probe = await makeProbe()
    akter = await openTestAkter(backend)
    client = makeOwnerClient<AnyClient>(akter, probe.registration)
  })

  afterAll(() => akter?.close())

  const internals = () => internalsOf(akter)
  const db = () => internals().storage.db

  /** An execution started with no runner: its owner is at generation 0 and it has no steps. */
  const started = async (ownerId = `o-${randomUUID().slice(0, 8)}`, id = "batch") => {
    const run = await client.quick.start(ownerId, { id })
    return {
      owner: placeOwner({ tenant: "default", ownerType: "Probe", ownerId }),
      generation: 0,
      executionId: run.executionId as string,
    }
  }

  const stepsOf = (executionId: string) =>
    db()
      .selectFrom("akter.steps")
      .select(["step", "attempt", "exit", "due_at_ms"])
      .where("execution_id", "=", executionId)
      .where("kind", "=", "activity")
      .orderBy("step")
      .orderBy("attempt")
      .execute()

  const exit = (n: number) => encodeJson({ _tag: "Success", value: { n } })
  const batch = (writes: readonly StepBatchWrite[]) =>
    writeStepBatch(db(), internals().clock, writes, backend === "postgres")

  it("begins, settles and refuses each row on its own: fence, one settle per attempt, no begin after a settle that matched nothing", async () => {
    const a = await started()
    const b = await started()
    const first = await batch([
      { ...a, begin: { step: "s1", attempt: 1 } },
      { ...b, begin: { step: "s1", attempt: 1 } },
    ])
    expect(first.map((o) => [o.fenced, o.settled, typeof o.startedAtMs])).toEqual([
      [true, true, "number"],
      [true, true, "number"],
    ])

    const second = await batch([
      {
        ...a,
        settle: { step: "s1", attempt: 1, exit: exit(1) },
        begin: { step: "s2", attempt: 1 },
      },
      // Another runner holds b's owner now: nothing of this row is written.
      { ...b, generation: 7, settle: { step: "s1", attempt: 1, exit: exit(1) } },
    ])
    expect(second).toEqual([
      {
        fenced: true,
        generation: 0,
        settled: true,
        startedAtMs: expect.any(Number),
        finished: false,
        parentBucket: null,
      },
      {
        fenced: false,
        generation: null,
        settled: false,
        startedAtMs: null,
        finished: false,
        parentBucket: null,
      },
    ])
    expect(await stepsOf(a.executionId)).toEqual([
      { step: "s1", attempt: 1, exit: exit(1), due_at_ms: null },
      { step: "s2", attempt: 1, exit: null, due_at_ms: null },
    ])
    expect(await stepsOf(b.executionId)).toEqual([
      { step: "s1", attempt: 1, exit: null, due_at_ms: null },
    ])

    // s1 is settled already: the settle matches nothing, and s3 is not begun.
    const third = await batch([
      {
        ...a,
        settle: { step: "s1", attempt: 1, exit: exit(9) },
        begin: { step: "s3", attempt: 1 },
      },
      { ...b, settle: { step: "s1", attempt: 1, exit: exit(2), retryAtMs: 123 } },
    ])
    expect(third).toEqual([
      {
        fenced: true,
        generation: 0,
        settled: false,
        startedAtMs: null,
        finished: false,
        parentBucket: null,
      },
      {
        fenced: true,
        generation: 0,
        settled: true,
        startedAtMs: null,
        finished: false,
        parentBucket: null,
      },
    ])
    expect((await stepsOf(a.executionId)).map((row) => [row.step, row.exit])).toEqual([
      ["s1", exit(1)],
      ["s2", null],
    ])
    expect(await stepsOf(b.executionId)).toEqual([
      { step: "s1", attempt: 1, exit: exit(2), due_at_ms: 123 },
    ])
  })

  it("writes rows of every kind in one batch: settles beside rows without one, a finish beside rows without one, a wait's event", async () => {
    const [a, b, c, d] = await Promise.all([started(), started(), started(), started()])
    await batch([
      { ...a, begin: { step: "s1", attempt: 1 } },
      { ...b, begin: { step: "s1", attempt: 1 } },
      { ...c, begin: { step: "s1", attempt: 1 } },
      { ...d, begin: { step: "w", attempt: 1 } },
    ])
    const result = encodeJson({ _tag: "Success", value: { id: "c" } })
    const outcomes = await batch([
      {
        ...a,
        settle: { step: "s1", attempt: 1, exit: exit(1) },
        begin: { step: "s2", attempt: 1 },
      },
      { ...b, begin: { step: "s2", attempt: 1 } },
      { ...c, finish: result, outcome: "succeeded" },
      { ...d, settle: { step: "w", attempt: 1, exit: exit(4), matched: 5 } },
    ])
    expect(outcomes).toEqual([
      {
        fenced: true,
        generation: 0,
        settled: true,
        startedAtMs: expect.any(Number),
        finished: false,
        parentBucket: null,
      },
      {
        fenced: true,
        generation: 0,
        settled: true,
        startedAtMs: expect.any(Number),
        finished: false,
        parentBucket: null,
      },
      {
        fenced: true,
        generation: 0,
        settled: true,
        startedAtMs: null,
        finished: true,
        parentBucket: null,
      },
      {
        fenced: true,
        generation: 0,
        settled: true,
        startedAtMs: null,
        finished: false,
        parentBucket: null,
      },
    ])
    expect((await stepsOf(a.executionId)).map((row) => [row.step, row.exit])).toEqual([
      ["s1", exit(1)],
      ["s2", null],
    ])
    expect((await stepsOf(b.executionId)).map((row) => [row.step, row.exit])).toEqual([
      ["s1", null],
      ["s2", null],
    ])
    expect(await stepsOf(c.executionId)).toEqual([])
    const executions = await db()
      .selectFrom("akter.executions")
      .select(["execution_id", "status", "result", "outcome"])
      .where("execution_id", "in", [a.executionId, c.executionId])
      .execute()
    expect(executions.find((row) => row.execution_id === c.executionId)).toEqual({
      execution_id: c.executionId,
      status: "finished",
      result,
      outcome: "succeeded",
    })
    expect(executions.find((row) => row.execution_id === a.executionId)).toMatchObject({
      status: "running",
      result: null,
      outcome: null,
    })
    const waited = await db()
      .selectFrom("akter.steps")
      .select(["step", "exit", "matched"])
      .where("execution_id", "=", d.executionId)
      .where("kind", "=", "activity")
      .execute()
    expect(waited.map((row) => [row.step, row.exit, Number(row.matched)])).toEqual([
      ["w", exit(4), 5],
    ])
  })

  // Notifications are Postgres's: a batch on PGlite is written without them (`notify` false).
  if (backend === "postgres") {
    it("notifies the finish of an awaited execution from its batch row, and not of one nobody elsewhere awaits", async () => {
      const heard: string[] = []
      const stop = await internals().storage.listen(FINISHED_CHANNEL, (payload) =>
        heard.push(parseFinishedPayload(payload).executionId),
      )
      try {
        // Started with no runner here: their callers await them elsewhere.
        const awaited = await started()
        const quiet = await started()
        await db()
          .updateTable("akter.executions")
          .set({ awaited: false })
          .where("execution_id", "=", quiet.executionId)
          .execute()
        const result = encodeJson({ _tag: "Success", value: {} })
        const outcomes = await batch([
          { ...awaited, finish: result },
          { ...quiet, finish: result },
        ])
        expect(outcomes.map((o) => o.finished)).toEqual([true, true])
        // Notifications arrive in commit order: once ours, sent after, arrives, theirs had.
        const marker = `marker-${randomUUID()}`
        await sql`SELECT pg_notify(${FINISHED_CHANNEL}, ${marker})`.execute(db())
        await waitUntil("our own notification arrives", () => heard.includes(marker), {
          timeoutMs: 10_000,
        })
        const ids = [awaited.executionId, quiet.executionId]
        expect(heard.filter((id) => ids.includes(id))).toEqual([awaited.executionId])
      } finally {
        await stop()
      }
    })
  }

  it("writes rows of two executions of one owner, and a begun attempt keeps its first start time", async () => {
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    const a = await started(ownerId, "one")
    const b = await started(ownerId, "two")
    const [begunA] = await batch([{ ...a, begin: { step: "s1", attempt: 1 } }])
    const again = await batch([
      { ...a, begin: { step: "s1", attempt: 1 } },
      { ...b, begin: { step: "s1", attempt: 1 } },
    ])
    expect(again[0]).toEqual({
      fenced: true,
      generation: 0,
      settled: true,
      startedAtMs: begunA!.startedAtMs,
      finished: false,
      parentBucket: null,
    })
    expect(again[1]!.fenced).toBe(true)
  })

  it("records a result once, with the execution's steps and timer, and only under the held generation", async () => {
    const a = await started()
    const b = await started()
    await batch([
      { ...a, begin: { step: "s1", attempt: 1 } },
      { ...b, begin: { step: "s1", attempt: 1 } },
    ])
    const result = encodeJson({ _tag: "Success", value: { id: "batch" } })
    const first = await batch([
      { ...a, finish: result },
      { ...b, generation: 3, finish: result },
    ])
    expect(first.map((o) => [o.fenced, o.finished])).toEqual([
      [true, true],
      [false, false],
    ])
    const rows = await db()
      .selectFrom("akter.executions")
      .select(["execution_id", "status", "result"])
      .where("execution_id", "in", [a.executionId, b.executionId])
      .execute()
    expect(rows.find((row) => row.execution_id === a.executionId)).toMatchObject({
      status: "finished",
      result,
    })
    expect(rows.find((row) => row.execution_id === b.executionId)?.status).toBe("running")
    expect(await stepsOf(a.executionId)).toEqual([])
    expect(await stepsOf(b.executionId)).toHaveLength(1)
    const timers = await db()
      .selectFrom("akter.outbox")
      .select("id")
      .where("id", "in", [a.executionId, b.executionId])
      .execute()
    expect(timers.map((timer) => timer.id)).toEqual([b.executionId])

    const again = await batch([
      { ...a, finish: encodeJson({ _tag: "Success", value: { id: "other" } }) },
    ])
    expect(again[0]).toMatchObject({ fenced: true, finished: false })
    expect(
      (
        await db()
          .selectFrom("akter.executions")
          .select("result")
          .where("execution_id", "=", a.executionId)
          .executeTakeFirstOrThrow()
      ).result,
    ).toEqual(result)
  })

  it("reads many executions in two statements: each row with its timer's pokes, each its own steps, nothing for an unknown id", async () => {
    const a = await started()
    const b = await started()
    await batch([
      { ...a, begin: { step: "s1", attempt: 1 } },
      { ...b, begin: { step: "s1", attempt: 1 } },
    ])
    await batch([
      {
        ...a,
        settle: { step: "s1", attempt: 1, exit: exit(1) },
        begin: { step: "s2", attempt: 1 },
      },
    ])
    await client.quick.attach(b.executionId).interrupt()
    const unknown = { routingKey: a.owner.routingKey, executionId: `${a.executionId}x` }
    const before = internals().storage.counters.statements
    const [first, second, none] = await readExecutionSnapshots(db(), [
      { routingKey: a.owner.routingKey, executionId: a.executionId },
      { routingKey: b.owner.routingKey, executionId: b.executionId },
      unknown,
    ])
    expect(internals().storage.counters.statements - before).toBe(2)
    expect(none).toBeUndefined()
    expect(first!.execution).toMatchObject({
      execution_id: a.executionId,
      status: "running",
      interrupt: false,
      pokes: 0,
    })
    expect(first!.steps.map((row) => [row.step, row.attempt, row.exit])).toEqual([
      ["s1", 1, exit(1)],
      ["s2", 1, null],
    ])
    expect(second!.execution).toMatchObject({ interrupt: true, pokes: 1 })
    expect(second!.steps.map((row) => [row.step, row.exit])).toEqual([["s1", null]])
  })

  it("sends writes that wait together: the first goes at once, the rest in one statement when it returns", async () => {
    const executions = await Promise.all(Array.from({ length: 10 }, () => started()))
    const batcher = new StatementBatcher((writes: readonly StepBatchWrite[]) =>
      writeStepBatch(db(), internals().clock, writes, backend === "postgres"),
    )
    const before = internals().storage.counters.statements
    const outcomes = await Promise.all(
      executions.map((execution) =>
        batcher.submit({ ...execution, begin: { step: "s1", attempt: 1 } }),
      ),
    )
    expect(internals().storage.counters.statements - before).toBe(2)
    expect(outcomes.every((o) => o.fenced && o.startedAtMs !== null)).toBe(true)
  })

  it("sends the next writes of a statement's answered requests together, not the first alone", async () => {
    const executions = await Promise.all(Array.from({ length: 6 }, () => started()))
    const batcher = new StatementBatcher((writes: readonly StepBatchWrite[]) =>
      writeStepBatch(db(), internals().clock, writes, backend === "postgres"),
    )
    // Each pass issues its next write once its first is answered, from a continuation the fiber
    // scheduler runs as a macrotask (Effect's, setImmediate or setTimeout 0): after the first
    // statement (one write) and the second (the other five), the next writes of all six go in one
    // statement — none alone ahead of the rest.
    const before = internals().storage.counters.statements
    await Promise.all(
      executions.map(async (execution) => {
        await batcher.submit({ ...execution, begin: { step: "s1", attempt: 1 } })
        await new Promise((resolve) => setImmediate(resolve))
        await batcher.submit({
          ...execution,
          settle: { step: "s1", attempt: 1, exit: exit(1) },
          begin: { step: "s2", attempt: 1 },
        })
      }),
    )
    expect(internals().storage.counters.statements - before).toBe(3)
    for (const execution of executions) {
      expect((await stepsOf(execution.executionId)).map((row) => row.step)).toEqual(["s1", "s2"])
    }
  })

  /** The outbox rows of these executions, by id. */
  const timersOf = async (...executionIds: string[]) =>
    new Map(
      (
        await db()
          .selectFrom("akter.outbox")
          .select(["id", "attempts", "due_at_ms"])
          .where("kind", "=", "timer")
          .where("id", "in", executionIds)
          .execute()
      ).map((row) => [row.id, row]),
    )

  it("claims due work riding a batch after the batch's writes: not a timer a write of it deleted, every other due row", async () => {
    // Both started with no runner: their timers are due now.
    const finishing = await started()
    const waiting = await started()
    const buckets = [...new Set([finishing.owner.bucket, waiting.owner.bucket])]
    const before = internals().storage.counters.statements
    const { outcomes, claimed } = await writeStepBatchClaiming(
      db(),
      internals().clock,
      [{ ...finishing, finish: encodeJson({ _tag: "Success", value: { id: "batch" } }) }],
      backend === "postgres",
      { buckets, served: [], limit: 1000, recoveryMs: 60_000 },
    )
    expect(internals().storage.counters.statements - before).toBe(1)
    expect(outcomes.map((o) => [o.fenced, o.finished])).toEqual([[true, true]])
    // The finish deleted its execution's timer before the claim looked: had the claim gone first,
    // it would have taken the due row and the delete would have left it.
    const ids = claimed.map((row) => row.id)
    expect(ids).not.toContain(finishing.executionId)
    expect(ids).toContain(waiting.executionId)
    const timers = await timersOf(finishing.executionId, waiting.executionId)
    expect(timers.has(finishing.executionId)).toBe(false)
    const row = claimed.find((r) => r.id === waiting.executionId)!
    expect(timers.get(waiting.executionId)).toMatchObject({
      attempts: 1,
      due_at_ms: row.claimedDueAtMs,
    })
    expect(row).toMatchObject({
      routingKey: waiting.owner.routingKey,
      kind: "timer",
      bucket: waiting.owner.bucket,
      ownerId: waiting.owner.ownerId,
      attempts: 1,
      pokes: 0,
      wanted: false,
    })
    // What the pass replays from comes with the claim, as with a claim of its own.
    expect(snapshotFromJson(row.attached)?.execution.execution_id).toBe(waiting.executionId)
  })

  it("gates a riding claim on every other part of the batch, whichever parts the batch carries", () => {
    const { CLAIMING, STARTING, MARKING } = STEP_BATCH_PARTS
    const bits = Object.values(STEP_BATCH_PARTS).filter((bit) => bit !== CLAIMING)
    let shapes = 0
    for (let mask = 0; mask < 1 << bits.length; mask++) {
      const shape = bits.reduce<number>(
        (sum, bit, index) => sum | (mask & (1 << index) ? bit : 0),
        CLAIMING,
      )
      if ((shape & MARKING) !== 0 && (shape & STARTING) === 0) continue
      const text = composeStepBatch(shape).compile(db()).sql
      // The statement's parts: `name AS (` after WITH or a comma, at the top of the text.
      const parts = [...text.matchAll(/(?:WITH|,)\s+"?([a-z_]+)"? AS \(/g)].map((m) => m[1]!)
      const gated = new Set(
        [...text.matchAll(/\(SELECT count\(\*\) FROM "([a-z_]+)"\)/g)].map((m) => m[1]!),
      )
      const claim = new Set(["input", "now", "due", "claimed"])
      expect(
        parts.filter((name) => !claim.has(name) && !gated.has(name)),
        `shape ${shape}`,
      ).toEqual([])
      shapes += 1
    }
    expect(shapes).toBe(48)
  })

  it("answers writes and a claim sent together in their order: the claim rides the writes' statement, a claim alone goes alone", async () => {
    const [a, b, due] = await Promise.all([started(), started(), started()])
    const statement = stepBatchStatement(db(), internals().clock, backend === "postgres")
    const batcher = new StatementBatcher(statement)
    const claimOf = (limit: number) => ({
      buckets: [due.owner.bucket],
      served: [],
      recoveryMs: 60_000,
      limit: () => limit,
    })
    // The first write goes at once; the claim and the second write wait for it and go together.
    const before = internals().storage.counters.statements
    const [first, claim, second] = await Promise.all([
      submitWrite(batcher, { ...a, begin: { step: "s1", attempt: 1 } }),
      submitClaim(batcher, claimOf(1000)),
      submitWrite(batcher, { ...b, begin: { step: "s1", attempt: 1 } }),
    ])
    expect(internals().storage.counters.statements - before).toBe(2)
    expect([first, second].map((o: StepBatchOutcome) => o.fenced)).toEqual([true, true])
    expect((claim as ClaimAnswer).limit).toBe(1000)
    expect(claim.claimed.map((row) => row.id)).toContain(due.executionId)
    // A claim for no slots sends nothing; a claim alone is a statement of its own.
    const alone = internals().storage.counters.statements
    expect(await submitClaim(batcher, claimOf(0))).toEqual({ claimed: [], limit: 0 })
    expect(internals().storage.counters.statements - alone).toBe(0)
    expect(await submitClaim(batcher, claimOf(5))).toEqual({ claimed: [], limit: 5 })
    expect(internals().storage.counters.statements - alone).toBe(1)
  })

  it("retries a failed batch write by write, so only the write that fails fails", async () => {
    const executions = await Promise.all(Array.from({ length: 5 }, () => started()))
    const batcher = new StatementBatcher((writes: readonly StepBatchWrite[]) =>
      writeStepBatch(db(), internals().clock, writes, backend === "postgres"),
    )
    const results = await Promise.allSettled(
      executions.map((execution, index) =>
        // attempt -1 breaks the table's CHECK (attempt >= 0): its statement fails.
        batcher.submit({ ...execution, begin: { step: "s1", attempt: index === 3 ? -1 : 1 } }),
      ),
    )
    expect(results.map((r) => r.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
    ])
    for (const [index, execution] of executions.entries()) {
      expect((await stepsOf(execution.executionId)).length).toBe(index === 3 ? 0 : 1)
    }
  })
})
