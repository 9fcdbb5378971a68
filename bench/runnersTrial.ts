/**
 * Shape r, akter only: shape b's closed loop (32 lanes, each starting a 3-activity workflow and
 * awaiting its result) from this process, which runs no runner, against 1, 2 and 4 runner
 * processes (`runnerProcess.ts`) on the trial's database, sharing the same total concurrency (32 /
 * N passes each). Each count gets fresh runner processes, waits until they hold an even share of
 * the 256 buckets, warms up, then is measured. Reports total workflows/s per runner count, each
 * runner's share of the work and CPU, and the statements of runners and client together. Then once
 * more with one runner under the same loop for minutes (`sustained`), window by window, to show
 * throughput does not fall as the work leaves dead row versions behind; and with one runner after
 * seeding executions asleep on timers an hour ahead (`sleeping`), to show a claim's cost does not
 * grow with the timers its buckets hold that are not yet due.
 */
import { fork, type ChildProcess } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
import { internalsOf } from "../runtime/akter.js"
import { createAkter, makeLogger, makeOwnerClient, type Execution } from "../runtime/index.js"
import { BUCKET_COUNT } from "../runtime/owners/routing.js"
import { readActivityOf } from "../runtime/storage/tableUpkeep.js"
import { benchRegistration, sequentialWorkflow } from "./benchManifest.js"
import { seedHistory } from "./historySeed.js"
import type { RunnerCommand, RunnerProcessRequest, RunnerReport } from "./runnerProcess.js"
import { scaled, SHAPES } from "./shapes.js"
import { logStatements } from "./statementLog.js"
import { forEachLimited, measureWindow, serveTrial, sleep, until } from "./trialChild.js"

const statementLog = logStatements(pg.Client)
const here = dirname(fileURLToPath(import.meta.url))
/** This trial runs bundled (bench/bundledTrials.ts): its runner processes do too, from beside it. */
const BUNDLED = import.meta.url.endsWith(".js")

type BenchClient = Record<
  string,
  { start: (ownerId: string, input: unknown) => Promise<Execution<unknown, unknown>> }
>

/** A forked runner process and the replies it owes. */
class RunnerProcess {
  private readonly waiting: Array<(message: { kind: string; report?: RunnerReport }) => void> = []
  readonly exited: Promise<number | null>

  private constructor(private readonly child: ChildProcess) {
    child.on("message", (message: { kind: string; report?: RunnerReport }) =>
      this.waiting.shift()?.(message),
    )
    this.exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)))
  }

  static async start(request: RunnerProcessRequest): Promise<RunnerProcess> {
    const child = fork(
      join(here, `runnerProcess${BUNDLED ? ".js" : ".ts"}`),
      [JSON.stringify(request)],
      {
        execArgv: [...(BUNDLED ? [] : ["--import", "tsx"]), "--no-deprecation"],
        env: { ...process.env, AKTER_LOG: "warn" },
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      },
    )
    const runner = new RunnerProcess(child)
    const ready = runner.reply()
    const failed = runner.exited.then((code) => {
      throw new Error(`a runner process exited with ${code} before it was ready`)
    })
    await Promise.race([ready, failed])
    return runner
  }

  private reply() {
    return new Promise<{ kind: string; report?: RunnerReport }>((resolve) =>
      this.waiting.push(resolve),
    )
  }

  async report(): Promise<RunnerReport> {
    const reply = this.reply()
    this.child.send({ kind: "report" } satisfies RunnerCommand)
    return (await reply).report!
  }

  async close(): Promise<void> {
    const reply = this.reply()
    this.child.send({ kind: "close" } satisfies RunnerCommand)
    await Promise.race([reply, this.exited])
    await this.exited
  }

  kill() {
    this.child.kill("SIGKILL")
  }
}

/**
 * Leases in the runner processes: short, so a joining runner gets its share in seconds rather than
 * the default's minute (16 buckets move per heartbeat), with a heartbeat once a second (2
 * statements per runner per second, counted with the rest).
 */
const LEASE_MS = 6000
const HEARTBEAT_MS = 1000

/** What one runner did between two of its reports; statements by kind, busiest first. */
const between = (before: RunnerReport, after: RunnerReport) => {
  const earlier = new Map(before.statements.byKind.map((k) => [k.kind, k.count]))
  return {
    finished: after.finished - before.finished,
    cpuMs: after.cpuMs - before.cpuMs,
    statements: after.statements.statements - before.statements.statements,
    writeCommits: after.statements.writeCommits - before.statements.writeCommits,
    buckets: after.buckets,
    byKind: after.statements.byKind
      .map(({ kind, count }) => ({ kind, count: count - (earlier.get(kind) ?? 0) }))
      .filter(({ count }) => count > 0)
      .sort((a, b) => b.count - a.count),
  }
}

