/**
 * Folded starts as rows of the step batch (engine/stepBatch.ts), on PGlite and on Postgres: several
 * starts and step writes of other executions in one statement, each row with the guarantees of the
 * start statement — the owner created once, at generation 1, or taken from whoever held it; the
 * execution inserted once (a second start attaches and takes nothing); markers, manifest and timer
 * written with it; the first pending attempt only under the fence. A start whose owner moved on
 * commits alone, its timer due now for a claim. And the starts no runner of the process takes,
 * which concurrent callers send as one statement (engine/startBatch.ts): owners created at
 * generation 0, timers due now, each bucket's runners woken, a repeated start attached.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { unstartedExecution, writeStart } from "../../runtime/engine/startStatement.js"
import type { StartRequest } from "../../runtime/engine/startRequest.js"
import type { StartOutcome, UnstartedExecution } from "../../runtime/engine/executionStore.js"
import { writeStepBatch, type StepBatchWrite } from "../../runtime/engine/stepBatch.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { makeProbe, type Probe } from "./probeWorkflows.js"
import { waitUntil } from "../support/waitUntil.js"
import { WAKE_CHANNEL } from "../../runtime/outbox/notifications.js"
import pg from "pg"
import { sql } from "kysely"

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

/** How far ahead a taken start arms its timer. */
const RECOVERY_MS = 60_000

