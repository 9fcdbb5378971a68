/**
 * The crash matrix: for every fault point, a runner process running the gauntlet (every step kind,
 * see gauntletApp.ts) kills itself with SIGKILL at that point — at the first hit, and for points a
 * run passes several times at a later one too — and a fresh runner takes over. Each case then
 * proves, from what Postgres committed: the workflow finished with the right result; every settled
 * step was recorded exactly once (a trigger logs each settle) and no exit was rewritten; no write
 * committed under a generation other than the current one; each activity attempt ran at least once
 * and at most twice (one kill), always under the same idempotency key; no step, timer or staged
 * start is left; the event the workflow waited for exists once and was the one it saw.
 *
 * Cases run a few at a time, each on its own database with its own two runner processes; the
 * replacement runner loads while the doomed one runs.
 */
import { mkdtempSync } from "node:fs"
import { isDeepStrictEqual } from "node:util"
import { tmpdir } from "node:os"
import path from "node:path"
import { sql } from "kysely"
import { afterAll, it, type ExpectStatic } from "vitest"
import { createAkter, internalsOf } from "../../runtime/akter.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { decodeExecutionId } from "../../runtime/model/executionId.js"
import { nextTickAfter, scheduleCommandId, timingOf } from "../../runtime/model/schedule.js"
import type { Db } from "../../runtime/storage/database.js"
import {
  attemptKey,
  journalProblems,
  readJournal,
  type JournalEntry,
} from "../support/activityJournal.js"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import { limitConcurrency } from "../support/concurrencyLimit.js"
import { startFleet } from "../support/runnerFleet.js"
import { waitUntil } from "../support/waitUntil.js"
import {
  installWriteAudit,
  readWriteAudit,
  settledThenFinished,
  settlesOf,
} from "../support/writeAudit.js"
import { registration } from "./gauntletApp.js"

/** A fault point and the hit of it at which the runner dies. */
type FaultCase = readonly [point: string, hit: number]

const both = (name: string, ...hits: number[]): FaultCase[] =>
  hits.flatMap((hit): FaultCase[] => [
    [`${name}.before`, hit],
    [`${name}.after`, hit],
  ])

/**
 * The points, each at its first hit, and where a run passes a point several times at a later hit
 * too. As the runner starts, the schedule's tick starts `tock` (`schedule` 1; its start rides on
 * `tock`'s first write, `pending` 1 or 2 and `start` 1) while `run` begins. By the gauntlet's order
 * of writes after that, `pending` 5 is the retried attempt of `flaky`, `wait` 3 the race's losing
 * wait, `park` 3 the retry's durable backoff, `start` 2 the start of `victim` inside an activity;
 * `finish` 1 to 5 are the five executions that finish outside a concurrency group (`leaf` and the
 * heir finish at `admit`): `tock` first, then (by timing) `victim` interrupted by its client,
 * `run`, the orphan its end interrupts and `expiring`; `deadline` 1 is the firing of `expiring`'s
 * deadline (`.before`: nothing of the interruption recorded yet; `.after`: its result committed),
 * `activate` 3 the third owner; `settle` 1 carries the first activity's result, `settle` 3 the
 * sleep's as its pass resumes, `settle` 6 the race's winner; `lease` 2 is a heartbeat mid-run,
 * `claim` 10 a poll mid-run. Timing can move which write a later hit lands on; every such write
 * must be safe to die at, and a case whose hit never comes fails (the runner must die). Step kinds
 * meet the points as follows: activities at `pending` and `settle` (and the client points inside
 * them), the sleep at `sleep`, `park` and `settle`, the waits at `wait`, `timeout`, `park` and
 * `settle`, the race at `settle` (its winner is recorded with the next write), the start steps at
 * `start-step` and `relay`, the awaiting one also at `settle` (its child's result) and its child's
 * finish (which wakes the run), the run's end at `children` (the sweep that interrupts the orphan),
 * and the finishes of `leaf` (a workflow with a concurrency key) at `admit`: before its
 * transaction, holding its group's lock with nothing written (`admit.locked`), and after it
 * committed. The schedule's tick meets `schedule`: decided under the runner's claim with nothing
 * started (`.before`), and its execution committed before the schedule's cursor moved (`.after`).
 */
const FAULT_CASES: readonly FaultCase[] = [
  ...both("pending", 1, 5),
  ...both("sleep", 1),
  ...both("wait", 1, 3),
  ...both("timeout", 1),
  ...both("start-step", 1),
  ...both("settle", 1, 3, 6),
  ...both("park", 1, 3),
  ...both("finish", 1, 2, 3, 4, 5),
  ...both("admit", 1),
  ["admit.locked", 1],
  ...both("claim", 1),
  ["claim.after", 10],
  ...both("activate", 1),
  ["activate.after", 3],
  ...both("lease", 1),
  ["lease.after", 2],
  ...both("relay", 1),
  ...both("start", 1, 2),
  ...both("emit", 1),
  ...both("interrupt", 1),
  ...both("deadline", 1),
  ...both("children", 1),
  ...both("schedule", 1),
]

