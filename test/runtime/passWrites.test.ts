/**
 * The pass writer's guarantees, write path by write path, on PGlite and on Postgres, with the
 * write-audit triggers counting what committed. Exactly one writer settles a step attempt: two
 * passes of one execution under one activation (a pass whose memory is behind another's) each
 * hold a settle of the same pending attempt, and only the first to write commits it — through a
 * plain statement and through a step-batch row; the loser's write commits nothing at all. And no
 * write commits under a generation the runner no longer holds: a plain statement, a batch row and
 * a finish each throw `StaleGeneration` and leave the database as it was. And which way each write
 * goes: a held settle with the next begin as one step-batch row (the batcher counts its rows), but
 * two held settles, a wait's matched event, held parts or a held change of the execution as a plain
 * statement; a final write drops what is held; a start taken by this process's runner rides on the
 * pass's first write (created, attached, refused before it ran, or under a stale generation), a
 * final write or a change of the execution going after it in a statement of their own, and
 * `startRecorded` resolving with that write. On Postgres, a parking write locks the execution row
 * before its timer's outbox row, the order a client's interrupt takes them.
 */
import { randomUUID } from "node:crypto"
import { sql, type QueryExecutorProvider, type RawBuilder } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { unstartedExecution } from "../../runtime/engine/startStatement.js"
import {
  finishExecutionPart,
  type StartOutcome,
  type UnstartedExecution,
} from "../../runtime/engine/executionStore.js"
import { PassWriter, PassWriterBroken, StartAttached } from "../../runtime/engine/passWriter.js"
import { beginSleepPart } from "../../runtime/engine/stepStore.js"
import { stepBatchStatement, type StepBatchRequest } from "../../runtime/engine/stepBatch.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { armTimerPart } from "../../runtime/outbox/outboxStore.js"
import { Activation, fenceHeld, StaleGeneration } from "../../runtime/owners/fence.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import { encodeJson } from "../../runtime/storage/codec.js"
import { StatementBatcher } from "../../runtime/storage/statementBatcher.js"
import { countOf } from "../../runtime/storage/statementParts.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { sleep, waitUntil } from "../support/waitUntil.js"
import { installSettleAudit, readWriteAudit } from "../support/writeAudit.js"
import { makeProbe, type Probe } from "./probeWorkflows.js"

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("pass writes", (backend) => {
  let akter: TestAkter
  let probe: Probe
  let client: AnyClient

  beforeAll(async () => {
    probe = await makeProbe()
    akter = await openTestAkter(backend)
    await installSettleAudit(internalsOf(akter).storage.db)
    client = makeOwnerClient<AnyClient>(akter, probe.registration)
  })

  afterAll(() => akter?.close())

  const internals = () => internalsOf(akter)
  const db = () => internals().storage.db
  const exit = (n: number) => encodeJson({ _tag: "Success", value: { n } })

  /**
   * An execution started with no runner (its owner at generation 0), an activation of its owner,
   * and a pass writer on it — `writer()` makes another, as a second pass of the same runner would;
   * `writer(new Activation(owner))` one of another runner, which has not taken the owner yet.
   */
  const execution = async () => {
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    const run = await client.quick.start(ownerId, { id: "w" })
    return { ownerId, ...writersOf(ownerId, run.executionId as string) }
  }

  /**
   * An activation of the owner and pass writers of the execution on it; `batchRows()` counts the
   * rows its writers sent through the step batcher.
   */
  const writersOf = (ownerId: string, executionId: string) => {
    const owner = placeOwner({ tenant: "default", ownerType: "Probe", ownerId })
    const activation = new Activation(owner)
    let rows = 0
    const batcher = new StatementBatcher((requests: readonly StepBatchRequest[]) => {
      rows += requests.length
      return stepBatchStatement(db(), internals().clock, backend === "postgres")(requests)
    })
    const writer = (
      on: Activation = activation,
      guard: () => Error | undefined = () => undefined,
    ) => new PassWriter(db(), internals().clock, on, owner.routingKey, executionId, guard, batcher)
    return { owner, activation, executionId, writer, batchRows: () => rows }
  }

  const stepsOf = async (executionId: string) =>
    (
      await db()
        .selectFrom("akter.steps")
        .select(["step", "attempt", "exit"])
        .where("execution_id", "=", executionId)
        .where("kind", "<>", "version")
        .orderBy("step")
        .orderBy("attempt")
        .execute()
    ).map((row) => [`${row.step}#${row.attempt}`, row.exit])

  const auditOf = async (executionId: string) => {
    const audit = await readWriteAudit(db())
    return {
      settles: audit.settles
        .filter((settle) => settle.executionId === executionId)
        .map((settle) => [`${settle.step}#${settle.attempt}`, settle.exit]),
      overwrites: audit.overwrites.filter((line) => line.startsWith(executionId)),
    }
  }

  const finishesOf = async (executionId: string) => {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM akter_audit.finishes WHERE execution_id = ${executionId}`.execute(
      db(),
    )
    return rows[0]!.n
  }

  /** A plain statement of the pass: a sleep's row, carrying what the writer holds. */
  const sleepWrite = (
    writer: PassWriter,
    executionId: string,
    routingKey: string,
    step: string,
  ) => {
    const sleeping = beginSleepPart(
      internals().clock,
      { routingKey, executionId, step, attempt: 1 },
      60_000,
    )
    return writer.write("sleep", {
      parts: [sleeping],
      select: sql`(SELECT due_at_ms FROM ${sql.id(sleeping.name)}) AS due_at_ms`,
      read: (row) => Number(row["due_at_ms"]),
    })
  }

  /** A batchable finish, as a pass records its result. */
  const finishWrite = (writer: PassWriter, result: Buffer) =>
    writer.write("finish", {
      finish: result,
      read: (outcome) => outcome.finished,
      statement: () => {
        throw new Error("a finish under a held generation goes as a batch row")
      },
    })

  it("settles an attempt once when two passes hold its settle: the plain statement of the second commits nothing", async () => {
    const { owner, executionId, writer } = await execution()
    const first = writer()
    await first.beginActivity("s1", 1)
    const behind = writer()
    first.holdSettle({ step: "s1", attempt: 1, exit: exit(1) })
    await sleepWrite(first, executionId, owner.routingKey, "nap")
    // Held and written at once (no flush timer in between): the write is this plain statement.
    behind.holdSettle({ step: "s1", attempt: 1, exit: exit(2) })
    const refused = await sleepWrite(behind, executionId, owner.routingKey, "doze").catch(
      (error: unknown) => error,
    )
    expect(String(refused)).toContain("a held settle matched no pending step")
    expect(await stepsOf(executionId)).toEqual([
      ["nap#1", null],
      ["s1#1", exit(1)],
    ])
    const audit = await auditOf(executionId)
    expect(audit.settles).toEqual([["s1#1", exit(1)]])
    expect(audit.overwrites).toEqual([])
  })

  it("settles an attempt once when two passes hold its settle: the batch row of the second commits nothing", async () => {
    const { executionId, writer } = await execution()
    const first = writer()
    await first.beginActivity("s1", 1)
    const behind = writer()
    first.holdSettle({ step: "s1", attempt: 1, exit: exit(1) })
    await first.beginActivity("s2", 1)
    behind.holdSettle({ step: "s1", attempt: 1, exit: exit(2) })
    const refused = await behind.beginActivity("s3", 1).catch((error: unknown) => error)
    expect(String(refused)).toContain("a held settle matched no pending step")
    // The begin rides on the settle: a settle that matched nothing begins nothing.
    expect(await stepsOf(executionId)).toEqual([
      ["s1#1", exit(1)],
      ["s2#1", null],
    ])
    const audit = await auditOf(executionId)
    expect(audit.settles).toEqual([["s1#1", exit(1)]])
    expect(audit.overwrites).toEqual([])
  })

  it("records a result once when two passes finish", async () => {
    const { executionId, writer } = await execution()
    const first = writer()
    await first.beginActivity("s1", 1)
    const result = encodeJson({ _tag: "Success", value: { id: "one" } })
    expect(await finishWrite(first, result)).toBe(true)
    expect(await finishWrite(writer(), encodeJson({ _tag: "Success", value: { id: "two" } }))).toBe(
      false,
    )
    const row = await db()
      .selectFrom("akter.executions")
      .select(["status", "result"])
      .where("execution_id", "=", executionId)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ status: "finished", result })
    expect(await finishesOf(executionId)).toBe(1)
  })

  it("records a result once when another runner finishes after: its plain statement, which takes the owner, records nothing", async () => {
    const { owner, executionId, writer } = await execution()
    const first = writer()
    await first.beginActivity("s1", 1)
    const result = encodeJson({ _tag: "Success", value: { id: "one" } })
    expect(await finishWrite(first, result)).toBe(true)
    // Another runner's pass: its activation is not taken yet, so its finish is the plain
    // statement that advances the generation.
    const elsewhere = writer(new Activation(owner))
    const finished = finishExecutionPart(
      internals().clock,
      owner.routingKey,
      executionId,
      encodeJson({ _tag: "Success", value: { id: "two" } }),
      "succeeded",
    )
    expect(
      await elsewhere.write("finish", {
        final: true,
        parts: [finished],
        select: sql`${countOf(finished.name)} AS finished`,
        read: (row) => row["finished"] === 1,
      }),
    ).toBe(false)
    const row = await db()
      .selectFrom("akter.executions")
      .select(["status", "result"])
      .where("execution_id", "=", executionId)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ status: "finished", result })
    expect(await finishesOf(executionId)).toBe(1)
  })

  it("keeps an attempt's first start time when a later pass begins it again, plain or batched", async () => {
    const { owner, executionId, writer } = await execution()
    const started = await writer().beginActivity("s1", 1)
    akter.advance("1 minute")
    // A later pass of another runner: its first write is the plain statement that activates.
    const rerun = writer(new Activation(owner))
    expect(await rerun.beginActivity("s1", 1)).toBe(started)
    akter.advance("1 minute")
    // Its generation held now, the next begin goes as a batch row.
    expect(await rerun.beginActivity("s1", 1)).toBe(started)
    const row = await db()
      .selectFrom("akter.steps")
      .select("started_at_ms")
      .where("execution_id", "=", executionId)
      .where("step", "=", "s1")
      .executeTakeFirstOrThrow()
    expect(row.started_at_ms).toBe(started)
  })

  it("takes the owner once when the first writes of two passes race: the other waits, then writes under the generation taken", async () => {
    const { ownerId, activation, executionId, writer } = await execution()
    const [one, two] = await Promise.all([
      writer().beginActivity("s1", 1),
      writer().beginActivity("s2", 1),
    ])
    expect(typeof one).toBe("number")
    expect(typeof two).toBe("number")
    expect(activation.held).toBe(1)
    const { rows } = await sql<{ generation: number }>`
      SELECT generation::int AS generation FROM akter.owners WHERE owner_id = ${ownerId}`.execute(
      db(),
    )
    expect(rows[0]!.generation).toBe(1)
    expect((await stepsOf(executionId)).map(([step]) => step)).toEqual(["s1#1", "s2#1"])
  })

  it("lets the next write take the owner when the write that was taking it failed", async () => {
    const { owner, activation, executionId, writer } = await execution()
    const failing = writer()
    // A held settle of a step never begun: the statement that would take the owner aborts.
    failing.holdSettle({ step: "ghost", attempt: 1, exit: exit(1) })
    const failed = await sleepWrite(failing, executionId, owner.routingKey, "nap").catch(
      (e: unknown) => e,
    )
    expect(String(failed)).toContain("a held settle matched no pending step")
    expect(activation.held).toBeUndefined()
    const started = await Promise.race([
      writer().beginActivity("s1", 1),
      new Promise((resolve) => setTimeout(() => resolve("still waiting"), 5_000)),
    ])
    expect(typeof started).toBe("number")
    expect(activation.held).toBe(1)
  })

  /** The activation taken by a first write, then moved on by another runner's. */
  const staleExecution = async () => {
    const made = await execution()
    const first = made.writer()
    await first.beginActivity("s1", 1)
    expect(made.activation.held).toBe(1)
    await sql`UPDATE akter.owners SET generation = generation + 1
      WHERE owner_id = ${made.ownerId}`.execute(db())
    // Held and written at once, as a pass does after its activity: the write carries the settle.
    const held = () => first.holdSettle({ step: "s1", attempt: 1, exit: exit(1) })
    return { ...made, first, held }
  }

  const expectNothingWritten = async (executionId: string) => {
    expect(await stepsOf(executionId)).toEqual([["s1#1", null]])
    expect((await auditOf(executionId)).settles).toEqual([])
    expect(await finishesOf(executionId)).toBe(0)
    const row = await db()
      .selectFrom("akter.executions")
      .select(["status"])
      .where("execution_id", "=", executionId)
      .executeTakeFirstOrThrow()
    expect(row.status).toBe("running")
  }

  it("refuses a plain statement under a stale generation, and writes nothing", async () => {
    const { owner, executionId, first, held } = await staleExecution()
    held()
    const refused = await sleepWrite(first, executionId, owner.routingKey, "nap").catch(
      (error: unknown) => error,
    )
    expect(refused).toBeInstanceOf(StaleGeneration)
    await expectNothingWritten(executionId)
  })

  it("refuses a step-batch row under a stale generation, and writes nothing", async () => {
    const { executionId, first, held } = await staleExecution()
    held()
    const refused = await first.beginActivity("s2", 1).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(StaleGeneration)
    await expectNothingWritten(executionId)
  })

  it("refuses a finish under a stale generation, and writes nothing", async () => {
    const { executionId, first, held } = await staleExecution()
    held()
    const refused = await finishWrite(first, encodeJson({ _tag: "Success", value: {} })).catch(
      (error: unknown) => error,
    )
    expect(refused).toBeInstanceOf(StaleGeneration)
    await expectNothingWritten(executionId)
  })

  /** The step rows of an execution with what a settle records besides the exit. */
  const settledOf = async (executionId: string) =>
    (
      await db()
        .selectFrom("akter.steps")
        .select(["step", "exit", "matched"])
        .where("execution_id", "=", executionId)
        .where("kind", "<>", "version")
        .orderBy("step")
        .execute()
    ).map((row) => [row.step, row.exit, row.matched === null ? null : Number(row.matched)])

  const executionRow = (executionId: string) =>
    db()
      .selectFrom("akter.executions")
      .select(["status", "event_cursor"])
      .where("execution_id", "=", executionId)
      .executeTakeFirst()

  it("sends a held settle and the next begin as one batch row, and two held settles as a plain statement", async () => {
    const { executionId, writer, batchRows } = await execution()
    const pass = writer()
    // The first write takes the owner (a batch row that advances it); the next ones hold it.
    await pass.beginActivity("s1", 1)
    await pass.beginActivity("s2", 1)
    await pass.beginActivity("s3", 1)
    expect(batchRows()).toBe(3)
    pass.holdSettle({ step: "s1", attempt: 1, exit: exit(1) })
    await pass.beginActivity("s4", 1)
    expect(batchRows()).toBe(4)
    pass.holdSettle({ step: "s2", attempt: 1, exit: exit(2) })
    pass.holdSettle({ step: "s3", attempt: 1, exit: exit(3) })
    await pass.beginActivity("s5", 1)
    expect(batchRows()).toBe(4)
    expect(await stepsOf(executionId)).toEqual([
      ["s1#1", exit(1)],
      ["s2#1", exit(2)],
      ["s3#1", exit(3)],
      ["s4#1", null],
      ["s5#1", null],
    ])
  })

  it("records the event a wait took: its held settle goes as a plain statement, which a batch row cannot", async () => {
    const { executionId, writer, batchRows } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    await pass.beginActivity("w", 1)
    pass.holdSettle({ step: "w", attempt: 1, exit: exit(1), matched: 3 })
    await pass.beginActivity("s2", 1)
    expect(batchRows()).toBe(2)
    expect(await settledOf(executionId)).toEqual([
      ["s1", null, null],
      ["s2", null, null],
      ["w", exit(1), 3],
    ])
  })

  it("records a failed attempt's retry time with its settle, as a batch row and as a plain statement", async () => {
    const { executionId, writer, batchRows } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    await pass.beginActivity("s2", 1)
    await pass.beginActivity("s3", 1)
    pass.holdSettle({ step: "s1", attempt: 1, exit: exit(1), retryAtMs: 111_000 })
    await pass.beginActivity("s4", 1)
    expect(batchRows()).toBe(4)
    // Two held settles: a plain statement.
    pass.holdSettle({ step: "s2", attempt: 1, exit: exit(2), retryAtMs: 222_000 })
    pass.holdSettle({ step: "s3", attempt: 1, exit: exit(3) })
    await pass.beginActivity("s5", 1)
    expect(batchRows()).toBe(4)
    const rows = await db()
      .selectFrom("akter.steps")
      .select(["step", "exit", "due_at_ms"])
      .where("execution_id", "=", executionId)
      .where("kind", "<>", "version")
      .orderBy("step")
      .execute()
    expect(rows.map((row) => [row.step, row.exit, row.due_at_ms])).toEqual([
      ["s1", exit(1), 111_000],
      ["s2", exit(2), 222_000],
      ["s3", exit(3), null],
      ["s4", null, null],
      ["s5", null, null],
    ])
  })

  it("carries held parts and a held change of the execution with the next begin, as a plain statement", async () => {
    const { owner, executionId, writer, batchRows } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    await pass.beginActivity("s2", 1)
    expect(batchRows()).toBe(2)
    const napping = beginSleepPart(
      internals().clock,
      { routingKey: owner.routingKey, executionId, step: "nap", attempt: 1 },
      60_000,
    )
    pass.hold([napping])
    await pass.beginActivity("s3", 1)
    pass.patchExecution({ cursor: 7 })
    pass.patchExecution({ status: "suspended" })
    await pass.beginActivity("s4", 1)
    expect(batchRows()).toBe(2)
    expect((await stepsOf(executionId)).map(([step]) => step)).toEqual([
      "nap#1",
      "s1#1",
      "s2#1",
      "s3#1",
      "s4#1",
    ])
    expect(await executionRow(executionId)).toEqual({ status: "suspended", event_cursor: 7 })
  })

  it("drops held settles when the pass records its result, as a batch row or a plain statement", async () => {
    const { executionId, writer } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    pass.holdSettle({ step: "s1", attempt: 1, exit: exit(1) })
    expect(await finishWrite(pass, encodeJson({ _tag: "Success", value: {} }))).toBe(true)
    expect((await auditOf(executionId)).settles).toEqual([])

    const other = await execution()
    const first = other.writer()
    await first.beginActivity("s1", 1)
    // Another runner's pass, holding a settle when it records the result with a plain statement.
    const elsewhere = other.writer(new Activation(other.owner))
    elsewhere.holdSettle({ step: "s1", attempt: 1, exit: exit(1) })
    const finished = finishExecutionPart(
      internals().clock,
      other.owner.routingKey,
      other.executionId,
      encodeJson({ _tag: "Success", value: {} }),
      "succeeded",
    )
    expect(
      await elsewhere.write("finish", {
        final: true,
        parts: [finished],
        select: sql`${countOf(finished.name)} AS finished`,
        read: (row) => row["finished"] === 1,
      }),
    ).toBe(true)
    expect((await auditOf(other.executionId)).settles).toEqual([])
    expect(await stepsOf(other.executionId)).toEqual([["s1#1", null]])
  })

  it("records how the result ends the execution beside it, as a batch row and as a plain statement", async () => {
    const { executionId, writer, batchRows } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    const result = encodeJson({ _tag: "Failure", error: { n: 1 } })
    expect(
      await pass.write("finish", {
        finish: result,
        outcome: "failed",
        read: (outcome) => outcome.finished,
        statement: () => {
          throw new Error("a finish under a held generation goes as a batch row")
        },
      }),
    ).toBe(true)
    expect(batchRows()).toBe(2)
    const outcomeOf = async (id: string) =>
      (
        await db()
          .selectFrom("akter.executions")
          .select(["status", "outcome"])
          .where("execution_id", "=", id)
          .executeTakeFirstOrThrow()
      ).outcome
    expect(await outcomeOf(executionId)).toBe("failed")
  })

  it("sends a final write as a batch row though parts and a change of the execution are held, and drops them", async () => {
    const { owner, executionId, writer, batchRows } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    const napping = beginSleepPart(
      internals().clock,
      { routingKey: owner.routingKey, executionId, step: "nap", attempt: 1 },
      60_000,
    )
    pass.hold([napping])
    pass.patchExecution({ status: "suspended", cursor: 4 })
    pass.holdSettle({ step: "s1", attempt: 1, exit: exit(1) })
    // The finish's statement throws: only a batch row records it.
    expect(await finishWrite(pass, encodeJson({ _tag: "Success", value: {} }))).toBe(true)
    expect(batchRows()).toBe(2)
    expect(await executionRow(executionId)).toEqual({ status: "finished", event_cursor: 0 })
    expect(await stepsOf(executionId)).toEqual([])
    expect((await auditOf(executionId)).settles).toEqual([])
  })

  it("records a plain statement's own change of the execution, merged with the held one", async () => {
    const { owner, executionId, writer } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    pass.patchExecution({ cursor: 3 })
    const napping = beginSleepPart(
      internals().clock,
      { routingKey: owner.routingKey, executionId, step: "nap", attempt: 1 },
      60_000,
    )
    await pass.write("sleep", { parts: [napping], execution: { status: "suspended" } })
    expect(await executionRow(executionId)).toEqual({ status: "suspended", event_cursor: 3 })
    expect((await stepsOf(executionId)).map(([step]) => step)).toEqual(["nap#1", "s1#1"])
  })

  it("refuses every later write of a pass once one failed, and writes nothing more", async () => {
    const { owner, executionId, writer } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    let broken = 0
    pass.onBroken = () => (broken += 1)
    // A held settle of a step never begun: the statement aborts, and the writer breaks.
    pass.holdSettle({ step: "ghost", attempt: 1, exit: exit(1) })
    const failed = await sleepWrite(pass, executionId, owner.routingKey, "nap").catch(
      (error: unknown) => error,
    )
    expect(String(failed)).toContain("a held settle matched no pending step")
    const refused = await pass.beginActivity("s2", 1).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(PassWriterBroken)
    expect(pass.failure).toBe(failed)
    expect(broken).toBe(1)
    expect(await stepsOf(executionId)).toEqual([["s1#1", null]])
  })

  it("flushes held parts a few milliseconds after, in a statement with nothing to read, and writes on", async () => {
    const { owner, executionId, writer } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    pass.hold([
      beginSleepPart(
        internals().clock,
        { routingKey: owner.routingKey, executionId, step: "nap", attempt: 1 },
        60_000,
      ),
    ])
    // No write follows: the timer flushes them.
    await waitUntil("the held part is flushed", async () =>
      (await stepsOf(executionId)).some(([step]) => step === "nap#1"),
    )
    await pass.settled()
    expect((await stepsOf(executionId)).map(([step]) => step)).toEqual(["nap#1", "s1#1"])
    expect(pass.failure).toBeUndefined()
    expect(typeof (await pass.beginActivity("s2", 1))).toBe("number")
  })

  it("runs a write's serializing statement first, in the write's transaction", async () => {
    const { owner, executionId, writer } = await execution()
    const pass = writer()
    await pass.beginActivity("s1", 1)
    const napping = beginSleepPart(
      internals().clock,
      { routingKey: owner.routingKey, executionId, step: "nap", attempt: 1 },
      60_000,
    )
    // A setting local to a transaction: the write's statement sees it only in the same one.
    const seen = await pass.write("sleep", {
      serializedBy: sql`SELECT set_config('akter.serialized_by', 'first', true)`,
      parts: [napping],
      select: sql`current_setting('akter.serialized_by', true) AS serialized_by`,
      read: (row) => row["serialized_by"],
    })
    expect(seen).toBe("first")
    expect((await stepsOf(executionId)).map(([step]) => step)).toEqual(["nap#1", "s1#1"])
  })

  // Lock order (docs/architecture.md): the owner row, then the execution's, then its outbox rows,
  // as a client's interrupt takes them. PGlite has one connection: no two statements interleave.
  if (backend === "postgres") {
    it("locks the execution row before its timer when a pass parks: a park blocked on the execution holds no outbox row", async () => {
      const { owner, executionId, writer } = await execution()
      const pass = writer()
      await pass.beginActivity("s1", 1)
      const timerOf = (tx: QueryExecutorProvider, lock: RawBuilder<unknown>) =>
        sql<{ id: string }>`SELECT id FROM akter.outbox
          WHERE routing_key = ${owner.routingKey}::bigint AND kind = 'timer' AND id = ${executionId}
          ${lock}`.execute(tx)
      // The start armed the timer: the park's arming updates (and so locks) that row.
      expect((await timerOf(db(), sql``)).rows).toEqual([{ id: executionId }])
      const armed = armTimerPart(internals().clock, owner, executionId, "now", {
        when: fenceHeld,
      })
      let parked: Promise<unknown> | undefined
      // A client's interrupt, in flight: it holds the execution row and is about to poke the timer.
      const outboxWhileBlocked = await db()
        .transaction()
        .execute(async (interrupt) => {
          await sql`SELECT 1 FROM akter.executions
            WHERE routing_key = ${owner.routingKey}::bigint AND execution_id = ${executionId}
            FOR UPDATE`.execute(interrupt)
          const { rows } = await sql<{
            pid: number
          }>`SELECT pg_backend_pid() AS pid`.execute(interrupt)
          const interruptPid = rows[0]!.pid
          parked = pass.write("park", {
            parts: [armed],
            execution: { status: "suspended" },
            select: sql`(SELECT due_at_ms FROM ${sql.id(armed.name)}) AS due_at_ms`,
            read: (row) => Number(row["due_at_ms"]),
          })
          await waitUntil("the park waits on a lock the interrupt holds", async () => {
            const blocked = await sql<{ n: number }>`SELECT count(*)::int AS n
              FROM pg_stat_activity
              WHERE wait_event_type = 'Lock' AND ${interruptPid}::int = ANY (pg_blocking_pids(pid))`.execute(
              db(),
            )
            return blocked.rows[0]!.n === 1
          })
          // The timer's row is free: another statement takes it at once, and lets it go.
          return db()
            .transaction()
            .execute((other) => timerOf(other, sql`FOR UPDATE NOWAIT`))
            .then(
              (taken) => taken.rows,
              (error: unknown) => `${(error as { code?: string }).code}: ${String(error)}`,
            )
        })
      expect(outboxWhileBlocked).toEqual([{ id: executionId }])
      expect(typeof (await parked)).toBe("number")
      expect(await executionRow(executionId)).toMatchObject({ status: "suspended" })
    })
  }

  /**
   * Starts an execution of `ownerId` as a runner of this process takes it: the start is handed over
   * unwritten (to the acceptor here) for the test's pass writer to carry; `id` keys the execution
   * (the quick workflow's key). `outcomes` are what the writes told the start; `started` resolves
   * when the client's start returns.
   */
  const takenStart = async (ownerId: string, id: string = randomUUID()) => {
    const owner = placeOwner({ tenant: "default", ownerType: "Probe", ownerId })
    let take!: (start: UnstartedExecution) => void
    const taken = new Promise<UnstartedExecution>((resolve) => (take = resolve))
    const stop = internals().localStarts.accept({
      take: (request) => {
        if (request.owner.bucket !== owner.bucket) return undefined
        let settled!: (outcome: StartOutcome) => void
        const outcome = new Promise<StartOutcome>((resolve) => (settled = resolve))
        take(unstartedExecution(internals(), request, 60_000, settled))
        return outcome
      },
    })
    const started: Promise<unknown> = client.quick.start(ownerId, { id })
    const start = await Promise.race([taken, started.then(() => undefined)]).finally(stop)
    if (start === undefined) throw new Error("the start was not handed to the acceptor")
    const outcomes: StartOutcome[] = []
    const held: UnstartedExecution = {
      ...start,
      settled: (outcome) => {
        outcomes.push(outcome)
        start.settled(outcome)
      },
    }
    return { held, outcomes, started, executionId: start.snapshot.execution.execution_id }
  }

  const newOwnerId = () => `o-${randomUUID().slice(0, 8)}`

  it("commits a start with the pass's first write, which takes the owner, and tells the start it created the execution", async () => {
    const ownerId = newOwnerId()
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const { activation, writer, batchRows } = writersOf(ownerId, executionId)
    const pass = writer()
    let cursor: number | undefined
    pass.holdStart(held, (eventCursor) => (cursor = eventCursor))
    expect(typeof (await pass.beginActivity("s1", 1))).toBe("number")
    await started
    expect(outcomes).toEqual(["created"])
    expect(cursor).toBe(0)
    expect(activation.held).toBe(1)
    // One row of a step batch: the start, the owner it creates and the pending attempt.
    expect(batchRows()).toBe(1)
    expect(await stepsOf(executionId)).toEqual([["s1#1", null]])
    expect(await executionRow(executionId)).toEqual({ status: "running", event_cursor: 0 })
  })

  it("commits a start under the generation its runner holds as a batch row, which checks the generation", async () => {
    const { ownerId, activation, writer } = await execution()
    await writer().beginActivity("a1", 1)
    expect(activation.held).toBe(1)
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const next = writersOf(ownerId, executionId)
    const pass = next.writer(activation)
    pass.holdStart(held, () => {})
    await pass.beginActivity("s1", 1)
    await started
    expect(outcomes).toEqual(["created"])
    expect(next.batchRows()).toBe(1)
    expect(activation.held).toBe(1)
    expect(await stepsOf(executionId)).toEqual([["s1#1", null]])
  })

  it("writes a held start in a statement of its own before a finish, which cannot update the row the start inserts", async () => {
    const ownerId = newOwnerId()
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const pass = writersOf(ownerId, executionId).writer()
    pass.holdStart(held, () => {})
    expect(await finishWrite(pass, encodeJson({ _tag: "Success", value: {} }))).toBe(true)
    await started
    expect(outcomes).toEqual(["created"])
    expect(await finishesOf(executionId)).toBe(1)
  })

  it("holds a change of the execution back from the write that carries the start, for the write after it", async () => {
    const ownerId = newOwnerId()
    const { held, started, executionId } = await takenStart(ownerId)
    const pass = writersOf(ownerId, executionId).writer()
    pass.holdStart(held, () => {})
    pass.patchExecution({ status: "suspended" })
    await pass.beginActivity("s1", 1)
    await started
    // The change is flushed a few milliseconds after, in a statement of its own.
    await sleep(100)
    await pass.settled()
    expect(await executionRow(executionId)).toEqual({ status: "suspended", event_cursor: 0 })
  })

  it("records a held start before a change of the execution, in a write of its own", async () => {
    const ownerId = newOwnerId()
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    // The guard lets one write through: the start's own, which goes first.
    let writes = 0
    const lost = new Error("the bucket's lease ran out")
    const pass = writersOf(ownerId, executionId).writer(undefined, () =>
      (writes += 1) > 1 ? lost : undefined,
    )
    pass.holdStart(held, () => {})
    const refused = await pass
      .write("resume", { parts: [], execution: { status: "suspended" } })
      .catch((error: unknown) => error)
    expect(refused).toBe(lost)
    await started
    expect(outcomes).toEqual(["created"])
    expect(await executionRow(executionId)).toEqual({ status: "running", event_cursor: 0 })
  })

  it("resolves startRecorded only once the write that carries the start has committed it", async () => {
    const ownerId = newOwnerId()
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const pass = writersOf(ownerId, executionId).writer()
    pass.holdStart(held, () => {})
    const begun = pass.beginActivity("s1", 1)
    await pass.startRecorded()
    expect(outcomes).toEqual(["created"])
    expect(await executionRow(executionId)).toEqual({ status: "running", event_cursor: 0 })
    expect(typeof (await begun)).toBe("number")
    await started
    expect(outcomes).toEqual(["created"])
  })

  it("resolves startRecorded with the write that carries the start, not with a write issued behind it", async () => {
    const ownerId = newOwnerId()
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const pass = writersOf(ownerId, executionId).writer()
    pass.holdStart(held, () => {})
    const order: string[] = []
    // Both issued before the first has run: the second waits behind the first.
    const carrying = pass.beginActivity("s1", 1).then(() => order.push("s1 begun"))
    const behind = pass.beginActivity("s2", 1).then(() => order.push("s2 begun"))
    const recorded = pass.startRecorded().then(() => {
      order.push("start recorded")
      return [...outcomes]
    })
    expect(await recorded).toEqual(["created"])
    await Promise.all([carrying, behind, started])
    expect(order).toEqual(["s1 begun", "start recorded", "s2 begun"])
    expect(outcomes).toEqual(["created"])
  })

  it("writes no statement of its own for a start when a finish is issued behind the write that carries it", async () => {
    const ownerId = newOwnerId()
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const { writer, batchRows } = writersOf(ownerId, executionId)
    const pass = writer()
    pass.holdStart(held, () => {})
    // Issued before the write carrying the start has run: the start is carried already (a batch
    // row), so the finish goes after it as one batch row, with no flush of what is held between.
    const carrying = pass.beginActivity("s1", 1)
    const finished = finishWrite(pass, encodeJson({ _tag: "Success", value: {} }))
    expect(typeof (await carrying)).toBe("number")
    expect(await finished).toBe(true)
    await started
    expect(outcomes).toEqual(["created"])
    expect(batchRows()).toBe(2)
    expect(await finishesOf(executionId)).toBe(1)
  })

  it("carries a start held after the pass's first write on the next write issued", async () => {
    const { ownerId } = await execution()
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const { activation, writer } = writersOf(ownerId, executionId)
    const pass = writer()
    // A write before the start is held: it takes the owner, and carries nothing.
    await pass.write("settle", { parts: [] })
    expect(activation.held).toBe(1)
    pass.holdStart(held, () => {})
    await pass.beginActivity("s1", 1)
    expect(outcomes).toEqual(["created"])
    await started
    expect(await stepsOf(executionId)).toEqual([["s1#1", null]])
    expect(await executionRow(executionId)).toEqual({ status: "running", event_cursor: 0 })
  })

  it("tells a start that found its execution there that it attached, and writes nothing of the pass", async () => {
    const ownerId = newOwnerId()
    const run = await client.quick.start(ownerId, { id: "w" })
    const { held, outcomes, started, executionId } = await takenStart(ownerId, "w")
    expect(executionId).toBe(run.executionId)
    const pass = writersOf(ownerId, executionId).writer()
    pass.holdStart(held, () => {})
    const refused = await pass.beginActivity("s1", 1).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(StartAttached)
    await started
    expect(outcomes).toEqual(["attached"])
    expect(await stepsOf(executionId)).toEqual([])
  })

  it("tells a start its write was refused before it ran, and the start then writes itself", async () => {
    const ownerId = newOwnerId()
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const lost = new Error("the bucket's lease ran out")
    const pass = writersOf(ownerId, executionId).writer(undefined, () => lost)
    pass.holdStart(held, () => {})
    expect(await pass.beginActivity("s1", 1).catch((error: unknown) => error)).toBe(lost)
    await started
    expect(outcomes).toEqual(["not-taken"])
    expect(await executionRow(executionId)).toEqual({ status: "running", event_cursor: 0 })
    expect(await stepsOf(executionId)).toEqual([])
  })

  it("refuses the write a start rides on under a stale generation, though the start itself commits", async () => {
    const { ownerId, activation, writer } = await execution()
    await writer().beginActivity("a1", 1)
    await sql`UPDATE akter.owners SET generation = generation + 1
      WHERE owner_id = ${ownerId}`.execute(db())
    const { held, outcomes, started, executionId } = await takenStart(ownerId)
    const pass = writersOf(ownerId, executionId).writer(activation)
    pass.holdStart(held, () => {})
    const refused = await pass.beginActivity("s1", 1).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(StaleGeneration)
    await started
    expect(outcomes).toEqual(["created"])
    expect(await executionRow(executionId)).toMatchObject({ status: "running" })
    expect(await stepsOf(executionId)).toEqual([])
  })
})
