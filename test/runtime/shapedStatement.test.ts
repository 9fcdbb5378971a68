/**
 * Statements compiled once per shape (storage/shapedStatement.ts), on PGlite and on Postgres: a
 * shape is composed once and every call runs its text with the call's own values, the clock's
 * offset among them; a value captured while composing is refused rather than replayed. And the
 * runner's step batch, which is such a statement, writes with the offset of the clock it is given.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { nowMs } from "../../runtime/storage/clock.js"
import { ShapedStatements, Slot, slotClock } from "../../runtime/storage/shapedStatement.js"
import { writeStepBatch } from "../../runtime/engine/stepBatch.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { makeProbe, type Probe } from "./probeWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const DAY_MS = 86_400_000

describeEachBackend("shaped statements", (backend) => {
  let akter: TestAkter
  let probe: Probe

  beforeAll(async () => {
    probe = await makeProbe()
    akter = await openTestAkter(backend)
  })

  afterAll(() => akter?.close())

  const db = () => internalsOf(akter).storage.db

  it("composes a shape once and runs its text with each call's values", async () => {
    let composed = 0
    const sums = new ShapedStatements("sum", (key: "sum") => {
      composed += 1
      return sql<{ sum: number; label: string; key: string }>`SELECT
        ${new Slot(0)}::int + ${new Slot(1)}::int AS sum, ${new Slot(2)}::text AS label,
        ${key}::text AS key`
    })
    const first = await sums.execute(db(), "sum", [1, 2, "one"])
    const second = await sums.execute(db(), "sum", [10, 20, "two"])
    expect(first.rows).toEqual([{ sum: 3, label: "one", key: "sum" }])
    expect(second.rows).toEqual([{ sum: 30, label: "two", key: "sum" }])
    expect(composed).toBe(1)
  })

  it("reads the database's clock with the offset of each call", async () => {
    const now = new ShapedStatements(
      "now",
      () => sql<{ now: number }>`SELECT ${nowMs(slotClock(0))} AS now`,
    )
    const before = Date.now()
    const plain = Number((await now.execute(db(), 0, [0])).rows[0]!.now)
    const ahead = Number((await now.execute(db(), 0, [DAY_MS])).rows[0]!.now)
    expect(plain).toBeGreaterThanOrEqual(before - 1_000)
    expect(plain).toBeLessThan(before + DAY_MS / 2)
    expect(ahead).toBeGreaterThanOrEqual(before + DAY_MS - 1_000)
  })

  it("refuses a value captured while composing, on every call", async () => {
    const captured = new ShapedStatements(
      "captured",
      () => sql<{ b: Buffer }>`SELECT ${Buffer.from("row")}::bytea AS b, ${new Slot(0)}::int AS n`,
    )
    for (let call = 0; call < 2; call++) {
      await expect(captured.execute(db(), 0, [1])).rejects.toThrow(
        "captured (shape 0): parameter $1 is a value captured while composing, not a slot",
      )
    }
  })

  it("begins a step batch's attempt at the time of the clock it is given", async () => {
    const client = makeOwnerClient<AnyClient>(akter, probe.registration)
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    const run = await client.quick.start(ownerId, { id: "shaped" })
    const owner = placeOwner({ tenant: "default", ownerType: "Probe", ownerId })
    const clock = internalsOf(akter).clock
    const write = (step: string) => ({
      owner,
      generation: null,
      executionId: run.executionId as string,
      begin: { step, attempt: 1 },
    })
    const before = Date.now()
    const [now] = await writeStepBatch(db(), clock, [write("first")], false)
    akter.advance("1 day")
    const [later] = await writeStepBatch(db(), clock, [write("second")], false)
    expect(now!.startedAtMs).toBeLessThan(before + DAY_MS / 2)
    expect(later!.startedAtMs).toBeGreaterThanOrEqual(before + DAY_MS - 1_000)
  })
})
