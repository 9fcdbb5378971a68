/**
 * Concurrency keys on PGlite and on Postgres, one runner in process and the test clock: at most
 * the limit of a group runs at once — a sleeping (suspended) execution holds its place — and the
 * others are `queued` to status and the list API until a finish admits them, first started first;
 * groups are independent; an interrupted queued execution ends without running a step and takes
 * nobody's place. Every claim is read from the admission audit (the database's log of statuses),
 * not from what the runner said.
 */
import { afterAll, beforeAll, expect, it } from "vitest"
import { Effect } from "effect"
import { internalsOf } from "../../runtime/akter.js"
import {
  implementWorkflow,
  listExecutions,
  makeOwnerClient,
  startRunner,
  type Runner,
} from "../../runtime/index.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { installAdmissionAudit, readAdmissionHistory } from "../support/admissionAudit.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

const MANIFEST = `
akter: 1
owner: Shop
workflows:
  order:
    input: { customer: { id: string }, n: integer }
    output: { n: integer }
    concurrency: { key: customer.id, limit: 1 }
    steps:
      work: { kind: activity, input: { n: integer }, output: { n: integer } }
      rest: { kind: sleep, duration: 1m }
  batch:
    input: { region: string, n: integer }
    concurrency: { key: region, limit: 2 }
    steps:
      rest: { kind: sleep, duration: 1m }
`

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("concurrency keys", (backend) => {
  let akter: TestAkter
  let runner: Runner
  let client: AnyClient
  /** The inputs `work` ran with, in order. */
  const worked: number[] = []

  beforeAll(async () => {
    const registration = await registrationFromYaml(MANIFEST, "manifests/shop.yaml")
    akter = await openTestAkter(backend)
    await installAdmissionAudit(internalsOf(akter).storage.db)
    client = makeOwnerClient<AnyClient>(akter, registration)
    runner = await startRunner({
      akter,
      pollMs: 20,
      workflows: [
        implementWorkflow(registration, "order", {
          activities: {
            work: ({ n }: { n: number }) => {
              worked.push(n)
              return Promise.resolve({ n })
            },
          },
          body: ({ n }: { n: number }, wf: UntypedSteps) =>
            Effect.gen(function* () {
              yield* step(wf.work({ n }))
              yield* step(wf.rest())
              return { n }
            }),
        }),
        implementWorkflow(registration, "batch", {
          activities: {},
          body: (_: unknown, wf: UntypedSteps) => Effect.asVoid(step(wf.rest())),
        }),
      ],
    })
  })

  afterAll(async () => {
    await runner?.close()
    await akter?.close()
  })

  const statusOf = async (run: AnyClient) => ((await run.status()) as { status: string }).status

  it("runs one execution per customer at a time, the others queued in start order", async () => {
    const a = [1, 2, 3]
    const runsA: AnyClient[] = []
    for (const n of a) runsA.push(await client.order.start(`o-a${n}`, { customer: { id: "a" }, n }))
    const runB = await client.order.start("o-b1", { customer: { id: "b" }, n: 10 })
    await runUntilIdle(akter, runner)

    // The first of each customer sleeps, admitted; the rest wait without having run a step.
    expect(await Promise.all([...runsA, runB].map(statusOf))).toEqual([
      "suspended",
      "queued",
      "queued",
      "suspended",
    ])
    expect(worked.sort()).toEqual([1, 10])
    const queued = await listExecutions(akter, {
      ownerType: "Shop",
      workflow: "order",
      status: "queued",
      order: "oldest",
    })
    expect(queued.executions.map((e) => e.executionId)).toEqual(
      runsA.slice(1).map((run) => run.executionId),
    )

    // Each wake-up ends one sleeper, whose finish admits the next of its customer.
    akter.advance("1 minute")
    await runUntilIdle(akter, runner)
    expect(await Promise.all([...runsA, runB].map(statusOf))).toEqual([
      "finished",
      "suspended",
      "queued",
      "finished",
    ])
    akter.advance("1 minute")
    await runUntilIdle(akter, runner)
    akter.advance("1 minute")
    await runUntilIdle(akter, runner)
    for (const [index, run] of runsA.entries()) {
      expect(await run.result()).toEqual({ _tag: "Success", value: { n: a[index] } })
    }

    const history = await readAdmissionHistory(internalsOf(akter).storage.db)
    const groupA = "default/Shop/order/customer.id=a"
    expect(history.peak.get(groupA)).toBe(1)
    expect(history.peak.get("default/Shop/order/customer.id=b")).toBe(1)
    expect(history.admitted.get(groupA)).toEqual(runsA.map((run) => run.executionId))
    expect(history.started.get(groupA)).toEqual(runsA.map((run) => run.executionId))
    expect(history.unfinished).toEqual([])
  })

  it("holds a limit of two, and a queued execution interrupted ends without taking a place", async () => {
    const runs: AnyClient[] = []
    for (let n = 1; n <= 5; n++) runs.push(await client.batch.start(`b-${n}`, { region: "eu", n }))
    await runUntilIdle(akter, runner)
    expect(await Promise.all(runs.map(statusOf))).toEqual([
      "suspended",
      "suspended",
      "queued",
      "queued",
      "queued",
    ])
    await runs[2].interrupt()
    expect(await runs[2].result()).toEqual({ _tag: "Interrupted", cause: "request" })
    await runUntilIdle(akter, runner)
    expect(await Promise.all(runs.map(statusOf))).toEqual([
      "suspended",
      "suspended",
      "finished",
      "queued",
      "queued",
    ])
    for (let round = 0; round < 2; round++) {
      akter.advance("1 minute")
      await runUntilIdle(akter, runner)
    }
    for (const index of [0, 1, 3, 4]) {
      expect(await runs[index].result()).toEqual({ _tag: "Success", value: undefined })
    }
    const history = await readAdmissionHistory(internalsOf(akter).storage.db)
    const group = "default/Shop/batch/region=eu"
    expect(history.peak.get(group)).toBe(2)
    expect(history.admitted.get(group)).toEqual(
      [0, 1, 3, 4].map((index) => runs[index].executionId),
    )
    expect(history.unfinished).toEqual([])
  })
})
