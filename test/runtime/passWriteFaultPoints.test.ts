/**
 * The fault points a pass write passes, which the crash suite arms to kill a runner between a
 * statement and the next (`AKTER_FAULTS=settle.after:2`): every write passes its label's `before`
 * and `after` points, and a write that carries held settles or held parts also passes the `settle`
 * points — as a step-batch row and as a plain statement — while a write that carries nothing held
 * does not, nor a final write, which drops what is held. Armed, a point kills the process, so this
 * file records the points instead (the fault module replaced by a recorder); the database is real,
 * on PGlite and on Postgres.
 */
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { PassWriter } from "../../runtime/engine/passWriter.js"
import { beginSleepPart } from "../../runtime/engine/stepStore.js"
import { stepBatchStatement, type StepBatchRequest } from "../../runtime/engine/stepBatch.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { Activation } from "../../runtime/owners/fence.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import { encodeJson } from "../../runtime/storage/codec.js"
import { StatementBatcher } from "../../runtime/storage/statementBatcher.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { makeProbe, type Probe } from "./probeWorkflows.js"

const passed = vi.hoisted(() => [] as string[])

vi.mock("../../runtime/faults.js", () => ({
  faultPoint: (name: string) => {
    passed.push(name)
  },
}))

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("pass write fault points", (backend) => {
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
  const exit = (n: number) => encodeJson({ _tag: "Success", value: { n } })

  /** The points one write passes. */
  const pointsOf = async (write: () => Promise<unknown>) => {
    passed.length = 0
    await write()
    return [...passed]
  }

  it("passes the settle points only with a write that carries held settles or parts, batched or plain", async () => {
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    const run = await client.quick.start(ownerId, { id: "w" })
    const executionId = run.executionId as string
    const owner = placeOwner({ tenant: "default", ownerType: "Probe", ownerId })
    let rows = 0
    const batcher = new StatementBatcher((requests: readonly StepBatchRequest[]) => {
      rows += requests.length
      return stepBatchStatement(db(), internals().clock, backend === "postgres")(requests)
    })
    const pass = new PassWriter(
      db(),
      internals().clock,
      new Activation(owner),
      owner.routingKey,
      executionId,
      () => undefined,
      batcher,
    )
    const plainAndBare = ["pending.before", "pending.after"]
    const carrying = ["pending.before", "settle.before", "settle.after", "pending.after"]
    // The first write takes the owner (the activation's own points): a batch row carrying nothing.
    expect(await pointsOf(() => pass.beginActivity("s1", 1))).toEqual([
      "pending.before",
      "activate.before",
      "activate.after",
      "pending.after",
    ])
    // A batch row carrying nothing, then one carrying a settle.
    expect(rows).toBe(1)
    expect(await pointsOf(() => pass.beginActivity("s2", 1))).toEqual(plainAndBare)
    expect(rows).toBe(2)
    pass.holdSettle({ step: "s1", attempt: 1, exit: exit(1) })
    expect(await pointsOf(() => pass.beginActivity("s3", 1))).toEqual(carrying)
    expect(rows).toBe(3)
    // Two held settles, then a held part: plain statements carrying them.
    pass.holdSettle({ step: "s2", attempt: 1, exit: exit(2) })
    pass.holdSettle({ step: "s3", attempt: 1, exit: exit(3) })
    expect(await pointsOf(() => pass.beginActivity("s4", 1))).toEqual(carrying)
    pass.hold([
      beginSleepPart(
        internals().clock,
        { routingKey: owner.routingKey, executionId, step: "nap", attempt: 1 },
        60_000,
      ),
    ])
    expect(await pointsOf(() => pass.beginActivity("s5", 1))).toEqual(carrying)
    expect(rows).toBe(3)
    // A final write drops a held settle: its batch row carries none, and passes no settle point.
    pass.holdSettle({ step: "s4", attempt: 1, exit: exit(4) })
    const finished = await pointsOf(() =>
      pass.write("finish", {
        finish: encodeJson({ _tag: "Success", value: {} }),
        read: (outcome) => outcome.finished,
        statement: () => {
          throw new Error("a finish under a held generation goes as a batch row")
        },
      }),
    )
    expect(finished).toEqual(["finish.before", "finish.after"])
    expect(rows).toBe(4)
  })
})
