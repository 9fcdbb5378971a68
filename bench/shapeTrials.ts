/**
 * The shapes of `shapes.ts`, measured once for every system: a trial process builds a
 * `BenchSystem` (akter's in `akterTrial.ts`, the peers' in `peers/dbosTrial.ts` and
 * `peers/restateTrial.ts`) and hands it here, so every side is timed, counted and sampled by the
 * same code.
 */
import {
  scaled,
  SHAPES,
  type ShapeId,
  type System,
  type TrialRequest,
  type TrialResult,
} from "./shapes.js"
import type { StatementLog, StatementSummary } from "./statementLog.js"
import { percentile } from "./statistics.js"
import {
  forEachLimited,
  measureProcessWindow,
  measureWindow,
  profiled,
  settledMemory,
  sleep,
  until,
} from "./trialChild.js"

/** A started execution the shapes wait on. */
export interface Started {
  readonly id: string
  result(): Promise<void>
}

/**
 * Where a system keeps its durable state, which a measured window samples: the trial's Postgres
 * database (its backends' CPU, and every statement, counted by `statementLog`), or a server
 * process of the system's own (its CPU; Restate keeps its own log, so there is nothing to count).
 */
export type BenchStore =
  | { readonly kind: "postgres"; readonly statementLog: StatementLog }
  | { readonly kind: "server"; readonly pid: number }

/** One system under test, driven through the operations the shapes need. */
export interface BenchSystem {
  readonly system: System
  readonly store: BenchStore
  /** The system's own statement counters, when it has them (akter's `storage.counters`). */
  readonly ownCounters?: () => { readonly statements: number; readonly commits: number }
  /** Starts a workflow of `steps` sequential activities and awaits its (checked) result. */
  runSequential(steps: number, ownerId: string): Promise<void>
  /** Starts a workflow that waits for an event, then returns. */
  startWake(ownerId: string): Promise<Started>
  /** Whether the execution is parked on its wait, so an emit now must wake it. */
  isParked(started: Started): Promise<boolean>
  /** Delivers the event the `wake` workflow of `ownerId` waits for. */
  emit(ownerId: string, started: Started): Promise<void>
  /** Starts a workflow that sleeps once for `SHAPES.e.sleepMs`. */
  startNap(ownerId: string): Promise<Started>
  /** Starts a workflow that waits for an event that never comes. */
  startParked(ownerId: string): Promise<Started>
  /** How many `parked` executions are parked for good (nothing more will run until an event). */
  parkedCount(): Promise<number>
  /** Starts one workflow that starts `children` child workflows and awaits them all; awaits it. */
  runFanOut(children: number, ownerId: string): Promise<void>
}

/** When code inside bodies ran, by execution id. Bodies call `markOnce` (a replay never moves it). */
export const marks = {
  sleptAt: new Map<string, number>(),
  wokeAt: new Map<string, number>(),
}

export const markOnce = (map: Map<string, number>, id: string) => {
  if (!map.has(id)) map.set(id, performance.now())
}

/** What a window cost, on either kind of store. */
interface Cost {
  readonly wallMs: number
  readonly nodeCpuMs: number
  /** CPU of the store: Postgres's for the trial's database, or the system's server process. */
  readonly storeCpuMs: number
  readonly store: BenchStore["kind"]
  /** Statements sent to Postgres; undefined for a system with a store of its own. */
  readonly statements?: StatementSummary
}

/**
 * A window, plus the system's own counters over exactly the same work; `profile` puts the window
 * under the CPU profiler when the request asks for a profile.
 */
const measured = async <A>(
  request: TrialRequest,
  bench: BenchSystem,
  work: () => Promise<A>,
  profile = false,
): Promise<{ value: A; cost: Cost; own?: { statements: number; commits: number } }> => {
  const store = bench.store
  if (store.kind === "server") {
    const { value, cost } = await measureProcessWindow(store.pid, () =>
      profiled(profile ? request.profileFile : undefined, work),
    )
    return {
      value,
      cost: {
        wallMs: cost.wallMs,
        nodeCpuMs: cost.nodeCpuMs,
        storeCpuMs: cost.processCpuMs,
        store: store.kind,
      },
    }
  }
  let own: { statements: number; commits: number } | undefined
  const { value, cost } = await measureWindow(request.databaseUrl, store.statementLog, async () => {
    const counters = bench.ownCounters?.()
    const before = counters === undefined ? undefined : { ...counters }
    const value = await profiled(profile ? request.profileFile : undefined, work)
    const after = bench.ownCounters?.()
    if (before !== undefined && after !== undefined) {
      own = {
        statements: after.statements - before.statements,
        commits: after.commits - before.commits,
      }
    }
    return value
  })
  return {
    value,
    cost: {
      wallMs: cost.wallMs,
      nodeCpuMs: cost.nodeCpuMs,
      storeCpuMs: cost.postgresCpuMs,
      store: store.kind,
      statements: cost.statements,
    },
    ...(own === undefined ? {} : { own }),
  }
}