describeEachBackend("folded starts as batch rows", (backend) => {
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
  const batch = (writes: readonly StepBatchWrite[]) =>
    writeStepBatch(db(), internals().clock, writes, backend === "postgres")
  const newOwnerId = () => `o-${randomUUID().slice(0, 8)}`
  const ownerOf = (ownerId: string) =>
    placeOwner({ tenant: "default", ownerType: "Probe", ownerId })

  /**
   * The start of `workflow` for `ownerId` as a runner of this process would take it, unwritten;
   * the client's start is left waiting for what came of it, which `settle` tells.
   */
  const takenStart = async (ownerId: string, workflow: "quick" | "marked", input?: unknown) => {
    const owner = ownerOf(ownerId)
    let take!: (start: UnstartedExecution) => void
    const taken = new Promise<UnstartedExecution>((resolve) => (take = resolve))
    let settle!: (outcome: StartOutcome) => void
    const stop = internals().localStarts.accept({
      take: (request) => {
        if (request.owner.ownerId !== ownerId) return undefined
        const outcome = new Promise<StartOutcome>((resolve) => (settle = resolve))
        take(unstartedExecution(internals(), request, RECOVERY_MS, () => {}))
        return outcome
      },
    })
    const started: Promise<unknown> = client[workflow].start(ownerId, input)
    const start = await taken.finally(stop)
    if (start.batchable === undefined) throw new Error("a plain start should go as a batch row")
    const row = (
      generation: number | null,
      more: Partial<StepBatchWrite> = {},
    ): StepBatchWrite => ({
      owner,
      generation,
      executionId: start.snapshot.execution.execution_id,
      start: start.batchable!,
      ...more,
    })
    return {
      owner,
      executionId: start.snapshot.execution.execution_id,
      row,
      /** Tells the waiting client what came of the start, and waits for its start to return. */
      settle: async (outcome: StartOutcome) => {
        settle(outcome)
        await started.catch(() => undefined)
      },
    }
  }

  const ownerRow = (ownerId: string) =>
    db()
      .selectFrom("akter.owners")
      .select(["generation"])
      .where("owner_id", "=", ownerId)
      .executeTakeFirst()
  const executionsOf = (ownerId: string) =>
    db()
      .selectFrom("akter.executions")
      .select(["execution_id", "status", "event_cursor"])
      .where("owner_id", "=", ownerId)
      .execute()
  const stepsOf = (executionId: string) =>
    db()
      .selectFrom("akter.steps")
      .select(["step", "attempt", "kind", "version"])
      .where("execution_id", "=", executionId)
      .orderBy("step")
      .execute()
  const timerDueIn = async (executionId: string) => {
    const row = await db()
      .selectFrom("akter.outbox")
      .select(["due_at_ms"])
      .where("kind", "=", "timer")
      .where("id", "=", executionId)
      .executeTakeFirstOrThrow()
    return Number(row.due_at_ms) - Date.now()
  }

  it("writes starts of new and existing owners beside another execution's step in one statement", async () => {
    // An existing owner, held at generation 1 by an execution this "runner" already runs.
    const heldOwner = newOwnerId()
    const running = await takenStart(heldOwner, "quick", { id: "running" })
    const [first] = await batch([running.row(null, { begin: { step: "touch", attempt: 1 } })])
    expect(first).toMatchObject({ fenced: true, generation: 1, start: { created: true } })
    await running.settle("created")

    const fresh = await takenStart(newOwnerId(), "quick", { id: "fresh" })
    const sibling = await takenStart(heldOwner, "quick", { id: "sibling" })
    const otherOwner = newOwnerId()
    await client.quick.start(otherOwner, { id: "elsewhere" }) // no runner: generation 0
    const taking = await takenStart(otherOwner, "quick", { id: "taking" })

    const outcomes = await batch([
      fresh.row(null, { begin: { step: "touch", attempt: 1 } }),
      // Under the generation held for the owner's running execution.
      sibling.row(1, { begin: { step: "touch", attempt: 1 } }),
      {
        owner: running.owner,
        generation: 1,
        executionId: running.executionId,
        begin: { step: "touch", attempt: 2 },
      },
      // Takes an owner that existed (another start created it, nobody held it).
      taking.row(null, { begin: { step: "touch", attempt: 1 } }),
    ])
    expect(outcomes.map((o) => [o.fenced, o.generation, o.start?.created, o.startedAtMs])).toEqual([
      [true, 1, true, expect.any(Number)],
      [true, 1, true, expect.any(Number)],
      [true, 1, undefined, expect.any(Number)],
      [true, 1, true, expect.any(Number)],
    ])
    expect(outcomes[0]!.start).toMatchObject({ eventCursor: 0, deadlineAtMs: null })
    for (const started of [fresh, sibling, taking]) {
      expect(await stepsOf(started.executionId)).toEqual([
        { step: "touch", attempt: 1, kind: "activity", version: null },
      ])
      // Armed a recovery interval ahead, as a claim would: this runner holds the owner.
      expect(await timerDueIn(started.executionId)).toBeGreaterThan(RECOVERY_MS - 10_000)
      await started.settle("created")
    }
    expect(await ownerRow(otherOwner)).toEqual({ generation: 1 })
    expect(await ownerRow(heldOwner)).toEqual({ generation: 1 })
    expect((await executionsOf(heldOwner)).length).toBe(2)
  })

  it("attaches a second start of an execution: nothing written, nothing taken", async () => {
    const ownerId = newOwnerId()
    const once = await takenStart(ownerId, "quick", { id: "same" })
    await batch([once.row(null, { begin: { step: "touch", attempt: 1 } })])
    await once.settle("created")
    // Another runner takes the owner in between (generation 2).
    await db()
      .updateTable("akter.owners")
      .set((eb) => ({ generation: eb("generation", "+", 1) }))
      .where("owner_id", "=", ownerId)
      .execute()
    const again = await takenStart(ownerId, "quick", { id: "same" })
    expect(again.executionId).toBe(once.executionId)
    const [outcome] = await batch([again.row(null, { begin: { step: "touch", attempt: 9 } })])
    expect(outcome).toMatchObject({
      fenced: false,
      generation: null,
      start: { created: false, eventCursor: null },
    })
    // The owner stays with whoever took it; no attempt 9.
    expect(await ownerRow(ownerId)).toEqual({ generation: 2 })
    await again.settle("attached")
    // Nor under the generation the runner holds: the row's fence holds only for a start that
    // inserted its execution, so an attaching one never writes to the execution it found.
    const held = await takenStart(ownerId, "quick", { id: "same" })
    const [underHeld] = await batch([held.row(2, { begin: { step: "touch", attempt: 8 } })])
    expect(underHeld).toMatchObject({ fenced: false, start: { created: false } })
    expect(await stepsOf(once.executionId)).toEqual([
      { step: "touch", attempt: 1, kind: "activity", version: null },
    ])
    await held.settle("attached")
  })

  it("commits a start whose owner moved on alone, its timer due now, and writes nothing else", async () => {
    const ownerId = newOwnerId()
    const running = await takenStart(ownerId, "quick", { id: "first" })
    await batch([running.row(null)])
    await running.settle("created")
    const late = await takenStart(ownerId, "quick", { id: "late" })
    // The runner believes it holds generation 1; another took the owner since.
    await db()
      .updateTable("akter.owners")
      .set({ generation: 5 })
      .where("owner_id", "=", ownerId)
      .execute()
    const [outcome] = await batch([late.row(1, { begin: { step: "touch", attempt: 1 } })])
    expect(outcome).toMatchObject({ fenced: false, generation: null, start: { created: true } })
    expect((await executionsOf(ownerId)).map((e) => e.status)).toEqual(["running", "running"])
    expect(await stepsOf(late.executionId)).toEqual([])
    expect(await timerDueIn(late.executionId)).toBeLessThan(5_000)
    expect(await ownerRow(ownerId)).toEqual({ generation: 5 })
    await late.settle("created")
  })

  it("records each start's markers, and a manifest two starts share once", async () => {
    const a = await takenStart(newOwnerId(), "marked")
    const b = await takenStart(newOwnerId(), "marked")
    const manifests = async () =>
      (
        await db()
          .selectFrom("akter.manifests")
          .select(["manifest_hash"])
          .where("workflow", "=", "marked")
          .execute()
      ).length
    const before = await manifests()
    const outcomes = await batch([a.row(null), b.row(null)])
    expect(outcomes.map((o) => [o.fenced, o.start?.created])).toEqual([
      [true, true],
      [true, true],
    ])
    for (const started of [a, b]) {
      expect(await stepsOf(started.executionId)).toEqual([
        { step: "fraud", attempt: 0, kind: "version", version: 2 },
      ])
      await started.settle("created")
    }
    expect(await manifests()).toBe(Math.max(before, 1))
  })

  /** Requests of starts this process's runners are offered, none taken: the client writes them. */
  const offeredStarts = () => {
    const requests: StartRequest[] = []
    const stop = internals().localStarts.accept({
      take: (request) => {
        requests.push(request)
        return undefined
      },
    })
    return { requests, stop }
  }

  it("sends the starts of concurrent callers no runner takes as one statement, and wakes each bucket", async () => {
    const owners = Array.from({ length: 10 }, newOwnerId)
    const wakes: string[] = []
    let listener: pg.Client | undefined
    if (backend === "postgres") {
      // The test's own database: notifications do not cross databases.
      const { rows } = await sql<{ name: string }>`SELECT current_database() AS name`.execute(db())
      const url = new URL(process.env["DATABASE_URL"]!)
      url.pathname = `/${rows[0]!.name}`
      listener = new pg.Client({ connectionString: url.toString() })
      await listener.connect()
      listener.on("notification", (message) => wakes.push(message.payload ?? ""))
      await listener.query(`LISTEN ${WAKE_CHANNEL}`)
    }
    try {
      const before = internals().storage.counters.statements
      const runs = await Promise.all(
        owners.map((ownerId, index) => client.quick.start(ownerId, { id: `c${index}` })),
      )
      // The first goes at once, alone; the nine that came while it ran go together.
      expect(internals().storage.counters.statements - before).toBe(2)
      for (const [index, ownerId] of owners.entries()) {
        expect(await executionsOf(ownerId)).toEqual([
          { execution_id: runs[index].executionId, status: "running", event_cursor: 0 },
        ])
        // No runner holds the owner, and a claim runs the execution now.
        expect(await ownerRow(ownerId)).toEqual({ generation: 0 })
        expect(await timerDueIn(runs[index].executionId)).toBeLessThan(5_000)
      }
      if (listener !== undefined) {
        const buckets = new Set(owners.map((ownerId) => String(ownerOf(ownerId).bucket)))
        await waitUntil("a wake for each bucket", () =>
          [...buckets].every((bucket) => wakes.includes(bucket)),
        )
        // One wake per bucket and statement, not per start.
        expect(wakes.length).toBeLessThanOrEqual(buckets.size + 1)
      }
    } finally {
      await listener?.end()
    }
  })

  it("attaches a repeated start in a batch, and records markers and a shared manifest", async () => {
    const offered = offeredStarts()
    const ownerId = newOwnerId()
    const other = newOwnerId()
    try {
      await Promise.all([client.quick.start(ownerId, { id: "twice" }), client.marked.start(other)])
    } finally {
      offered.stop()
    }
    const [quick, marked] = offered.requests
    // The same start again, twice at once, beside a new one: both attach, nothing rewritten.
    const third = newOwnerId()
    const offeredAgain = offeredStarts()
    let fresh!: StartRequest
    try {
      await client.marked.start(third)
      fresh = offeredAgain.requests[0]!
    } finally {
      offeredAgain.stop()
    }
    // Two new starts of one execution in one statement: one creates it, the other attaches.
    const offeredTwice = offeredStarts()
    let twice!: StartRequest
    try {
      await client.quick.start(newOwnerId(), { id: "new-twice" })
      twice = offeredTwice.requests[0]!
    } finally {
      offeredTwice.stop()
    }
    const [lone, ...together] = await Promise.all([
      // Goes at once and alone (an attach): the three behind it share one statement.
      writeStart(internals(), quick!, { awaited: false }),
      writeStart(
        internals(),
        { ...twice, executionId: `${twice.executionId}x` },
        { awaited: false },
      ),
      writeStart(
        internals(),
        { ...twice, executionId: `${twice.executionId}x` },
        { awaited: true },
      ),
      writeStart(internals(), quick!, { awaited: false }),
    ])
    expect([lone, ...together]).toEqual([false, true, false, false])
    // Awaited: the second of the two asked for it, and its start attached to the first's.
    const written = await db()
      .selectFrom("akter.executions")
      .select(["awaited"])
      .where("execution_id", "=", `${twice.executionId}x`)
      .execute()
    expect(written).toEqual([{ awaited: true }])
    const created = await Promise.all([
      writeStart(internals(), quick!, { awaited: false }),
      writeStart(internals(), quick!, { awaited: false }),
      writeStart(internals(), marked!, { awaited: false }),
      writeStart(internals(), fresh, { awaited: false }),
    ])
    expect(created).toEqual([false, false, false, false])
    expect((await executionsOf(ownerId)).length).toBe(1)
    for (const id of [marked!.executionId, fresh.executionId]) {
      expect(await stepsOf(id)).toEqual([
        { step: "fraud", attempt: 0, kind: "version", version: 2 },
      ])
    }
  })
})