/**
 * Short intervals so a kill costs a few seconds, and a lease long enough that a loaded machine's
 * late heartbeat rarely lets it lapse. NOTIFY wakes runners for new work and a suspending pass
 * schedules its own next poll, so the fallback poll can be slow (and cheap: dozens of runners
 * polling every few milliseconds would load a small machine). Waits are generous and polled.
 */
const RUNNER_ARGS = ["--lease-ms", "3000", "--recovery-ms", "1000", "--poll-ms", "250"]
const RUNNER_ARGS_POOL = ["--pool-size", "3"]
const SEED = 21

/** Every attempt the gauntlet's activities make, by workflow: none more, none fewer. */
const EXPECTED_ATTEMPTS = {
  run: ["prepare#1", "quick#1", "flaky#1", "flaky#2", "launch#1", "total#1"],
  leaf: ["double#1"],
  /**
   * Booked, then unbooked once by the compensation its deadline runs — or neither, when a kill
   * delayed its first pass past its deadline (a pass that starts interrupting does no new work), or
   * booked only, when the kill came after `book` ran and before its result was recorded: the pass
   * that replays it after the deadline interrupts instead of running it again, and with its result
   * unknown no compensation is registered (see `expiringAttempts`).
   */
  expiring: ["book#1", "unbook#1"],
  tock: ["chime#1"],
} as const
/**
 * The attempts `expiring` must have made, given what it settled and what its journal shows: once
 * `book`'s result is recorded, both (its deadline's compensation unbooks); with nothing recorded, a
 * prefix of them — none (the kill delayed its first pass past its deadline), `book` alone (the
 * kill lost its result, and the replay after the deadline interrupts rather than rerun it), or both
 * (the kill lost both results) — whichever the journal shows, and nothing else.
 */
const expiringAttemptsAllowed = (
  settled: readonly string[],
  entries: readonly JournalEntry[],
  expiring: string,
): readonly string[] => {
  const all = EXPECTED_ATTEMPTS.expiring
  if (settled.length > 0) return all
  const ran = [
    ...new Set(
      entries
        .map(attemptKey)
        .filter((key) => key.startsWith(`${expiring} `))
        .map((key) => key.slice(expiring.length + 1)),
    ),
  ].sort()
  const prefixes = all.map((_, length) => all.slice(0, length)).concat([[...all]])
  return prefixes.find((prefix) => isDeepStrictEqual([...prefix].sort(), ran)) ?? all
}

/**
 * The schedule `chimes` ticks every ten years; each case's database starts with its row as a fleet
 * that was down over its latest tick would have left it: that tick undecided. The first runner to
 * tick it starts `tock` for that tick, and no other tick falls in a run.
 */
const CHIMES = registration.canonical.schedules!["chimes"]!
const CHIME_TICK = nextTickAfter(CHIMES, Date.now())! - CHIMES.everyMs!
/** The ids of the executions the run starts, by what it calls them. */
type Started = { spawned: string; heir: string; orphan: string; victim: string }
/**
 * Every step `run` settles, in the body's order — the race's losing wait never does. The last
 * one's exit may travel with the finish and then shows as the result, not as a step settle.
 */
const EXPECTED_SETTLES = [
  "prepare#1",
  "ready#1",
  "nap#1",
  "quiet#1",
  "quick#1",
  "first#1",
  "flaky#1",
  "flaky#2",
  "spawn#1",
  "adopt#1",
  "orphan#1",
  "launch#1",
  "total#1",
]

let lastLeftovers: unknown
/** Open executions and outbox rows: after the run, there must be none. */
const leftovers = async (db: Db) => {
  const open = await db
    .selectFrom("akter.executions")
    .select(["execution_id", "workflow", "status", "interrupt"])
    .where("status", "<>", "finished")
    .execute()
  const outbox = await db
    .selectFrom("akter.outbox")
    .select(["kind", "id", "due_at_ms", "attempts"])
    .execute()
  lastLeftovers = { open, outbox }
  return { open, outbox }
}

const journalFolder = mkdtempSync(path.join(tmpdir(), "akter-matrix-"))
const timings: string[] = []