/** The statements of a window, for the shapes that count them (only Postgres stores have them). */
const statementsOf = (cost: Cost): StatementSummary => {
  if (cost.statements === undefined) throw new Error("this shape counts Postgres statements")
  return cost.statements
}

/**
 * Per-unit cost: Node CPU on every system; on Postgres its CPU and the statements, on a server
 * store (Restate) the server's CPU, and no statement figures (the run prints n/a).
 */
const perUnit = (cost: Cost, units: number): Record<string, number> => ({
  nodeCpuMsPer: cost.nodeCpuMs / units,
  ...(cost.statements === undefined
    ? { serverCpuMsPer: cost.storeCpuMs / units }
    : {
        postgresCpuMsPer: cost.storeCpuMs / units,
        statementsPer: cost.statements.statements / units,
        commitsPer: cost.statements.commits / units,
        writeCommitsPer: cost.statements.writeCommits / units,
        roundTripMsPer: cost.statements.ms / units,
      }),
})

const ownPerUnit = (own: { statements: number; commits: number } | undefined, units: number) =>
  own === undefined
    ? {}
    : { ownStatementsPer: own.statements / units, ownCommitsPer: own.commits / units }

const range = (count: number) => Array.from({ length: count }, (_, index) => index)

type ShapeTrial = (
  request: TrialRequest,
  bench: BenchSystem,
) => Promise<{
  metrics: Record<string, number>
  detail?: unknown
}>

/** The shapes every system runs through a `BenchSystem`; the akter-only ones have trial files. */
export type SharedShapeId = Exclude<ShapeId, "h" | "r">