serveTrial(async (request) => {
  const { workflows, concurrency, warmupPerRunner, runnerCounts, sleeping, sustained } = SHAPES.r
  const count = scaled(workflows, request.scale)
  const akter = await createAkter({
    databaseUrl: request.databaseUrl,
    logger: makeLogger({ level: "warn" }),
    poolSize: concurrency,
  })
  const client = makeOwnerClient<BenchClient>(akter, await benchRegistration())
  const runSequential = async (ownerId: string) => {
    const execution = await client[sequentialWorkflow(3)]!.start(ownerId, { n: 0 })
    const result = (await execution.result()) as { _tag: string; value?: { n: number } }
    if (result._tag !== "Success" || result.value?.n !== 3) {
      throw new Error(`${ownerId} ended ${JSON.stringify(result)}`)
    }
  }
  const metrics: Record<string, number> = {}
  const detail: Record<string, unknown> = {}
  const live: RunnerProcess[] = []
  /**
   * Starts `runners` fresh runner processes, waits for an even share of buckets, warms up: as
   * many workflows per runner whatever the count, so each process has compiled its hot code.
   */
  const startRunners = async (runners: number, label: string) => {
    for (let index = 0; index < runners; index++) {
      live.push(
        await RunnerProcess.start({
          databaseUrl: request.databaseUrl,
          concurrency: concurrency / runners,
          leaseMs: LEASE_MS,
          heartbeatMs: HEARTBEAT_MS,
        }),
      )
    }
    const share = BUCKET_COUNT / runners
    await until(
      `${runners} runners to hold ${share} buckets each`,
      async () =>
        (await Promise.all(live.map((r) => r.report()))).every((r) => r.buckets === share),
      120_000,
      200,
    )
    await forEachLimited(
      Array.from({ length: scaled(warmupPerRunner * runners, request.scale) }, (_, i) => i),
      concurrency,
      (i) => runSequential(`r${label}-warm-${i}`),
    )
  }
  /** Measures `runners` fresh runner processes; `label` names the figures (the count by default). */
  const measureRunners = async (runners: number, label: string = String(runners)) => {
    await startRunners(runners, label)
    const before = await Promise.all(live.map((r) => r.report()))
    const { cost } = await measureWindow(request.databaseUrl, statementLog, () =>
      forEachLimited(
        Array.from({ length: count }, (_, i) => i),
        concurrency,
        (i) => runSequential(`r${label}-${i}`),
      ),
    )
    const after = await Promise.all(live.map((r) => r.report()))
    const each = after.map((report, index) => between(before[index]!, report))
    const seconds = cost.wallMs / 1000
    const runnerCpuMs = each.reduce((sum, r) => sum + r.cpuMs, 0)
    const shares = each.map((r) => r.finished / count)
    metrics[`workflowsPerSecond${label}`] = count / seconds
    metrics[`perRunnerWorkflowsPerSecondMin${label}`] =
      Math.min(...each.map((r) => r.finished)) / seconds
    metrics[`perRunnerWorkflowsPerSecondMax${label}`] =
      Math.max(...each.map((r) => r.finished)) / seconds
    metrics[`runnerCpuMsPer${label}`] = runnerCpuMs / count
    metrics[`clientCpuMsPer${label}`] = cost.nodeCpuMs / count
    metrics[`postgresCpuMsPer${label}`] = cost.postgresCpuMs / count
    metrics[`cpuCoresBusy${label}`] =
      (runnerCpuMs + cost.nodeCpuMs + cost.postgresCpuMs) / cost.wallMs
    metrics[`runnerStatementsPer${label}`] = each.reduce((s, r) => s + r.statements, 0) / count
    metrics[`runnerWriteCommitsPer${label}`] = each.reduce((s, r) => s + r.writeCommits, 0) / count
    metrics[`clientStatementsPer${label}`] = cost.statements.statements / count
    detail[label] = { runners: each, shares, client: cost.statements }
    for (const runner of live.splice(0)) await runner.close()
    await sleep(100)
  }
  try {
    for (const runners of runnerCounts) await measureRunners(runners)
    const first = runnerCounts[0]!
    const last = runnerCounts[runnerCounts.length - 1]!
    metrics["lastOverFirst"] =
      metrics[`workflowsPerSecond${last}`]! / metrics[`workflowsPerSecond${first}`]!
    // One runner under the same closed loop for minutes: throughput window by window, and the
    // dead versions the outbox holds at the end (a claim reads them until a vacuum removes them).
    await startRunners(1, "Sustained")
    const windowMs = sustained.windowSeconds * 1000
    const windowCount = Math.max(
      2,
      Math.round(sustained.seconds / sustained.windowSeconds / request.scale),
    )
    const windows: number[] = []
    let finished = 0
    let stopping = false
    let next = 0
    const lane = async () => {
      while (!stopping) {
        await runSequential(`rSustained-${next++}`)
        finished += 1
      }
    }
    const lanes = Array.from({ length: concurrency }, lane)
    for (let index = 0; index < windowCount; index++) {
      const before = finished
      await sleep(windowMs)
      windows.push((finished - before) / sustained.windowSeconds)
    }
    stopping = true
    await Promise.all(lanes)
    metrics["workflowsPerSecondSustainedFirst"] = windows[0]!
    metrics["workflowsPerSecondSustainedLast"] = windows.at(-1)!
    metrics["sustainedLastOverFirst"] = windows.at(-1)! / windows[0]!
    metrics["outboxDeadVersionsSustained"] = (
      await readActivityOf(internalsOf(akter).storage.db, "outbox")
    ).deadRows
    detail["Sustained"] = { windowSeconds: sustained.windowSeconds, windows }
    for (const runner of live.splice(0)) await runner.close()
    await sleep(100)
    // One runner again, with executions asleep on timers an hour ahead in every bucket: each start
    // here is claimed by the runner (the client's NOTIFY), so this is what a claim costs when the
    // buckets hold many timers not yet due.
    const sleepers = scaled(sleeping, request.scale)
    await seedHistory(internalsOf(akter).storage.db, {
      finished: 0,
      open: sleepers,
      events: false,
      openTimersInMs: 3_600_000,
    })
    await measureRunners(1, "Sleeping")
    metrics["sleepingOverEmpty"] =
      metrics["workflowsPerSecondSleeping"]! / metrics[`workflowsPerSecond${first}`]!
    return { shape: request.shape, system: "akter", metrics, detail }
  } finally {
    for (const runner of live) runner.kill()
    await akter.close()
  }
})
