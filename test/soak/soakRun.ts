/**
 * The soak: runner processes serve many executions while one random runner is killed with SIGKILL
 * (and, optionally, another paused past its lease with SIGSTOP) every few seconds and replaced.
 * Afterwards every result is checked against the one its input implies, and the database's audit
 * against the invariants: no step recorded twice, no exit rewritten, no write committed under a
 * stale generation, nothing left in `steps` or `outbox`. It also measures, for every activity
 * attempt a kill interrupted, the time from the kill to the attempt's rerun elsewhere.
 */
import { randomInt } from "node:crypto"
import { isDeepStrictEqual } from "node:util"
import { sql } from "kysely"
import { makeOwnerClient } from "../../runtime/index.js"
import {
  attemptKey,
  journalProblems,
  readJournal,
  type JournalEntry,
} from "../support/activityJournal.js"
import { limitConcurrency } from "../support/concurrencyLimit.js"
import { databaseNow } from "../support/leaseView.js"
import type { FleetRunner } from "../support/runnerFleet.js"
import { openScenario } from "../support/scenarioDatabase.js"
import { sleep, waitUntil } from "../support/waitUntil.js"
import { readWriteAudit, type WriteAudit } from "../support/writeAudit.js"
import { expectedOutcome, registration, type SoakInput } from "./soakApp.js"

export interface SoakOptions {
  readonly executions: number
  readonly owners: number
  readonly runners: number
  /** Starts are spread evenly over this long, so disruptions meet executions at every stage. */
  readonly startOverMs: number
  /** A disruption every `min..max` ms while executions are open. */
  readonly disruptEveryMs: readonly [min: number, max: number]
  readonly maxKills: number
  /** SIGSTOP a runner for 1.5 leases instead of killing it every `pauseEvery`-th disruption (0: never). */
  readonly pauseEvery: number
  /** No disruption starts after this long. */
  readonly disruptForMs: number
  /** Every execution must have finished this long after the last disruption. */
  readonly settleMs: number
  readonly leaseMs: number
  readonly recoveryMs: number
  /** Progress lines (e.g. `console.log`). */
  readonly progress?: (line: string) => void
}

export interface SoakReport {
  readonly executions: number
  readonly finished: number
  readonly kills: number
  readonly pauses: number
  readonly runnerProcesses: number
  /** Log lines "write refused under a stale generation", over every runner. */
  readonly staleRefusals: number
  /** Passes whose runner withheld a write itself, its lease having lapsed (before the fence). */
  readonly leaseWithheld: number
  /** Runner processes that exited without being killed, with the end of their output. */
  readonly unexpectedExits: readonly string[]
  /** Results that differ from what the input implies. */
  readonly wrongResults: readonly string[]
  readonly duplicateSettles: readonly string[]
  readonly overwrites: readonly string[]
  readonly fenceBreaches: readonly string[]
  readonly duplicateFinishes: readonly string[]
  /** Heartbeats, over every runner, that found leases lost or gave buckets back. */
  readonly leaseDisruptions: number
  /** Attempts that ran more often than once per disruption plus one, or under two keys. */
  readonly journalProblems: readonly string[]
  /** Activity attempts the database recorded as settled that no process journaled running. */
  readonly neverRan: readonly string[]
  readonly leftSteps: number
  readonly leftOutbox: number
  /** Per interrupted activity attempt: ms from the kill to its rerun in another process. */
  readonly resumeLatenciesMs: readonly number[]
  readonly resumeP50Ms: number | null
  readonly resumeP99Ms: number | null
  readonly durationMs: number
}

/**
 * Activity attempts whose exit was recorded but that no process ran (journalProblems sees only
 * attempts that ran). The last step's exit may travel with the finish instead of being recorded:
 * those are not checked here.
 */
const neverRan = (settles: WriteAudit["settles"], journal: readonly JournalEntry[]): string[] => {
  const ran = new Set(journal.map(attemptKey))
  return settles
    .filter((settle) => settle.kind === "activity")
    .map((settle) => attemptKey({ ...settle, execution: settle.executionId }))
    .filter((attempt) => !ran.has(attempt))
}