const runCase = async ([point, hit]: FaultCase, expect: ExpectStatic) => {
  const database = await createPostgresDatabase()
  const akter = await createAkter({ databaseUrl: database.url, poolSize: 3 })
  const journal = path.join(journalFolder, `${point}-${hit}.jsonl`)
  const fleet = startFleet({
    app: "test/crash/gauntletApp.ts",
    databaseUrl: database.url,
    args: [...RUNNER_ARGS, ...RUNNER_ARGS_POOL],
    env: { ACTIVITY_JOURNAL: journal },
  })
  const db = internalsOf(akter).storage.db
  try {
    await installWriteAudit(database.url)
    await db
      .insertInto("akter.schedules")
      .values({
        owner_type: "Gauntlet",
        schedule: "chimes",
        definition: timingOf(CHIMES),
        next_tick_ms: CHIME_TICK,
        queued_tick_ms: null,
        last_execution_id: null,
        last_tick_ms: null,
        claimed_by: null,
        updated_at_ms: CHIME_TICK,
      })
      .execute()
    const replacement = fleet.spawn({ held: true })
    const doomed = fleet.spawn({ faults: `${point}:${hit}` })
    const ownerId = `gauntlet-${point}-${hit}`
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const client = makeOwnerClient<any>(akter, registration)
    const started = Date.now()
    const run = await client.run.start(ownerId, { seed: SEED })

    // Loading a runner can take long on a loaded machine; reaching the point after that cannot.
    await waitUntil(
      "the doomed runner starts serving (or dies first)",
      () => doomed.gone || doomed.count("runner started") > 0,
      { timeoutMs: 240_000 },
    )
    const exit = await waitUntil(
      `the runner reaches ${point} hit ${hit} and dies`,
      () => (doomed.gone ? doomed.child.exited : undefined),
      { timeoutMs: 90_000 },
    )
    expect(exit, fleet.outputs()).toEqual({ code: null, signal: "SIGKILL" })
    expect(doomed.child.output()).toContain(`akter fault: killing process at ${point} hit ${hit}`)
    const killedAt = Date.now()
    replacement.release()

    const result = await run.result({ timeout: "120 seconds" })
    // A runner that died holding the schedule's claim leaves the tick to whoever claims it after
    // the claim lapses (a lease length, 3 s here): the tick is decided once its cursor has moved
    // past it.
    const chimes = await waitUntil(
      "the schedule's tick is decided and its claim released",
      async () => {
        const row = await db
          .selectFrom("akter.schedules")
          .selectAll()
          .where("schedule", "=", "chimes")
          .executeTakeFirstOrThrow()
        return Number(row.next_tick_ms) > CHIME_TICK && row.claimed_by === null ? row : undefined
      },
      { timeoutMs: 90_000 },
    )
    await waitUntil(
      "every execution finishes and leaves no timer or staged start",
      async () => {
        const left = await leftovers(db)
        return left.open.length === 0 && left.outbox.length === 0 ? true : undefined
      },
      { timeoutMs: 60_000, details: () => JSON.stringify(lastLeftovers) },
    )
    timings.push(
      `${`${point}:${hit}`.padEnd(20)} killed ${killedAt - started} ms after start, finished ${Date.now() - killedAt} ms after the kill`,
    )

    // The right result, and the executions it names with theirs.
    expect(result, fleet.outputs()).toEqual({
      _tag: "Success",
      value: {
        ready: SEED * 2,
        timedOut: true,
        winner: "quick",
        flakyAttempt: 2,
        spawned: expect.any(String),
        heir: 10,
        orphan: expect.any(String),
        victim: expect.any(String),
        expiring: expect.any(String),
        total: SEED * 2 + 2,
      },
    })
    const { spawned, victim, orphan, expiring } = (
      result as { value: Omit<Started, "heir"> & { expiring: string } }
    ).value
    const [heir] = await db
      .selectFrom("akter.executions")
      .select("execution_id")
      .where("parent_execution_id", "=", run.executionId)
      .where("parent_step", "=", "adopt")
      .execute()
    const heirId = heir!.execution_id
    expect(decodeExecutionId(spawned)).toMatchObject({
      ownerType: "Gauntlet",
      ownerId: `${ownerId}-leaf`,
      workflow: "leaf",
    })
    expect(decodeExecutionId(victim)).toMatchObject({
      ownerType: "Gauntlet",
      ownerId: `${ownerId}-victim`,
      workflow: "victim",
    })
    expect(await client.leaf.attach(spawned).result()).toEqual({
      _tag: "Success",
      value: { doubled: SEED * 4 },
    })
    expect(await client.leaf.attach(heirId).result()).toEqual({
      _tag: "Success",
      value: { doubled: 10 },
    })
    expect(await client.victim.attach(victim).result()).toEqual({
      _tag: "Interrupted",
      cause: "request",
    })
    expect(await client.expiring.attach(expiring).result()).toEqual({
      _tag: "Interrupted",
      cause: "deadline",
    })
    // The run's end reached the child it takes down with it.
    expect(await client.victim.attach(orphan).result()).toEqual({
      _tag: "Interrupted",
      cause: "request",
    })
    // The tick started one execution, keyed by the tick, and the schedule's row names it.
    const tocks = await db
      .selectFrom("akter.executions")
      .select(["execution_id", "execution_key"])
      .where("workflow", "=", "tock")
      .execute()
    expect(tocks).toEqual([
      { execution_id: expect.any(String), execution_key: scheduleCommandId("chimes", CHIME_TICK) },
    ])
    const tock = tocks[0]!.execution_id
    expect(chimes).toMatchObject({
      next_tick_ms: CHIME_TICK + CHIMES.everyMs!,
      last_tick_ms: CHIME_TICK,
      last_execution_id: tock,
      queued_tick_ms: null,
    })
    expect(await client.tock.attach(tock).result()).toEqual({ _tag: "Success", value: undefined })
    const executions = await db
      .selectFrom("akter.executions")
      .select(["execution_id", "status"])
      .orderBy("execution_id")
      .execute()
    expect(executions).toEqual(
      [run.executionId, spawned, heirId, orphan, victim, expiring, tock]
        .sort()
        .map((id) => ({ execution_id: id, status: "finished" })),
    )

    // Every settle once, no exit rewritten, nothing committed under a stale generation.
    const audit = await readWriteAudit(db)
    expect(audit.duplicateSettles).toEqual([])
    expect(audit.overwrites).toEqual([])
    expect(audit.fenceBreaches).toEqual([])
    expect(audit.duplicateFinishes).toEqual([])
    expect(audit.finishes).toBe(executions.length)
    // Several settles can share a statement, so their order is not compared.
    expect(settledThenFinished(EXPECTED_SETTLES).map((allowed) => allowed.sort())).toContainEqual(
      settlesOf(audit, run.executionId).sort(),
    )
    expect(settledThenFinished(["double#1"])).toContainEqual(settlesOf(audit, spawned))
    expect(settledThenFinished(["double#1"])).toContainEqual(settlesOf(audit, heirId))
    expect(settlesOf(audit, victim)).toEqual([])
    expect(settlesOf(audit, orphan)).toEqual([])
    expect(settledThenFinished(EXPECTED_ATTEMPTS.tock)).toContainEqual(settlesOf(audit, tock))
    expect([[], ...settledThenFinished(EXPECTED_ATTEMPTS.expiring)]).toContainEqual(
      settlesOf(audit, expiring),
    )

    // Each attempt at least once, at most once more than there were disruptions (the kill, and any
    // heartbeat that found its leases lapsed on a loaded machine), under one key.
    const entries = readJournal(journal)
    expect(journalProblems(entries, 1 + fleet.leaseDisruptions())).toEqual([])
    const ran = new Set(entries.map(attemptKey))
    const expiringAttempts = expiringAttemptsAllowed(settlesOf(audit, expiring), entries, expiring)
    expect([...ran].sort()).toEqual(
      [
        ...EXPECTED_ATTEMPTS.run.map((attempt) => `${run.executionId} ${attempt}`),
        ...EXPECTED_ATTEMPTS.leaf.map((attempt) => `${spawned} ${attempt}`),
        ...EXPECTED_ATTEMPTS.leaf.map((attempt) => `${heirId} ${attempt}`),
        ...EXPECTED_ATTEMPTS.tock.map((attempt) => `${tock} ${attempt}`),
        ...expiringAttempts.map((attempt) => `${expiring} ${attempt}`),
      ].sort(),
    )

    // Nothing left behind, no event lost or doubled.
    const { rows: left } = await sql<{ steps: number; outbox: number }>`
      SELECT (SELECT count(*) FROM akter.steps)::int AS steps,
             (SELECT count(*) FROM akter.outbox)::int AS outbox`.execute(db)
    expect(left).toEqual([{ steps: 0, outbox: 0 }])
    const events = await db
      .selectFrom("akter.events")
      .select(["owner_id", "name", "sequence"])
      .orderBy("owner_id")
      .execute()
    expect(events).toEqual([{ owner_id: ownerId, name: "Ready", sequence: 1 }])
  } catch (error) {
    // The runners' logs say what the database alone cannot: who abandoned what, and why.
    if (error instanceof Error) error.message += `\n${fleet.outputs()}`
    throw error
  } finally {
    await fleet.stopAll()
    await akter.close()
    await database.drop()
  }
}

describePostgres("a runner killed at a fault point, then replaced", () => {
  const slot = limitConcurrency(4)

  afterAll(() => {
    if (timings.length > 0) console.log(`fault matrix:\n${timings.sort().join("\n")}`)
  })

  it.concurrent.for(FAULT_CASES)(
    "finishes the gauntlet with every step recorded once after a kill at %s hit %i",
    { timeout: 600_000 },
    (fault, { expect }) => slot(() => runCase(fault, expect)),
  )
})