const trials: Record<SharedShapeId, ShapeTrial> = {
  a: async (request, bench) => {
    const { workflows, warmup } = SHAPES.a
    const count = scaled(workflows, request.scale)
    for (const i of range(warmup)) await bench.runSequential(3, `a-warm-${i}`)
    const latencies: number[] = []
    const { cost, own } = await measured(
      request,
      bench,
      async () => {
        for (const i of range(count)) {
          const startedAt = performance.now()
          await bench.runSequential(3, `a-${i}`)
          latencies.push(performance.now() - startedAt)
        }
      },
      true,
    )
    return {
      metrics: {
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99),
        meanMs: latencies.reduce((a, b) => a + b, 0) / latencies.length,
        ...perUnit(cost, count),
        ...ownPerUnit(own, count),
      },
      detail: { cost },
    }
  },

  b: async (request, bench) => {
    const { workflows, concurrency, warmup } = SHAPES.b
    const count = scaled(workflows, request.scale)
    await forEachLimited(range(warmup), concurrency, (i) => bench.runSequential(3, `b-warm-${i}`))
    const { cost, own } = await measured(
      request,
      bench,
      () => forEachLimited(range(count), concurrency, (i) => bench.runSequential(3, `b-${i}`)),
      true,
    )
    const seconds = cost.wallMs / 1000
    return {
      metrics: {
        workflowsPerSecond: count / seconds,
        stepsPerSecond: (count * 3) / seconds,
        ...(cost.statements === undefined
          ? {}
          : {
              commitsPerSecond: cost.statements.commits / seconds,
              writeCommitsPerSecond: cost.statements.writeCommits / seconds,
            }),
        cpuCoresBusy: (cost.nodeCpuMs + cost.storeCpuMs) / cost.wallMs,
        ...perUnit(cost, count),
        ...ownPerUnit(own, count),
      },
      detail: { cost },
    }
  },

  c: async (request, bench) => {
    const { long, short, longRuns, shortRuns, warmup, warmupLong } = SHAPES.c
    // Both lengths untimed first, so no timed run pays for compiling the code it runs.
    for (const i of range(warmup)) await bench.runSequential(short, `c-warm-${i}`)
    for (const i of range(warmupLong)) await bench.runSequential(long, `c-warm-long-${i}`)
    const timed = async (steps: number, ownerId: string, profile = false) =>
      (await measured(request, bench, () => bench.runSequential(steps, ownerId), profile)).cost
    // A window in the middle of the long run: the statements of a few steps in steady state.
    const log = bench.store.kind === "postgres" ? bench.store.statementLog : undefined
    const traceStart = setTimeout(() => log?.startTrace(), 300)
    const traceStop = setTimeout(() => {
      steadyTrace = log?.stopTrace() ?? []
    }, 330)
    let steadyTrace: unknown[] = []
    const longCosts = [await timed(long, "c-long", true)]
    clearTimeout(traceStart)
    clearTimeout(traceStop)
    log?.stopTrace()
    for (const i of range(longRuns - 1)) longCosts.push(await timed(long, `c-long-${i + 1}`))
    // The run of median time speaks for all: its counts and CPU are one run's, not a mix.
    const longCost = [...longCosts].sort((x, y) => x.wallMs - y.wallMs)[
      Math.floor((longCosts.length - 1) / 2)
    ]!
    const shortWall: number[] = []
    for (const i of range(shortRuns)) shortWall.push((await timed(short, `c-short-${i}`)).wallMs)
    const shortMs = percentile(shortWall, 50)
    const msPerStepLong = longCost.wallMs / long
    const msPerStepShort = shortMs / short
    return {
      metrics: {
        msPerStepLong,
        msPerStepShort,
        longOverShort: msPerStepLong / msPerStepShort,
        marginalMsPerStep: (longCost.wallMs - shortMs) / (long - short),
        ...perUnit(longCost, long),
      },
      detail: { long: longCost, longWallMs: longCosts.map((cost) => cost.wallMs), steadyTrace },
    }
  },

  d: async (request, bench) => {
    const { samples, warmup } = SHAPES.d
    const count = scaled(samples, request.scale)
    let timeline: { wokeAtMs: number; statements: unknown[] } | undefined
    const log = bench.store.kind === "postgres" ? bench.store.statementLog : undefined
    const wakeOnce = async (ownerId: string, traced = false) => {
      const started = await bench.startWake(ownerId)
      await until("the wait to park", () => bench.isParked(started), 10_000)
      await sleep(20)
      if (traced) log?.startTrace()
      const emittedAt = performance.now()
      await bench.emit(ownerId, started)
      await until("the wait to wake", () => marks.wokeAt.has(started.id), 10_000, 0)
      const latency = marks.wokeAt.get(started.id)! - emittedAt
      if (traced && log !== undefined) {
        timeline = { wokeAtMs: latency, statements: log.stopTrace() }
      }
      await started.result()
      return latency
    }
    for (const i of range(warmup)) await wakeOnce(`d-warm-${i}`)
    const latencies: number[] = []
    for (const i of range(count)) latencies.push(await wakeOnce(`d-${i}`, i === count - 1))
    return {
      metrics: { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) },
      // The statements of the last wake-up, from the emit on: where its latency went.
      detail: { timeline },
    }
  },

  e: async (request, bench) => {
    const { sleeps, sleepMs, startConcurrency } = SHAPES.e
    const count = scaled(sleeps, request.scale)
    const started: Started[] = []
    const { cost } = await measured(request, bench, async () => {
      await forEachLimited(range(count), startConcurrency, async (i) => {
        started.push(await bench.startNap(`e-${i}`))
      })
      await Promise.all(started.map((execution) => execution.result()))
    })
    const lateness = started.map(
      ({ id }) => marks.wokeAt.get(id)! - marks.sleptAt.get(id)! - sleepMs,
    )
    return {
      metrics: {
        p50Ms: percentile(lateness, 50),
        p99Ms: percentile(lateness, 99),
        maxMs: Math.max(...lateness),
        minMs: Math.min(...lateness),
        wallMs: cost.wallMs,
      },
    }
  },

  f: async (request, bench) => {
    const { executions, startConcurrency } = SHAPES.f
    const count = scaled(executions, request.scale)
    const warm = 20
    // Warm the paths first, so the baseline already holds the code and the pools.
    for (const i of range(warm)) await bench.startParked(`f-warm-${i}`)
    await until("the warm-up to park", async () => (await bench.parkedCount()) === warm, 60_000, 20)
    const before = await settledMemory()
    const startedAt = performance.now()
    await forEachLimited(range(count), startConcurrency, async (i) => {
      await bench.startParked(`f-${i}`)
    })
    await until(
      "every execution to park",
      async () => (await bench.parkedCount()) === count + warm,
      900_000,
      200,
    )
    const parkedMs = performance.now() - startedAt
    const after = await settledMemory()
    return {
      metrics: {
        rssGrowthMb: (after.rssBytes - before.rssBytes) / 2 ** 20,
        heapGrowthMb: (after.heapUsedBytes - before.heapUsedBytes) / 2 ** 20,
        rssBeforeMb: before.rssBytes / 2 ** 20,
        rssAfterMb: after.rssBytes / 2 ** 20,
        parkedPerSecond: count / (parkedMs / 1000),
        gcExposed: after.collected ? 1 : 0,
      },
    }
  },

  i: async (request, bench) => {
    const { children, warmup } = SHAPES.i
    const count = scaled(children, request.scale)
    await bench.runFanOut(warmup, "i-warm")
    const { cost } = await measured(request, bench, () => bench.runFanOut(count, "i-timed"))
    const statements = statementsOf(cost)
    return {
      metrics: {
        wallMs: cost.wallMs,
        msPerChild: cost.wallMs / count,
        writeCommitsPerChild: statements.writeCommits / count,
        statementsPerChild: statements.statements / count,
        nodeCpuMsPerChild: cost.nodeCpuMs / count,
        postgresCpuMsPerChild: cost.storeCpuMs / count,
      },
      detail: { children: count, statements },
    }
  },

  g: async (request, bench) => {
    const { steps, runs } = SHAPES.g
    await bench.runSequential(3, "g-warm")
    const metrics: Record<string, number> = {}
    const byLength: Record<string, unknown> = {}
    const kept = new Map<number, Awaited<ReturnType<typeof measured>>>()
    for (const length of steps) {
      for (const run of range(runs)) {
        const window = await measured(request, bench, () =>
          bench.runSequential(length, `g-${length}-${run}`),
        )
        // Counts barely move between runs; keep the one with the fewest statements.
        const best = kept.get(length)
        if (
          best === undefined ||
          statementsOf(window.cost).statements < statementsOf(best.cost).statements
        ) {
          kept.set(length, window)
        }
      }
      const { cost, own } = kept.get(length)!
      const statements = statementsOf(cost)
      byLength[length] = statements
      metrics[`statementsPerWorkflow${length}`] = statements.statements
      metrics[`commitsPerWorkflow${length}`] = statements.commits
      metrics[`writeCommitsPerWorkflow${length}`] = statements.writeCommits
      if (own !== undefined) {
        metrics[`ownStatementsPerWorkflow${length}`] = own.statements
        metrics[`ownCommitsPerWorkflow${length}`] = own.commits
      }
    }
    // Per step: the difference between the longest two, which leaves out start and finish.
    const [, shorter, longer] = steps
    const short = statementsOf(kept.get(shorter)!.cost)
    const long = statementsOf(kept.get(longer)!.cost)
    const span = longer - shorter
    metrics["statementsPerStep"] = (long.statements - short.statements) / span
    metrics["commitsPerStep"] = (long.commits - short.commits) / span
    metrics["writeCommitsPerStep"] = (long.writeCommits - short.writeCommits) / span
    metrics["roundTripMsPerStep"] = (long.ms - short.ms) / span
    const ownShort = kept.get(shorter)!.own
    const ownLong = kept.get(longer)!.own
    if (ownShort !== undefined && ownLong !== undefined) {
      metrics["ownStatementsPerStep"] = (ownLong.statements - ownShort.statements) / span
      metrics["ownCommitsPerStep"] = (ownLong.commits - ownShort.commits) / span
    }
    const perStepKinds: Record<string, number> = {}
    for (const { kind, count } of long.byKind) {
      const shortCount = short.byKind.find((k) => k.kind === kind)?.count ?? 0
      const per = (count - shortCount) / span
      if (Math.abs(per) >= 0.01) perStepKinds[kind] = per
    }
    return { metrics, detail: { byLength, perStepKinds } }
  },
}

/** Runs the requested shape against `bench`. */
export const runShape = async (request: TrialRequest, bench: BenchSystem): Promise<TrialResult> => {
  const trial = trials[request.shape as SharedShapeId] as ShapeTrial | undefined
  if (trial === undefined) throw new Error(`shape ${request.shape} has a trial file of its own`)
  const { metrics, detail } = await trial(request, bench)
  return { shape: request.shape, system: bench.system, metrics, detail }
}