const percentile = (sorted: readonly number[], p: number): number | null =>
  sorted.length === 0
    ? null
    : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

interface Kill {
  readonly pid: number
  readonly at: number
}

/**
 * Runs one soak and reports; it throws only when the soak could not run (a runner would not start,
 * the database is unreachable), never for a broken invariant — those are in the report.
 *
 * @example
 * const report = await runSoak({ executions: 100, owners: 20, runners: 3, ... })
 * expect(report.duplicateSettles).toEqual([])
 */
export const runSoak = async (options: SoakOptions): Promise<SoakReport> => {
  const progress = options.progress ?? (() => {})
  const began = Date.now()
  const scenario = await openScenario()
  try {
    const fleet = scenario.fleet({
      app: "test/soak/soakApp.ts",
      args: [
        "--lease-ms",
        String(options.leaseMs),
        "--recovery-ms",
        String(options.recoveryMs),
        "--poll-ms",
        "50",
        "--pool-size",
        "4",
      ],
    })
    const serving = Array.from({ length: options.runners }, () => fleet.spawn())
    await Promise.all(serving.map((runner) => runner.runnerId(120_000)))
    // A loaded spare replaces each killed runner at once.
    let spare = fleet.spawn({ held: true })
    progress(`${options.runners} runners serving`)
    const serveFrom = Date.now()

    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const client = makeOwnerClient<any>(scenario.akter, registration)
    const inputs: SoakInput[] = Array.from({ length: options.executions }, (_, i) => ({
      i,
      napMs: randomInt(50, 600),
      workMs: randomInt(100, 1200),
    }))
    const ownerOf = (input: SoakInput) => `soak-${input.i % options.owners}`
    const startSlot = limitConcurrency(16)
    let open = options.executions
    const outcomes: Promise<Array<{ input: SoakInput; result: { _tag: string } }>> = Promise.all(
      inputs.map((input) =>
        startSlot(async () => {
          await sleep(serveFrom + (input.i * options.startOverMs) / options.executions - Date.now())
          const run = await client.mixed.start(ownerOf(input), input)
          return { input, run }
        }).then(async ({ input, run }) => {
          await sleep(randomInt(200, 3000))
          await client.emit(ownerOf(input), "Go", { i: input.i }, { commandId: `go-${input.i}` })
          const result: { _tag: string } = await run
            .result({ timeout: options.disruptForMs + options.settleMs })
            .catch((error: unknown) => ({ _tag: "NotFinished", reason: String(error) }))
          open -= 1
          return { input, result }
        }),
      ),
    )

    const kills: Kill[] = []
    let pauses = 0
    let disruptions = 0
    while (
      open > 0 &&
      kills.length < options.maxKills &&
      Date.now() - serveFrom < options.disruptForMs
    ) {
      await sleep(randomInt(options.disruptEveryMs[0], options.disruptEveryMs[1] + 1))
      if (open === 0) break
      // Disrupt a whole fleet: a replacement still starting up (slow on a loaded machine) is not
      // killed before it ever served.
      await waitUntil(
        "every runner serves",
        () => serving.every((runner) => runner.gone || runner.count("runner started") > 0),
        { timeoutMs: 120_000, details: fleet.outputs },
      )
      disruptions += 1
      const alive = serving.filter((runner) => !runner.gone)
      if (alive.length === 0) throw new Error(`every runner exited:\n${fleet.outputs()}`)
      const victim = alive[randomInt(0, alive.length)]!
      if (options.pauseEvery > 0 && disruptions % options.pauseEvery === 0) {
        // Paused past its lease: its buckets move, and whatever it had in flight must be refused.
        victim.child.process.kill("SIGSTOP")
        await sleep(Math.round(options.leaseMs * 1.5))
        victim.child.process.kill("SIGCONT")
        pauses += 1
        progress(`paused ${victim.name}; ${open} executions open`)
        continue
      }
      const at = Date.now()
      await victim.child.kill("SIGKILL")
      kills.push({ pid: victim.pid, at })
      serving.splice(serving.indexOf(victim), 1)
      spare.release()
      serving.push(spare)
      spare = fleet.spawn({ held: true })
      progress(`killed ${victim.name} (${kills.length}); ${open} executions open`)
    }
    progress(`disruptions over: ${kills.length} kills, ${pauses} pauses; ${open} executions open`)
    const settled = await outcomes

    const audit = await readWriteAudit(scenario.db)
    const wrongResults = settled
      .filter(
        ({ input, result }) =>
          !isDeepStrictEqual(result, { _tag: "Success", value: expectedOutcome(input) }),
      )
      .map(({ input, result }) => `execution ${input.i}: ${JSON.stringify(result)}`)
    const { rows: left } = await sql<{ steps: number; outbox: number }>`
      SELECT (SELECT count(*) FROM akter.steps WHERE kind <> 'version')::int AS steps,
             (SELECT count(*) FROM akter.outbox)::int AS outbox`.execute(scenario.db)

    // Resume latency: attempts a killed process was running (begun, not yet settled) at the kill.
    const skew = (await databaseNow(scenario.db)) - Date.now()
    const journal = readJournal(scenario.journal)
    const settledAt = new Map(
      audit.settles.map((settle) => [
        attemptKey({ ...settle, execution: settle.executionId }),
        settle.atMs - skew,
      ]),
    )
    const resumeLatenciesMs: number[] = []
    for (const kill of kills) {
      const interrupted = new Set(
        journal
          .filter((entry) => entry.pid === kill.pid && entry.at <= kill.at)
          .map(attemptKey)
          .filter((attempt) => (settledAt.get(attempt) ?? Number.POSITIVE_INFINITY) > kill.at),
      )
      for (const attempt of interrupted) {
        const rerun = journal.find(
          (entry) => attemptKey(entry) === attempt && entry.pid !== kill.pid && entry.at > kill.at,
        )
        if (rerun !== undefined) resumeLatenciesMs.push(rerun.at - kill.at)
      }
    }
    const sorted = [...resumeLatenciesMs].sort((a, b) => a - b)
    const runners: FleetRunner[] = [...fleet.runners]
    const killedPids = new Set(kills.map((kill) => kill.pid))
    const unexpectedExits = runners
      .filter((runner) => runner.gone && !killedPids.has(runner.pid))
      .map((runner) => `${runner.name}: ${runner.child.output().slice(-2000)}`)
    return {
      executions: options.executions,
      finished: settled.filter(({ result }) => result._tag === "Success").length,
      kills: kills.length,
      pauses,
      runnerProcesses: runners.filter((runner) => runner.count("runner started") > 0).length,
      staleRefusals: runners.reduce(
        (sum, runner) => sum + runner.count("write refused under a stale generation"),
        0,
      ),
      leaseWithheld: runners.reduce(
        (sum, runner) => sum + runner.count("write withheld: the bucket's lease lapsed"),
        0,
      ),
      unexpectedExits,
      wrongResults,
      duplicateSettles: audit.duplicateSettles,
      overwrites: audit.overwrites,
      fenceBreaches: audit.fenceBreaches,
      duplicateFinishes: audit.duplicateFinishes,
      // A rerun needs a disruption: a kill, a pause, or a heartbeat that lost or gave back buckets.
      journalProblems: journalProblems(journal, kills.length + pauses + fleet.leaseDisruptions()),
      leaseDisruptions: fleet.leaseDisruptions(),
      neverRan: neverRan(audit.settles, journal),
      leftSteps: left[0]!.steps,
      leftOutbox: left[0]!.outbox,
      resumeLatenciesMs,
      resumeP50Ms: percentile(sorted, 50),
      resumeP99Ms: percentile(sorted, 99),
      durationMs: Date.now() - began,
    }
  } finally {
    await scenario.close()
  }
}
