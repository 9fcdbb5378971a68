/**
 * Timers a runner fires from memory (runtime/runner/localTimers.ts), on PGlite and on Postgres: a
 * short sleep a runner parked wakes on time with no poll to bring it; a kept timer is claimed by
 * the poll's own claim at its due time, and only when it is still due (a second claim that took it
 * first wins, and the row shows one claim); a drained runner's kept timers are fired by the runner
 * that takes its buckets, each sleep settled and each execution finished once, as the write-audit
 * triggers saw it. A pass parked on a short sleep waits in memory (engine/pass.ts `Residency`): its
 * suspend is written, it holds no slot, and it resumes where it parked with no claim and no replay;
 * a claim of its timer (an interrupt, an emit its wait reads) resumes it too, and one parked on a
 * wait alone ends after `EVENT_WAIT_MS`. (A runner killed with SIGKILL while keeping timers:
 * test/crash/localTimersKill.)
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { implementWorkflow, makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import {
  armTimerPart,
  claimDue,
  claimDueTimers,
  type ClaimedRow,
} from "../../runtime/outbox/outboxStore.js"
import { placeOwner, type OwnerPlacement } from "../../runtime/owners/routing.js"
import { LOCAL_TIMER_HORIZON_MS, LocalTimers } from "../../runtime/runner/localTimers.js"
import { localNow } from "../../runtime/storage/clock.js"
import { EVENT_WAIT_MS } from "../../runtime/runner/livePasses.js"
import { startRunner } from "../../runtime/runner/runner.js"
import { composeStatement } from "../../runtime/storage/statementParts.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import {
  installSettleAudit,
  readWriteAudit,
  settledThenFinished,
  settlesOf,
} from "../support/writeAudit.js"
import { sleep, waitUntil } from "../support/waitUntil.js"
import { claimsOf, installClaimAudit } from "../support/claimAudit.js"
import { executionStatusOf, waitUntilSuspended } from "../support/executionStatus.js"
import { withRunner } from "../support/withRunner.js"

const registration = await registrationFromYaml(
  `
akter: 1
owner: Napper
events:
  Ping: { n: integer }
workflows:
  nap:
    input: { ms: integer }
    output: { key: string }
    steps:
      nap: { kind: sleep }
      after: { kind: activity, output: { key: string } }
  listen:
    output: { n: integer }
    steps:
      ping: { kind: wait, event: Ping }
`,
  "manifests/napper.yaml",
)

/** No fallback poll within a test: only a kept timer (or a lease change) brings a due timer. */
const NO_POLL_MS = 600_000
const RECOVERY_MS = 60_000

