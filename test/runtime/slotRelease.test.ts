/**
 * A pass that only writes gives its slot up (runner/livePasses.ts `releaseSlot`), on Postgres: with
 * one slot, a pass whose result's write is held up by a lock on its owner row does not keep a
 * sleep due meanwhile from resuming — the sleeping pass runs the code after its sleep while that
 * write still waits. (The concurrency the runner promises counts passes running the workflow's
 * code; a pass writing its suspend or its result runs none.) Postgres only: holding the owner row
 * needs a second connection, which PGlite does not have.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { implementWorkflow, makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describePostgres, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { waitUntil } from "../support/waitUntil.js"
import { waitUntilSuspended } from "../support/executionStatus.js"
import { withRunner } from "../support/withRunner.js"

const registration = await registrationFromYaml(
  `
akter: 1
owner: Lane
workflows:
  nap:
    input: { ms: integer }
    steps:
      nap: { kind: sleep }
  hold:
    steps:
      work: { kind: activity, output: { done: boolean } }
`,
  "manifests/lane.yaml",
)

describePostgres("slots of passes that only write", () => {
  let akter: TestAkter
  /** When each `nap` execution ran the code after its sleep (local time). */
  const woke = new Map<string, number>()
  /** Releases the running `work` activity. */
  let releaseWork: () => void = () => {}
  let workRunning = false

  const nap = implementWorkflow(registration, "nap", {
    activities: {},
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (input: { ms: number }, wf: any) =>
      Effect.gen(function* () {
        yield* wf.nap(input.ms) as Effect.Effect<void>
        yield* Effect.sync(() => void woke.set(wf.executionId as string, Date.now()))
      }),
  })
  const hold = implementWorkflow(registration, "hold", {
    activities: {
      work: () =>
        new Promise<{ done: boolean }>((resolve) => {
          workRunning = true
          releaseWork = () => resolve({ done: true })
        }),
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (_input: unknown, wf: any) => wf.work() as Effect.Effect<{ done: boolean }>,
  })

  beforeAll(async () => {
    akter = await openTestAkter("postgres")
  })

  afterAll(() => akter?.close())

  const db = () => internalsOf(akter).storage.db
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = () => makeOwnerClient<any>(akter, registration)

  it("resumes a due sleep while the only slot's pass waits for its result's write", async () => {
    await withRunner({ akter, workflows: [nap, hold], concurrency: 1 }, async (runner) => {
      const sleeper = await client().nap.start(`o-${randomUUID().slice(0, 8)}`, { ms: 1_500 })
      const sleeperId = sleeper.executionId as string
      await waitUntilSuspended(db(), sleeperId)
      await waitUntil("the sleeping pass waits in memory", () => runner.live === 0)
      const holder = `o-${randomUUID().slice(0, 8)}`
      const held = await client().hold.start(holder)
      await waitUntil("the holding pass runs its activity", () => workRunning)
      let unlock!: () => void
      const unlocked = new Promise<void>((resolve) => (unlock = resolve))
      let locked!: () => void
      const isLocked = new Promise<void>((resolve) => (locked = resolve))
      // Another session holds the holder's owner row: its pass's result write waits for it.
      const holding = db()
        .transaction()
        .execute(async (tx) => {
          await sql`SELECT 1 FROM akter.owners WHERE owner_id = ${holder} FOR UPDATE`.execute(tx)
          locked()
          await unlocked
        })
      try {
        await isLocked
        releaseWork()
        await waitUntil(
          "the result's write waits for the owner row",
          async () => {
            const { rows } = await sql<{ waiting: number }>`
              SELECT count(*)::int AS waiting FROM pg_stat_activity
              WHERE wait_event_type = 'Lock' AND datname = current_database()`.execute(db())
            return rows[0]!.waiting > 0
          },
          { timeoutMs: 10_000 },
        )
        // Due at 1.5 s: resumed then, although the one slot's pass has not finished writing.
        await waitUntil("the sleeper runs the code after its sleep", () => woke.has(sleeperId), {
          timeoutMs: 10_000,
        })
        const { rows } = await sql<{ status: string }>`
          SELECT status FROM akter.executions WHERE execution_id = ${held.executionId}`.execute(
          db(),
        )
        expect(rows[0]!.status).not.toBe("finished")
      } finally {
        unlock()
        await holding
      }
      expect(await held.result({ timeout: "20 seconds" })).toMatchObject({ _tag: "Success" })
      expect(await sleeper.result({ timeout: "20 seconds" })).toMatchObject({ _tag: "Success" })
    })
  })
})
