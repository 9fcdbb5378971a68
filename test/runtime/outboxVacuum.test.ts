/**
 * A working runner vacuums the outbox once its dead row versions pass the threshold, on PGlite and
 * on Postgres (runner/outboxVacuum.ts): the dead versions a claim's scan would otherwise read
 * again on every claim are gone, judged from the database's own statistics (its count of dead
 * versions and of vacuums of the table), without anyone calling a vacuum. Also the store's two
 * statements: the count follows inserts and deletes, and the vacuum clears it.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { makeOwnerClient, startRunner } from "../../runtime/index.js"
import { outboxDeadRows, vacuumOutbox } from "../../runtime/outbox/outboxStore.js"
import { OUTBOX_DEAD_ROWS_LIMIT } from "../../runtime/runner/outboxVacuum.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { waitUntil } from "../support/waitUntil.js"
import { makeProbe } from "./probeWorkflows.js"

/** Leaves `count` dead versions in the outbox: timers inserted far in the future, then deleted. */
const leaveDeadTimers = async (akter: TestAkter, count: number) => {
  const db = internalsOf(akter).storage.db
  const prefix = `dead-${randomUUID()}-`
  await sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
      due_at_ms)
    SELECT 0, 'timer', ${prefix} || g, 128, 'default', 'Nobody', 'nobody', 9000000000000000
    FROM generate_series(1, ${count}::int) g`.execute(db)
  await sql`DELETE FROM akter.outbox WHERE id LIKE ${`${prefix}%`}`.execute(db)
}

const vacuumsOfOutbox = async (akter: TestAkter): Promise<number> => {
  const { rows } = await sql<{ vacuums: number | string }>`
    SELECT vacuum_count AS vacuums FROM pg_stat_user_tables
    WHERE relid = 'akter.outbox'::regclass`.execute(internalsOf(akter).storage.db)
  return Number(rows[0]!.vacuums)
}

describeEachBackend("the outbox's vacuum", (backend) => {
  let akter: TestAkter
  beforeAll(async () => {
    akter = await openTestAkter(backend)
  })
  afterAll(() => akter.close())

  it("counts the dead versions deletes leave, and a vacuum reclaims them", async () => {
    const db = internalsOf(akter).storage.db
    await vacuumOutbox(db)
    await waitUntil("no dead versions left", async () => (await outboxDeadRows(db)) === 0, {
      timeoutMs: 10_000,
    })
    await leaveDeadTimers(akter, 300)
    // The statistics trail the deletes by a second or so.
    await waitUntil("300 dead versions counted", async () => (await outboxDeadRows(db)) >= 300, {
      timeoutMs: 10_000,
    })
    const vacuums = await vacuumsOfOutbox(akter)
    await vacuumOutbox(db)
    await waitUntil("the vacuum reclaimed them", async () => (await outboxDeadRows(db)) === 0, {
      timeoutMs: 10_000,
    })
    expect(await vacuumsOfOutbox(akter)).toBe(vacuums + 1)
  })

  it("is vacuumed by a working runner once the dead versions pass the threshold", async () => {
    const db = internalsOf(akter).storage.db
    await leaveDeadTimers(akter, OUTBOX_DEAD_ROWS_LIMIT + 1_000)
    await waitUntil(
      "the dead versions counted",
      async () => (await outboxDeadRows(db)) > OUTBOX_DEAD_ROWS_LIMIT,
      {
        timeoutMs: 10_000,
      },
    )
    const vacuums = await vacuumsOfOutbox(akter)
    const probe = await makeProbe()
    const runner = await startRunner({ akter, workflows: probe.workflows, pollMs: 20 })
    try {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const client = makeOwnerClient<any>(akter, probe.registration)
      const run = await client.quick.start(`o-${randomUUID()}`, { id: "works" })
      await runUntilIdle(akter, runner)
      expect((await run.result())._tag).toBe("Success")
      // The runner looks every 5 s or so (jittered by a quarter): within two looks at most.
      await waitUntil(
        "a vacuum of the outbox",
        async () => (await vacuumsOfOutbox(akter)) > vacuums,
        {
          timeoutMs: 15_000,
        },
      )
      await waitUntil(
        "the dead versions reclaimed",
        async () => (await outboxDeadRows(db)) < OUTBOX_DEAD_ROWS_LIMIT,
        {
          timeoutMs: 10_000,
        },
      )
    } finally {
      await runner.close()
    }
  }, 40_000)
})
