/**
 * The generation fence through every way a pass writes, on PGlite and on Postgres: a plain
 * statement of the pass (a sleep carrying the held settle), a row of the step batch (the next
 * activity's pending row carrying it), the finish, and the write a start rides on. Each test lets
 * the runner take the owner, moves the owner's generation on under it (as another runner's
 * activation does), and then lets the pass write: the database must hold nothing of that write,
 * and the execution must finish later under a new activation — with each step settled once, as
 * the write-audit triggers count it.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { makeOwnerClient, startRunner, type Runner } from "../../runtime/index.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { waitUntil } from "../support/waitUntil.js"
import {
  installSettleAudit,
  readWriteAudit,
  settledThenFinished,
  settlesOf,
} from "../support/writeAudit.js"
import { makeProbe, type Probe } from "./probeWorkflows.js"

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

/** Longer than any test here: an abandoned execution comes back only when the test says so. */
const RECOVERY_MS = 10 * 60_000

describeEachBackend("a write under a stale generation", (backend) => {
  let akter: TestAkter
  let probe: Probe
  let client: AnyClient
  let runner: Runner

  beforeAll(async () => {
    probe = await makeProbe()
    akter = await openTestAkter(backend)
    await installSettleAudit(internalsOf(akter).storage.db)
    client = makeOwnerClient<AnyClient>(akter, probe.registration)
    runner = await startRunner({
      akter,
      workflows: probe.workflows,
      pollMs: 20,
      recoveryMs: RECOVERY_MS,
    })
  })

  afterAll(async () => {
    await runner?.close()
    await akter?.close()
  })

  const db = () => internalsOf(akter).storage.db

  const generationOf = async (ownerId: string) => {
    const { rows } = await sql<{ generation: number }>`
      SELECT generation::int AS generation FROM akter.owners WHERE owner_id = ${ownerId}`.execute(
      db(),
    )
    return rows[0]!.generation
  }

  /** Another runner's activation: the owner's generation moves on under this runner. */
  const activateElsewhere = async (ownerId: string) => {
    const { rows } = await sql<{ generation: number }>`
      UPDATE akter.owners SET generation = generation + 1 WHERE owner_id = ${ownerId}
      RETURNING generation::int AS generation`.execute(db())
    return rows[0]!.generation
  }

  const stepsOf = async (executionId: string) =>
    (
      await db()
        .selectFrom("akter.steps")
        .select(["step", "attempt", "exit"])
        .where("execution_id", "=", executionId)
        .orderBy("step")
        .orderBy("attempt")
        .execute()
    ).map((row) => `${row.step}#${row.attempt} ${row.exit === null ? "pending" : "settled"}`)

  const statusOf = async (executionId: string) =>
    (
      await db()
        .selectFrom("akter.executions")
        .select("status")
        .where("execution_id", "=", executionId)
        .executeTakeFirstOrThrow()
    ).status

  const passesEnded = () =>
    waitUntil("the runner's passes end", () => runner.live === 0 || undefined, {
      timeoutMs: 10_000,
    })

  /**
   * Starts a `fenced` run that holds in its first activity, moves the owner's generation on while
   * it holds, lets it go, and waits for the refused pass to end. Returns the run and the
   * generation the test set.
   */
  const refusedWhileHolding = async (then: "activity" | "sleep" | "finish") => {
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    const run = await client.fenced.start(ownerId, { label: then, then })
    await waitUntil("hold runs", () => probe.gates.entered(`${ownerId}/hold`) || undefined, {
      timeoutMs: 10_000,
    })
    expect(await generationOf(ownerId)).toBe(1)
    const taken = await activateElsewhere(ownerId)
    probe.gates.open(`${ownerId}/hold`)
    await passesEnded()
    return { ownerId, run, taken }
  }

  /** After the refusal: the recovery timer brings the run back, and a new activation takes it. */
  const recovered = async (ownerId: string, taken: number) => {
    akter.advance(RECOVERY_MS + 1000)
    await waitUntil(
      "a new activation takes the owner",
      async () => ((await generationOf(ownerId)) === taken + 1 ? true : undefined),
      { timeoutMs: 10_000 },
    )
    expect(probe.runs.of(ownerId, "hold")).toBe(2)
  }

  it("refuses the next activity's pending row carrying the held settle (a step batch row)", async () => {
    const { ownerId, run, taken } = await refusedWhileHolding("activity")
    expect(await stepsOf(run.executionId)).toEqual(["hold#1 pending"])
    expect(settlesOf(await readWriteAudit(db()), run.executionId)).toEqual([])
    expect(await generationOf(ownerId)).toBe(taken)
    expect(probe.runs.of(ownerId, "touch")).toBe(0)

    await recovered(ownerId, taken)
    expect(await run.result({ timeout: "10 seconds" })).toEqual({
      _tag: "Success",
      value: { held: 2 },
    })
    expect(probe.runs.of(ownerId, "touch")).toBe(1)
    const audit = await readWriteAudit(db())
    expect(settlesOf(audit, run.executionId)).toEqual(["hold#1"])
    expect(audit.overwrites).toEqual([])
    expect(audit.duplicateFinishes).toEqual([])
  })

  it("refuses a sleep carrying the held settle (a plain statement of the pass)", async () => {
    const { ownerId, run, taken } = await refusedWhileHolding("sleep")
    expect(await stepsOf(run.executionId)).toEqual(["hold#1 pending"])
    expect(settlesOf(await readWriteAudit(db()), run.executionId)).toEqual([])
    expect(await generationOf(ownerId)).toBe(taken)

    await recovered(ownerId, taken)
    await waitUntil(
      "the rerun sleeps",
      async () => ((await statusOf(run.executionId)) === "suspended" ? true : undefined),
      { timeoutMs: 10_000 },
    )
    expect(await stepsOf(run.executionId)).toEqual(["hold#1 settled", "rest#1 pending"])
    akter.advance("2 hours")
    expect(await run.result({ timeout: "10 seconds" })).toEqual({
      _tag: "Success",
      value: { held: 2 },
    })
    const audit = await readWriteAudit(db())
    expect(settledThenFinished(["hold#1", "rest#1"])).toContainEqual(
      settlesOf(audit, run.executionId),
    )
    expect(audit.overwrites).toEqual([])
  })

  it("refuses the finish", async () => {
    const { ownerId, run, taken } = await refusedWhileHolding("finish")
    expect(await stepsOf(run.executionId)).toEqual(["hold#1 pending"])
    expect(await statusOf(run.executionId)).toBe("running")
    expect(await finishesOf(run.executionId)).toBe(0)
    expect(await generationOf(ownerId)).toBe(taken)

    await recovered(ownerId, taken)
    expect(await run.result({ timeout: "10 seconds" })).toEqual({
      _tag: "Success",
      value: { held: 2 },
    })
    expect(await finishesOf(run.executionId)).toBe(1)
    expect(await stepsOf(run.executionId)).toEqual([])
  })

  it("refuses the first write of a start this runner took, though the start itself commits", async () => {
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    probe.gates.open(`${ownerId}/hold`)
    const first = await client.fenced.start(ownerId, { label: "first", then: "finish" })
    expect((await first.result({ timeout: "10 seconds" }))._tag).toBe("Success")
    // The runner holds the owner at generation 1; another activation takes it.
    const taken = await activateElsewhere(ownerId)
    expect(taken).toBe(2)
    const second = await client.fenced.start(ownerId, { label: "second", then: "finish" })
    expect(await second.result({ timeout: "10 seconds" })).toEqual({
      _tag: "Success",
      value: { held: 2 },
    })
    // The write the start rode on (the start, and `hold`'s pending row) was refused under
    // generation 1: the start committed alone with its timer due now, and the runner took the
    // owner again (generation 3) to run it.
    expect(await generationOf(ownerId)).toBe(taken + 1)
    expect(await finishesOf(second.executionId)).toBe(1)
    expect((await readWriteAudit(db())).overwrites).toEqual([])
  })

  const finishesOf = async (executionId: string) => {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM akter_audit.finishes WHERE execution_id = ${executionId}`.execute(
      db(),
    )
    return rows[0]!.n
  }
})
