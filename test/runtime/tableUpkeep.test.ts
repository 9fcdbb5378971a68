/**
 * A working runner keeps akter's tables vacuumed and analyzed, on PGlite and on Postgres
 * (runner/tableUpkeep.ts, storage/tableUpkeep.ts): once the outbox's dead row versions pass the
 * threshold they are gone, and once a table's changed rows pass theirs it is analyzed (which makes
 * Postgres plan again the statements that read it), judged from the database's own statistics
 * (its counts of dead versions, changed rows, vacuums and analyzes of the table), without anyone
 * calling either. Also the statements: the counts follow inserts and deletes, and a vacuum clears
 * the dead versions.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { makeOwnerClient, startRunner } from "../../runtime/index.js"
import {
  ANALYZE_CHANGED_ROWS,
  readActivityOf,
  upkeepDue,
  upkeepTable,
  VACUUM_DEAD_ROWS,
} from "../../runtime/storage/tableUpkeep.js"
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

/** How many times the outbox has been vacuumed and analyzed (by hand: autovacuum is counted apart). */
const upkeepOfOutbox = async (akter: TestAkter) => {
  const { rows } = await sql<{ vacuums: number | string; analyzes: number | string }>`
    SELECT vacuum_count AS vacuums, analyze_count AS analyzes FROM pg_stat_user_tables
    WHERE relid = 'akter.outbox'::regclass`.execute(internalsOf(akter).storage.db)
  return { vacuums: Number(rows[0]!.vacuums), analyzes: Number(rows[0]!.analyzes) }
}
const vacuumsOfOutbox = async (akter: TestAkter) => (await upkeepOfOutbox(akter)).vacuums
/** The outbox's counts, as a runner's upkeep reads them. */
const activityOfOutbox = (akter: TestAkter) =>
  readActivityOf(internalsOf(akter).storage.db, "outbox")
const deadRowsOfOutbox = async (akter: TestAkter) => (await activityOfOutbox(akter)).deadRows
const vacuumOutbox = (akter: TestAkter) =>
  upkeepTable(internalsOf(akter).storage.db, "outbox", { vacuum: true, analyze: false })

describeEachBackend("the upkeep of akter's tables", (backend) => {
  let akter: TestAkter
  beforeAll(async () => {
    akter = await openTestAkter(backend)
  })
  afterAll(() => akter.close())

  it("counts the dead versions deletes leave, and a vacuum reclaims them", async () => {
    await vacuumOutbox(akter)
    await waitUntil("no dead versions left", async () => (await deadRowsOfOutbox(akter)) === 0, {
      timeoutMs: 10_000,
    })
    await leaveDeadTimers(akter, 300)
    // The statistics trail the deletes by a second or so.
    await waitUntil(
      "300 dead versions counted",
      async () => (await deadRowsOfOutbox(akter)) >= 300,
      { timeoutMs: 10_000 },
    )
    const vacuums = await vacuumsOfOutbox(akter)
    await vacuumOutbox(akter)
    await waitUntil(
      "the vacuum reclaimed them",
      async () => (await deadRowsOfOutbox(akter)) === 0,
      { timeoutMs: 10_000 },
    )
    expect(await vacuumsOfOutbox(akter)).toBe(vacuums + 1)
  })

  /** Runs one workflow on a fresh runner, then waits (up to two of its looks) for `done`. */
  const whileARunnerWorks = async (what: string, done: () => Promise<boolean>) => {
    const probe = await makeProbe()
    const runner = await startRunner({ akter, workflows: probe.workflows, pollMs: 20 })
    try {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const client = makeOwnerClient<any>(akter, probe.registration)
      const run = await client.quick.start(`o-${randomUUID()}`, { id: "works" })
      await runUntilIdle(akter, runner)
      expect((await run.result())._tag).toBe("Success")
      // The runner looks every 5 s or so (jittered by a quarter): within two looks at most.
      await waitUntil(what, done, { timeoutMs: 15_000 })
    } finally {
      await runner.close()
    }
  }

  it("is vacuumed by a working runner once the dead versions pass the threshold", async () => {
    await leaveDeadTimers(akter, VACUUM_DEAD_ROWS + 1_000)
    await waitUntil(
      "the dead versions counted",
      async () => (await deadRowsOfOutbox(akter)) > VACUUM_DEAD_ROWS,
      { timeoutMs: 10_000 },
    )
    const vacuums = await vacuumsOfOutbox(akter)
    await whileARunnerWorks(
      "a vacuum of the outbox",
      async () => (await vacuumsOfOutbox(akter)) > vacuums,
    )
    await waitUntil(
      "the dead versions reclaimed",
      async () => (await deadRowsOfOutbox(akter)) < VACUUM_DEAD_ROWS,
      { timeoutMs: 10_000 },
    )
  }, 40_000)

  it("is analyzed by a working runner once its changed rows pass the threshold", async () => {
    const changedRows = async () => (await activityOfOutbox(akter)).changedRows
    // Inserted and deleted: twice as many changes, and too few dead versions for a vacuum.
    await leaveDeadTimers(akter, ANALYZE_CHANGED_ROWS)
    await waitUntil(
      "the changes counted",
      async () => (await changedRows()) >= 2 * ANALYZE_CHANGED_ROWS,
      { timeoutMs: 10_000 },
    )
    const before = await upkeepOfOutbox(akter)
    await whileARunnerWorks(
      "an analyze of the outbox",
      async () => (await upkeepOfOutbox(akter)).analyzes > before.analyzes,
    )
    expect((await upkeepOfOutbox(akter)).vacuums).toBe(before.vacuums)
    expect(await changedRows()).toBeLessThan(ANALYZE_CHANGED_ROWS)
  }, 40_000)
})

it("vacuums past 5,000 dead versions and a fifth of the live rows (the outbox past 5,000), analyzes past 1,000 changed rows and a tenth", () => {
  const table = (liveRows: number, deadRows: number, changedRows: number) =>
    upkeepDue({ table: "t", liveRows, deadRows, changedRows })
  expect(table(0, 4_999, 999)).toEqual({ vacuum: false, analyze: false })
  expect(table(0, 5_000, 1_000)).toEqual({ vacuum: true, analyze: true })
  expect(table(100_000, 24_999, 10_999)).toEqual({ vacuum: false, analyze: false })
  expect(table(100_000, 25_000, 11_000)).toEqual({ vacuum: true, analyze: true })
  expect(table(100_000, 0, 11_000)).toEqual({ vacuum: false, analyze: true })
  // The claim scans the outbox's dead versions, however many timers are asleep in it.
  expect(
    upkeepDue({ table: "outbox", liveRows: 100_000, deadRows: 5_000, changedRows: 0 }),
  ).toEqual({ vacuum: true, analyze: false })
})