describeEachBackend("timers a runner fires from memory", (backend) => {
  let akter: TestAkter
  /** Local times the body reached the sleep and passed it, first time only; `after`'s runs. */
  const sleptAt = new Map<string, number>()
  const wokeAt = new Map<string, number>()
  const afterRuns = new Map<string, number>()
  /** How many times a pass ran the body from its start: one per pass that replays. */
  const bodyRuns = new Map<string, number>()

  const nap = implementWorkflow(registration, "nap", {
    activities: {
      after: async (ctx: { executionId: string }) => {
        afterRuns.set(ctx.executionId, (afterRuns.get(ctx.executionId) ?? 0) + 1)
        return { key: ctx.executionId }
      },
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (input: { ms: number }, wf: any) =>
      Effect.gen(function* () {
        const id = wf.executionId as string
        yield* Effect.sync(() => void bodyRuns.set(id, (bodyRuns.get(id) ?? 0) + 1))
        yield* Effect.sync(() => void (sleptAt.has(id) || sleptAt.set(id, Date.now())))
        yield* wf.nap(input.ms) as Effect.Effect<void>
        yield* Effect.sync(() => void (wokeAt.has(id) || wokeAt.set(id, Date.now())))
        return (yield* wf.after() as Effect.Effect<{ key: string }>) as { key: string }
      }),
  })

  beforeAll(async () => {
    akter = await openTestAkter(backend)
    await installSettleAudit(internalsOf(akter).storage.db)
  })

  afterAll(() => akter?.close())

  const db = () => internalsOf(akter).storage.db
  const clock = () => internalsOf(akter).clock
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = () => makeOwnerClient<any>(akter, registration)
  const dbNow = async () => {
    const { rows } = await sql<{ now: number }>`
      SELECT akter.now_ms(${clock().offsetMs}::bigint) AS now`.execute(db())
    return Number(rows[0]!.now)
  }
  const timerOf = (id: string) =>
    db()
      .selectFrom("akter.outbox")
      .select(["due_at_ms", "attempts"])
      .where("kind", "=", "timer")
      .where("id", "=", id)
      .executeTakeFirst()
  it("wakes a short sleep its runner parked on time, with no poll to bring it", async () => {
    await withRunner({ akter, workflows: [nap], pollMs: NO_POLL_MS }, async () => {
      const run = await client().nap.start(`o-${randomUUID().slice(0, 8)}`, { ms: 300 })
      const result = await run.result({ timeout: "20 seconds" })
      expect(result).toEqual({ _tag: "Success", value: { key: run.executionId } })
      const late = wokeAt.get(run.executionId)! - sleptAt.get(run.executionId)! - 300
      expect(late).toBeGreaterThanOrEqual(0)
      // A poll would come a fallback interval (10 minutes) later; a loaded machine gets latitude.
      expect(late).toBeLessThan(1_000)
      const audit = await readWriteAudit(db())
      expect(settledThenFinished(["nap#1", "after#1"])).toContainEqual(
        settlesOf(audit, run.executionId),
      )
      expect(audit.duplicateFinishes).toEqual([])
      expect(await timerOf(run.executionId)).toBeUndefined()
    })
  })

  it("resumes a pass parked on a short sleep in memory: suspend written, no slot held, no claim, no replay", async () => {
    await withRunner({ akter, workflows: [nap], pollMs: NO_POLL_MS }, async (runner) => {
      const run = await client().nap.start(`o-${randomUUID().slice(0, 8)}`, { ms: 1_200 })
      const id = run.executionId as string
      // While it waits, the database holds the suspend, as for any parked execution: a crash now
      // loses nothing (test/crash/localTimersKill), and the pass takes no slot.
      await waitUntilSuspended(db(), id)
      const armed = await timerOf(id)
      expect(armed?.attempts).toBe(0)
      expect(Number(armed?.due_at_ms)).toBeGreaterThan(await dbNow())
      expect(runner.live).toBe(0)
      const result = await run.result({ timeout: "20 seconds" })
      expect(result).toEqual({ _tag: "Success", value: { key: id } })
      // One pass ran the body from its start: the wake resumed it where it parked.
      expect(bodyRuns.get(id)).toBe(1)
      expect(afterRuns.get(id)).toBe(1)
      const late = wokeAt.get(id)! - sleptAt.get(id)! - 1_200
      expect(late).toBeGreaterThanOrEqual(0)
      const audit = await readWriteAudit(db())
      expect(settledThenFinished(["nap#1", "after#1"])).toContainEqual(settlesOf(audit, id))
      expect(audit.duplicateFinishes).toEqual([])
      const napSettle = audit.settles.find((s) => s.step === "nap" && s.executionId === id)!
      expect(napSettle.atMs).toBeGreaterThanOrEqual(Number(armed!.due_at_ms))
      expect(await timerOf(id)).toBeUndefined()
    })
  })

  it("resumes a waiting pass for the claim an interrupt makes: it records the interrupt, the sleep never settles", async () => {
    await withRunner({ akter, workflows: [nap], pollMs: NO_POLL_MS }, async () => {
      const run = await client().nap.start(`o-${randomUUID().slice(0, 8)}`, { ms: 5_000 })
      const id = run.executionId as string
      await waitUntilSuspended(db(), id)
      const askedAt = Date.now()
      await run.interrupt()
      const result = await run.result({ timeout: "20 seconds" })
      expect(result).toMatchObject({ _tag: "Interrupted" })
      // Well before the sleep was due: the interrupt's claim resumed the waiting pass.
      expect(Date.now() - askedAt).toBeLessThan(4_000)
      // The waiting pass itself recorded the interrupt: the body ran from its start once.
      expect(bodyRuns.get(id)).toBe(1)
      expect(wokeAt.has(id)).toBe(false)
      expect(afterRuns.has(id)).toBe(false)
      const audit = await readWriteAudit(db())
      expect(audit.settles.filter((s) => s.executionId === id)).toEqual([])
      expect(audit.duplicateFinishes).toEqual([])
    })
  })

  const listenRuns = new Map<string, number>()
  const listen = implementWorkflow(registration, "listen", {
    activities: {},
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (_: undefined, wf: any) =>
      Effect.gen(function* () {
        const id = wf.executionId as string
        yield* Effect.sync(() => void listenRuns.set(id, (listenRuns.get(id) ?? 0) + 1))
        const ping = (yield* wf.ping() as Effect.Effect<{ n: number }>) as { n: number }
        return { n: ping.n }
      }),
  })

  it("resumes a pass waiting in memory for an event when an emit of its process commits: no claim, one body run", async () => {
    await installClaimAudit(db())
    await withRunner({ akter, workflows: [nap, listen], pollMs: NO_POLL_MS }, async (runner) => {
      const owner = `o-${randomUUID().slice(0, 8)}`
      const run = await client().listen.start(owner)
      const id = run.executionId as string
      await waitUntilSuspended(db(), id)
      // Parked on an event alone: the suspend removed the timer; the pass holds no slot.
      expect(await timerOf(id)).toBeUndefined()
      expect(runner.live).toBe(0)
      const claimsBefore = await claimsOf(db(), id)
      await client().emit(owner, "Ping", { n: 7 })
      expect(await run.result({ timeout: "20 seconds" })).toEqual({
        _tag: "Success",
        value: { n: 7 },
      })
      // The emit handed its poke to the waiting pass: its timer, due from the emit's commit until
      // the finish deleted it, was never claimed.
      expect(await claimsOf(db(), id)).toBe(claimsBefore)
      expect(await timerOf(id)).toBeUndefined()
      expect(listenRuns.get(id)).toBe(1)
      const audit = await readWriteAudit(db())
      expect(settledThenFinished(["ping#1"])).toContainEqual(settlesOf(audit, id))
      expect(audit.duplicateFinishes).toEqual([])
    })
  })

  it("ends a pass that waited in memory for an event past EVENT_WAIT_MS; the event's claim replays it", async () => {
    await withRunner({ akter, workflows: [nap, listen], pollMs: NO_POLL_MS }, async (runner) => {
      const owner = `o-${randomUUID().slice(0, 8)}`
      const run = await client().listen.start(owner)
      const id = run.executionId as string
      await waitUntilSuspended(db(), id)
      await sleep(EVENT_WAIT_MS + 500)
      await client().emit(owner, "Ping", { n: 8 })
      expect(await run.result({ timeout: "20 seconds" })).toEqual({
        _tag: "Success",
        value: { n: 8 },
      })
      // The pass that waited ended after EVENT_WAIT_MS; the emit's claim started a new one.
      expect(listenRuns.get(id)).toBe(2)
      expect(runner.live).toBe(0)
    })
  }, 30_000)

  /** An owner whose bucket no other test uses, and its timer armed `offsetMs` from now. */
  const usedBuckets = new Set<number>()
  const armedTimer = async (offsetMs: number) => {
    let owner: OwnerPlacement
    do {
      owner = placeOwner({ tenant: "default", ownerType: "Probe", ownerId: randomUUID() })
    } while (usedBuckets.has(owner.bucket))
    usedBuckets.add(owner.bucket)
    const id = `timer-${randomUUID().slice(0, 8)}`
    const due = (await dbNow()) + offsetMs
    await composeStatement(
      [armTimerPart(clock(), owner, id, due, { when: sql`true` })],
      sql`true AS armed`,
    ).execute(db())
    return { owner, id, due }
  }
  const localTimers = (held: ReadonlySet<number>) => {
    const dispatched: { row: ClaimedRow; at: number }[] = []
    let unclaimed = 0
    const timers = new LocalTimers({
      holds: (bucket) => held.has(bucket),
      leaseValidUntil: () => Date.now() + 30_000,
      free: () => 8,
      claim: (due) => claimDueTimers(db(), clock(), due, [...held], RECOVERY_MS),
      dispatch: (row) => dispatched.push({ row, at: Date.now() }),
      unclaimed: () => void unclaimed++,
      track: () => {},
    })
    return { timers, dispatched, unclaimed: () => unclaimed }
  }
  /** The local time a database due time falls at, as a runner computes it. */
  /**
   * The local time at which the database's clock reads `due`: its clock read first, the local one
   * after, so a slow read makes the estimate late, never early (read the other way round, a read
   * that took long under load made a kept timer fire before its row was due, and its claim find
   * nothing).
   */
  const localDue = async (due: number) => {
    const databaseNow = await dbNow()
    return localNow() + (due - databaseNow)
  }

  it("claims a kept timer at its due time, by the poll's claim, and runs nothing early", async () => {
    const { owner, id, due } = await armedTimer(400)
    const { timers, dispatched } = localTimers(new Set([owner.bucket]))
    expect(timers.keep(owner, id, await localDue(due))).toBe(true)
    await sleep(150)
    expect(dispatched).toEqual([])
    expect(await timerOf(id)).toEqual({ due_at_ms: due, attempts: 0 })
    await waitUntil("the kept timer fires", () => dispatched.length === 1, { timeoutMs: 10_000 })
    const { row } = dispatched[0]!
    expect(row).toMatchObject({ id, kind: "timer", bucket: owner.bucket, attempts: 1 })
    expect(row.lagMs).toBeGreaterThanOrEqual(0)
    // The claim moved it a recovery interval ahead, as a poll's claim does.
    expect(row.claimedDueAtMs).toBeGreaterThanOrEqual(due + RECOVERY_MS)
    expect(await timerOf(id)).toEqual({ due_at_ms: row.claimedDueAtMs, attempts: 1 })
    timers.stop()
  })

  it("keeps no timer beyond the horizon or of a bucket it does not lease, and drops a lost bucket's", async () => {
    const far = await armedTimer(LOCAL_TIMER_HORIZON_MS + 60_000)
    const unleased = await armedTimer(50)
    const lost = await armedTimer(200)
    const { timers, dispatched } = localTimers(new Set([far.owner.bucket, lost.owner.bucket]))
    expect(timers.keep(far.owner, far.id, await localDue(far.due))).toBe(false)
    expect(timers.keep(unleased.owner, unleased.id, await localDue(unleased.due))).toBe(false)
    expect(timers.keep(lost.owner, lost.id, await localDue(lost.due))).toBe(true)
    timers.leasesLost([lost.owner.bucket])
    await sleep(600)
    expect(dispatched).toEqual([])
    // Each row keeps its persisted due time for whoever claims it by the poll.
    expect(await timerOf(unleased.id)).toEqual({ due_at_ms: unleased.due, attempts: 0 })
    expect(await timerOf(lost.id)).toEqual({ due_at_ms: lost.due, attempts: 0 })
    timers.stop()
  })

  it("claims nothing, and asks the database nothing, for no named timer or no leased bucket", async () => {
    const { owner, id } = await armedTimer(-10)
    const named = [{ routingKey: owner.routingKey, executionId: id }]
    const { counters } = internalsOf(akter).storage
    const before = counters.statements
    expect(await claimDueTimers(db(), clock(), [], [owner.bucket], RECOVERY_MS)).toEqual([])
    expect(await claimDueTimers(db(), clock(), named, [], RECOVERY_MS)).toEqual([])
    expect(counters.statements - before).toBe(0)
    // The same timer, named with its bucket, is due and claimed: the empty answers above were not
    // for want of a due row.
    const claimed = await claimDueTimers(db(), clock(), named, [owner.bucket], RECOVERY_MS)
    expect(claimed.map((row) => row.id)).toEqual([id])
    expect(counters.statements - before).toBe(1)
  })

  it("claims nothing when a second runner's claim took the timer first; the row shows one claim", async () => {
    const { owner, id } = await armedTimer(-10)
    const { timers, dispatched, unclaimed } = localTimers(new Set([owner.bucket]))
    // Kept to fire a little later than the row is due; meanwhile another runner, which took the
    // bucket, claims it.
    expect(timers.keep(owner, id, Date.now() + 300)).toBe(true)
    const theirs = await claimDue(db(), clock(), [owner.bucket], [], 10, RECOVERY_MS)
    expect(theirs.map((row) => row.id)).toEqual([id])
    await waitUntil("the kept timer's claim comes back empty", () => unclaimed() === 1, {
      timeoutMs: 10_000,
    })
    expect(dispatched).toEqual([])
    expect(await timerOf(id)).toEqual({ due_at_ms: theirs[0]!.claimedDueAtMs, attempts: 1 })
    timers.stop()
  })

  it("leaves a drained runner's kept timers to the runner that takes its buckets: each sleep settled and each execution finished once", async () => {
    const first = await startRunner({ akter, workflows: [nap], pollMs: NO_POLL_MS })
    const runs = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        client().nap.start(`o-${i}-${randomUUID().slice(0, 8)}`, { ms: 1_500 }),
      ),
    )
    const ids = runs.map((run) => run.executionId as string)
    await waitUntil("every execution is parked on its sleep", async () => {
      for (const id of ids) if ((await executionStatusOf(db(), id)) !== "suspended") return false
      return first.live === 0
    })
    const dues = new Map<string, number>()
    for (const id of ids) dues.set(id, Number((await timerOf(id))!.due_at_ms))
    const second = await startRunner({ akter, workflows: [nap], pollMs: NO_POLL_MS })
    let firstOpen = true
    try {
      await first.close()
      firstOpen = false
      // Nothing of the kept timers was written back: the persisted due times stand.
      for (const id of ids) {
        expect(await timerOf(id)).toEqual({ due_at_ms: dues.get(id), attempts: 0 })
      }
      const results = await Promise.all(runs.map((run) => run.result({ timeout: "30 seconds" })))
      expect(results).toEqual(ids.map((key) => ({ _tag: "Success", value: { key } })))
      const audit = await readWriteAudit(db())
      for (const id of ids) {
        expect(settledThenFinished(["nap#1", "after#1"])).toContainEqual(settlesOf(audit, id))
      }
      expect(audit.duplicateSettles).toEqual([])
      expect(audit.duplicateFinishes).toEqual([])
      // Woken no earlier than due (the database's clock judged the claim).
      for (const settle of audit.settles.filter(
        (s) => s.step === "nap" && ids.includes(s.executionId),
      )) {
        expect(settle.atMs).toBeGreaterThanOrEqual(dues.get(settle.executionId)!)
      }
      for (const id of ids) {
        expect(afterRuns.get(id)).toBe(1)
        expect(await timerOf(id)).toBeUndefined()
      }
    } finally {
      if (firstOpen) await first.close()
      await second.close()
    }
  })
})
