/**
 * `npm run bench`: every shape of issue 8 on akter, on DBOS Transact (the same Postgres,
 * `DATABASE_URL`) and on Restate (shapes a–e, its own server in a private network namespace),
 * alternating, each trial in a process and a fresh database (or server) of its own; then the
 * Postgres ceiling from pgbench, a table of medians with their spread and the ratios, and each
 * result against the goal.
 *
 *   npm run bench -- [--only a,b] [--no-peer] [--no-dbos] [--no-restate] [--reps N] [--json FILE]
 *                    [--profile] [--no-ceiling] [--scale N]
 *
 * akter's trials run bundled as the published package is, with plain node (bundledTrials.ts).
 * Shape f runs at most twice (it parks 10,000 executions per trial). `--profile` writes a CPU
 * profile of the measured window of shapes a, b and c on both sides (bench/results/profiles/) and
 * prints where the time went, running akter's trials from their sources so that the profile names
 * the modules; `--scale N` divides every count by N (a smoke run, not a measurement).
 */
import { execFileSync, fork, spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdir, writeFile } from "node:fs/promises"
import { loadavg } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { checkLoopback, createBenchDatabase, DEFAULT_DATABASE_URL } from "./benchDatabase.js"
import { bundleTrials, type BundledTrials } from "./bundledTrials.js"
import { formatProfile, summarizeProfile, type ProfileSummary } from "./cpuProfile.js"
import { measureCeiling, type CeilingResult } from "./postgresCeiling.js"
import {
  runsShape,
  SHAPE_IDS,
  SHAPES,
  type ShapeId,
  type System,
  type TrialResult,
} from "./shapes.js"
import { relativeRange, spreadOf, type Spread } from "./statistics.js"
import type { TrialMessage } from "./trialChild.js"

const here = dirname(fileURLToPath(import.meta.url))
const resultsDir = join(here, "results")
const peersDir = join(here, "peers")

interface Options {
  readonly only: readonly ShapeId[]
  readonly dbos: boolean
  readonly restate: boolean
  readonly reps: number
  readonly json: string | undefined
  readonly profile: boolean
  readonly ceiling: boolean
  readonly scale: number
  readonly retained: readonly number[]
  readonly databaseUrl: string
}

const USAGE = `usage: npm run bench -- [--only a,b,…] [--no-peer] [--no-dbos] [--no-restate] [--reps N]
                        [--json FILE] [--profile] [--no-ceiling] [--scale N] [--retained 0,1000000,…]
  --no-peer skips both peers (akter alone); --no-dbos and --no-restate skip one.`

const parseOptions = (args: readonly string[]): Options => {
  let only: ShapeId[] = [...SHAPE_IDS]
  let dbos = true
  let restate = true
  let reps = 3
  let json: string | undefined
  let profile = false
  let ceiling = true
  let scale = 1
  let retained: readonly number[] = SHAPES.h.retained
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const value = () => {
      const next = args[++i]
      if (next === undefined) throw new Error(`${arg} needs a value\n${USAGE}`)
      return next
    }
    const count = (name: string, text: string) => {
      const n = Number(text)
      if (!Number.isInteger(n) || n < 1)
        throw new Error(`${name} must be a positive integer, got "${text}"`)
      return n
    }
    if (arg === "--only") {
      const ids = value()
        .split(",")
        .map((id) => id.trim())
      const unknown = ids.filter((id) => !SHAPE_IDS.includes(id as ShapeId))
      if (unknown.length > 0) {
        throw new Error(
          `--only: unknown shape ${unknown.join(", ")} (shapes: ${SHAPE_IDS.join(",")})`,
        )
      }
      only = SHAPE_IDS.filter((id) => ids.includes(id))
    } else if (arg === "--no-peer") {
      dbos = false
      restate = false
    } else if (arg === "--no-dbos") dbos = false
    else if (arg === "--no-restate") restate = false
    else if (arg === "--reps") reps = count("--reps", value())
    else if (arg === "--json") json = value()
    else if (arg === "--profile") profile = true
    else if (arg === "--no-ceiling") ceiling = false
    else if (arg === "--scale") scale = count("--scale", value())
    else if (arg === "--retained") {
      const counts = value()
        .split(",")
        .map((text) => Number(text.replace(/_/g, "")))
      if (counts.some((n) => !Number.isInteger(n) || n < 0) || counts.length === 0) {
        throw new Error(`--retained: a comma-separated list of counts, e.g. 0,1000000`)
      }
      retained = [...new Set([0, ...counts])].sort((a, b) => a - b)
    } else if (arg === "--help" || arg === "-h") {
      console.log(USAGE)
      process.exit(0)
    } else throw new Error(`unknown option ${arg}\n${USAGE}`)
  }
  const databaseUrl = process.env["DATABASE_URL"] ?? DEFAULT_DATABASE_URL
  checkLoopback(databaseUrl)
  return { only, dbos, restate, reps, json, profile, ceiling, scale, retained, databaseUrl }
}

/** What each peer needs installed in bench/peers (its lock file pins them all). */
const PEER_PACKAGES: Record<Exclude<System, "akter">, readonly string[]> = {
  dbos: ["@dbos-inc/dbos-sdk"],
  restate: ["@restatedev/restate-sdk", "@restatedev/restate-server-linux-x64", "core-js"],
}

const installed = (system: Exclude<System, "akter">) =>
  PEER_PACKAGES[system].every((name) =>
    existsSync(join(peersDir, "node_modules", name, "package.json")),
  )

/** Installs the peers from their lock file when one is missing; returns why it failed, if so. */
const installPeers = (): string | undefined => {
  if (installed("dbos") && installed("restate")) return undefined
  try {
    console.log("installing the peers (npm ci in bench/peers) …")
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: peersDir, stdio: "inherit" })
    return undefined
  } catch (error) {
    return `npm ci in bench/peers failed: ${String(error)}`
  }
}

/**
 * Why Restate cannot run here, if so: its server binary is installed for Linux x64 only, and it
 * runs only inside a private network namespace (`unshare --net`), which needs root.
 */
const restateUnavailable = (): string | undefined => {
  if (process.platform !== "linux" || process.arch !== "x64") {
    return `restate-server is installed for linux-x64 only (this is ${process.platform}-${process.arch})`
  }
  if (process.getuid?.() !== 0) return "a private network namespace (unshare --net) needs root"
  const probe = spawnSync("unshare", ["--net", "sh", "-c", "ip link set lo up"], {
    stdio: "ignore",
  })
  if (probe.status !== 0) return "unshare --net with `ip link set lo up` failed"
  return installed("restate") ? undefined : "@restatedev packages missing from bench/peers"
}

const TRIAL_FILES: Record<System, string> = {
  akter: join(here, "akterTrial.ts"),
  dbos: join(peersDir, "dbosTrial.ts"),
  restate: join(peersDir, "restateTrial.ts"),
}

/** The akter-only shapes' trial files. */
const OWN_TRIAL_FILES: Partial<Record<ShapeId, string>> = {
  h: join(here, "historyTrial.ts"),
  r: join(here, "runnersTrial.ts"),
}

/** Forked by the shape r trial, bundled beside it. */
const RUNNER_PROCESS_FILE = join(here, "runnerProcess.ts")

const TRIAL_TIMEOUT_MS = 20 * 60 * 1000

interface TrialRun {
  readonly result?: TrialResult
  readonly error?: string
  readonly profile?: string
  readonly load: number
}

/** The trial running now, so an interrupted run still drops its database. */
let current: { readonly kill: () => void; readonly drop: () => Promise<void> } | undefined

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    const running = current
    current = undefined
    running?.kill()
    void (running?.drop() ?? Promise.resolve()).finally(() => process.exit(130))
  })
}

const runTrial = async (
  options: Options,
  system: System,
  shape: ShapeId,
  rep: number,
  runId: string,
  /** akter's trials bundled; undefined: run from sources. */
  bundled: BundledTrials | undefined,
): Promise<TrialRun> => {
  // Restate keeps its own log (its trial starts a server of its own): no database.
  const database =
    system === "restate"
      ? undefined
      : await createBenchDatabase(options.databaseUrl, `${system}_bench`)
  const load = loadavg()[0]!
  const profileDir = join(resultsDir, "profiles", runId)
  const profileFile = join(profileDir, `${system}-${shape}-${rep}.cpuprofile`)
  const profiling = options.profile && (shape === "a" || shape === "b" || shape === "c")
  if (profiling) await mkdir(profileDir, { recursive: true })
  try {
    const request = {
      shape,
      databaseUrl: database?.url ?? "",
      scale: options.scale,
      ...(shape === "h" ? { retained: options.retained } : {}),
      ...(profiling ? { profileFile } : {}),
    }
    const file = OWN_TRIAL_FILES[shape] ?? TRIAL_FILES[system]
    const runsBundled = system === "akter" && bundled !== undefined
    const child = fork(runsBundled ? bundled.fileOf(file) : file, [JSON.stringify(request)], {
      cwd: join(here, ".."),
      execArgv: [...(runsBundled ? [] : ["--import", "tsx"]), "--expose-gc", "--no-deprecation"],
      env: { ...process.env, AKTER_LOG: "warn" },
      stdio: ["ignore", "inherit", "pipe", "ipc"],
    })
    current = {
      kill: () => child.kill("SIGKILL"),
      drop: async () => {
        await database?.drop()
      },
    }
    let stderr = ""
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000)
    })
    const message = await new Promise<TrialMessage | undefined>((resolve) => {
      let received: TrialMessage | undefined
      const timer = setTimeout(() => child.kill("SIGKILL"), TRIAL_TIMEOUT_MS)
      child.on("message", (m) => {
        received = m as TrialMessage
      })
      child.on("exit", () => {
        clearTimeout(timer)
        resolve(received)
      })
    })
    if (message?.kind === "result") {
      return {
        result: message.result,
        load,
        ...(profiling ? { profile: profileFile } : {}),
      }
    }
    const error =
      message?.kind === "error" ? message.error : `the trial process ended without a result`
    return { error: `${error}\n${stderr.trim()}`, load }
  } finally {
    current = undefined
    await database?.drop()
  }
}

interface Headline {
  readonly metric: Readonly<Record<System, string>>
  readonly unit: string
  readonly higherIsBetter: boolean
  /** Other figures printed under the headline; `true` when higher is better. */
  readonly more: MoreRows | ((options: Options) => MoreRows)
  /** Figures the JSON carries beside the headline, each under a key of its own. */
  readonly json?: (
    options: Options,
  ) => ReadonlyArray<readonly [key: string, metric: string, unit: string, higherIsBetter: boolean]>
}

type MoreRows = ReadonlyArray<readonly [metric: string, label: string, higherIsBetter: boolean]>

/** Shape r's steady-load rows: one runner for minutes, its first and last windows. */
const SUSTAINED_ROWS: MoreRows = [
  [
    "workflowsPerSecondSustainedFirst",
    `total wf/s, 1 runner, first ${SHAPES.r.sustained.windowSeconds} s of ${SHAPES.r.sustained.seconds} s`,
    true,
  ],
  [
    "workflowsPerSecondSustainedLast",
    `total wf/s, 1 runner, last ${SHAPES.r.sustained.windowSeconds} s`,
    true,
  ],
  ["sustainedLastOverFirst", "  last ÷ first (goal ≥ 1 / 1.2)", true],
  ["outboxDeadVersionsSustained", "  dead outbox versions at the end", false],
]

const moreRows = (headline: Headline, options: Options): MoreRows =>
  typeof headline.more === "function" ? headline.more(options) : headline.more

/**
 * Shape h's figures are labelled by the count retained, `sweep` for the run with the sweep paced
 * by its default duty cycle, and `sweepUnpaced` for the run with its batches back to back.
 */
const historyLabels = (options: Options) => [
  ...options.retained.map(String),
  "sweep",
  "sweepUnpaced",
]

const historyLabel = (label: string, options: Options) => {
  const largest = Math.max(...options.retained).toLocaleString("en-US")
  if (label === "sweep") return `${largest} retained, sweeping (paced)`
  if (label === "sweepUnpaced") return `${largest} retained, sweeping unpaced`
  return `${Number(label).toLocaleString("en-US")} retained`
}

const same = (metric: string) => ({ akter: metric, dbos: metric, restate: metric })

const HEADLINES: Record<ShapeId, Headline> = {
  a: {
    metric: same("p50Ms"),
    unit: "ms p50, start → result",
    higherIsBetter: false,
    more: [
      ["p99Ms", "ms p99", false],
      ["statementsPer", "statements / workflow", false],
      ["commitsPer", "transactions / workflow, read-only incl.", false],
      ["writeCommitsPer", "write commits / workflow", false],
      ["nodeCpuMsPer", "Node CPU ms / workflow", false],
      ["postgresCpuMsPer", "Postgres CPU ms / workflow", false],
      ["serverCpuMsPer", "restate-server CPU ms / workflow", false],
    ],
  },
  b: {
    metric: same("workflowsPerSecond"),
    unit: "workflows/s",
    higherIsBetter: true,
    more: [
      ["stepsPerSecond", "steps/s", true],
      ["commitsPerSecond", "commits/s", true],
      ["writeCommitsPerSecond", "write commits/s", true],
      ["cpuCoresBusy", "cores busy (Node + Postgres/Restate)", false],
      ["statementsPer", "statements / workflow", false],
      ["writeCommitsPer", "write commits / workflow", false],
      ["nodeCpuMsPer", "Node CPU ms / workflow", false],
      ["postgresCpuMsPer", "Postgres CPU ms / workflow", false],
      ["serverCpuMsPer", "restate-server CPU ms / workflow", false],
    ],
  },
  c: {
    metric: same("msPerStepLong"),
    unit: `ms / step, ${SHAPES.c.long} steps`,
    higherIsBetter: false,
    more: [
      ["msPerStepShort", `ms / step, ${SHAPES.c.short} steps`, false],
      ["longOverShort", `per-step ${SHAPES.c.long} ÷ ${SHAPES.c.short} (linear ≤ 1.3)`, false],
      ["marginalMsPerStep", `ms per extra step (${SHAPES.c.short}→${SHAPES.c.long})`, false],
      ["nodeCpuMsPer", "Node CPU ms / step", false],
      ["postgresCpuMsPer", "Postgres CPU ms / step", false],
      ["serverCpuMsPer", "restate-server CPU ms / step", false],
      ["roundTripMsPer", "SQL round-trip ms / step", false],
    ],
  },
  d: {
    metric: same("p50Ms"),
    unit: "ms p50, emit → code after the wait",
    higherIsBetter: false,
    more: [["p99Ms", "ms p99", false]],
  },
  e: {
    metric: same("p50Ms"),
    unit: "ms p50 lateness of a 1 s sleep",
    higherIsBetter: false,
    more: [
      ["p99Ms", "ms p99", false],
      ["maxMs", "ms max", false],
    ],
  },
  f: {
    metric: same("rssGrowthMb"),
    unit: `MB RSS growth, ${SHAPES.f.executions} parked`,
    higherIsBetter: false,
    more: [
      ["heapGrowthMb", "MB heap growth", false],
      ["rssAfterMb", "MB RSS after", false],
      ["parkedPerSecond", "started and parked / s", true],
    ],
  },
  g: {
    metric: same("writeCommitsPerStep"),
    unit: "write commits / activity step",
    higherIsBetter: false,
    more: [
      ["statementsPerStep", "statements / step", false],
      ["commitsPerStep", "transactions / step, read-only included", false],
      ["ownStatementsPerStep", "statements / step, akter's storage counters", false],
      ["ownCommitsPerStep", "commits / step, akter's storage counters", false],
      ["roundTripMsPerStep", "SQL round-trip ms / step", false],
      ["statementsPerWorkflow3", "statements, 3-step workflow", false],
      ["commitsPerWorkflow3", "transactions, 3-step workflow", false],
      ["writeCommitsPerWorkflow3", "write commits, 3-step workflow", false],
    ],
  },
  i: {
    metric: same("wallMs"),
    unit: `ms, start → all ${SHAPES.i.children} children awaited`,
    higherIsBetter: false,
    more: [
      ["writeCommitsPerChild", "write commits / child", false],
      ["statementsPerChild", "statements / child", false],
      ["nodeCpuMsPerChild", "Node CPU ms / child", false],
      ["postgresCpuMsPerChild", "Postgres CPU ms / child", false],
    ],
  },
  h: {
    metric: same("worstSlowdown"),
    unit: "worst slowdown against empty (a p50, b wf/s)",
    higherIsBetter: false,
    more: (options) =>
      historyLabels(options).flatMap((label): MoreRows => [
        [`aP50Ms@${label}`, `(a) ms p50, ${historyLabel(label, options)}`, false],
        [`bWorkflowsPerSecond@${label}`, `(b) wf/s, ${historyLabel(label, options)}`, true],
        [`aSlowdown@${label}`, `  (a) p50 ÷ empty`, false],
        [`bSlowdown@${label}`, `  (b) empty wf/s ÷ this`, false],
        [`bPostgresCpuMsPer@${label}`, `  (b) Postgres CPU ms / workflow`, false],
        ...(label.startsWith("sweep")
          ? ([[`sweptRowsPerSecond@${label}`, `  rows swept / s`, true]] as const)
          : []),
      ]),
    json: (options) =>
      historyLabels(options).flatMap((label) => [
        [
          `h.a@${label}`,
          `aP50Ms@${label}`,
          `ms p50 of (a), ${historyLabel(label, options)}`,
          false,
        ],
        [
          `h.b@${label}`,
          `bWorkflowsPerSecond@${label}`,
          `wf/s of (b), ${historyLabel(label, options)}`,
          true,
        ],
      ]),
  },
  r: {
    metric: same("lastOverFirst"),
    unit: `total wf/s, ${SHAPES.r.runnerCounts.at(-1)} runners ÷ ${SHAPES.r.runnerCounts[0]}`,
    higherIsBetter: true,
    more: [...SHAPES.r.runnerCounts, "Sustained" as const, "Sleeping" as const].flatMap(
      (n): MoreRows =>
        n === "Sustained"
          ? SUSTAINED_ROWS
          : [
              [
                `workflowsPerSecond${n}`,
                n === "Sleeping"
                  ? `total wf/s, 1 runner, ${SHAPES.r.sleeping.toLocaleString("en")} asleep`
                  : `total wf/s, ${n} runner process${n === 1 ? "" : "es"}`,
                true,
              ],
              ...(n === "Sleeping"
                ? ([[`sleepingOverEmpty`, `  ÷ 1 runner's wf/s with none asleep`, true]] as const)
                : []),
              [`perRunnerWorkflowsPerSecondMin${n}`, `  per runner wf/s, least busy`, true],
              [`perRunnerWorkflowsPerSecondMax${n}`, `  per runner wf/s, busiest`, true],
              [`runnerCpuMsPer${n}`, `  runners' Node CPU ms / workflow`, false],
              [`clientCpuMsPer${n}`, `  client's Node CPU ms / workflow`, false],
              [`postgresCpuMsPer${n}`, `  Postgres CPU ms / workflow`, false],
              [`cpuCoresBusy${n}`, `  cores busy (all)`, false],
              [`runnerStatementsPer${n}`, `  runners' statements / workflow`, false],
              [`runnerWriteCommitsPer${n}`, `  runners' write commits / workflow`, false],
            ],
    ),
    json: () => [
      ...SHAPES.r.runnerCounts.map(
        (n) =>
          [
            `r${n}`,
            `workflowsPerSecond${n}`,
            `total wf/s with ${n} runner process${n === 1 ? "" : "es"}, concurrency 32 in all`,
            true,
          ] as const,
      ),
      [
        "r1.sustained",
        "workflowsPerSecondSustainedLast",
        `total wf/s with 1 runner process in the last ${SHAPES.r.sustained.windowSeconds} s of ${SHAPES.r.sustained.seconds} s of steady load`,
        true,
      ] as const,
      [
        "r1.sleeping",
        "workflowsPerSecondSleeping",
        `total wf/s with 1 runner process and ${SHAPES.r.sleeping.toLocaleString("en")} executions asleep on timers an hour ahead`,
        true,
      ] as const,
    ],
  },
}

type Results = Record<ShapeId, Record<System, TrialRun[]>>

const spreadFor = (runs: readonly TrialRun[], metric: string): Spread | undefined => {
  const values = runs.flatMap((run) =>
    run.result?.metrics[metric] === undefined ? [] : [run.result.metrics[metric]!],
  )
  return values.length === 0 ? undefined : spreadOf(values)
}

const number = (value: number) =>
  !Number.isFinite(value)
    ? "–"
    : Math.abs(value) >= 1000
      ? value.toFixed(0)
      : Math.abs(value) >= 100
        ? value.toFixed(1)
        : Math.abs(value) >= 10
          ? value.toFixed(2)
          : value.toFixed(3)

/** A table cell; `ran` says the system ran the shape, so a figure it lacks does not apply (n/a). */
const cell = (spread: Spread | undefined, ran = false) =>
  spread === undefined
    ? ran
      ? "n/a"
      : "null"
    : spread.runs === 1
      ? number(spread.median)
      : `${number(spread.median)} [${number(spread.min)}–${number(spread.max)}]`

const goalOf = (
  shape: ShapeId,
  akter: Results[ShapeId]["akter"],
  dbos: Spread | undefined,
): string => {
  const at = (metric: string) => spreadFor(akter, metric)?.median ?? Number.NaN
  const mark = (ok: boolean) => (ok ? "met" : "NOT met")
  // Issue 18's goals where it set one; issue 8's otherwise.
  const vsDbos = (metric: string, label: string, ok: (akter: number, peer: number) => boolean) =>
    dbos === undefined
      ? `${label}: no peer measured`
      : `${label} (${number(dbos.median)}): ${mark(ok(at(metric), dbos.median))}`
  switch (shape) {
    case "a":
      return `p50 ≤ 2.5 ms: ${mark(at("p50Ms") <= 2.5)}; ${vsDbos("p50Ms", "≤ DBOS's", (a, d) => a <= d)}`
    case "b":
      return dbos === undefined
        ? "≥ 3× DBOS: no peer measured"
        : `≥ 3× DBOS: ${number(at("workflowsPerSecond") / dbos.median)}× — ${mark(at("workflowsPerSecond") >= 3 * dbos.median)}`
    case "c":
      return `≤ 1 ms/step: ${mark(at("msPerStepLong") <= 1)}; linear (≤ 1.3): ${number(at("longOverShort"))} — ${mark(at("longOverShort") <= 1.3)}`
    case "d":
      return `p50 ${vsDbos("p50Ms", "≤ DBOS's", (a, d) => a <= d)}`
    case "e":
      return `p99 ≤ 50 ms: ${mark(at("p99Ms") <= 50)}; p50 ${vsDbos("p50Ms", "≤ DBOS's", (a, d) => a <= d)}`
    case "f":
      return `< 50 MB: ${mark(at("rssGrowthMb") < 50)}`
    case "g": {
      const commits = at("writeCommitsPerStep")
      return `≤ 2 commits/step: ${mark(commits <= 2)}; target 1: ${mark(commits <= 1)}`
    }
    case "h":
      return `within 1.2× of empty: ${number(at("worstSlowdown"))}× — ${mark(at("worstSlowdown") <= 1.2)}`
    case "i":
      return "no goal stated; reported beside DBOS"
    case "r":
      return `total wf/s falls ≤ 15% from 1 to 4 runners: ${((1 - at("lastOverFirst")) * 100).toFixed(0)}% — ${mark(at("lastOverFirst") >= 0.85)}; with ${SHAPES.r.sleeping.toLocaleString("en")} asleep within 1.2× of none: ${number(1 / at("sleepingOverEmpty"))}× — ${mark(at("sleepingOverEmpty") >= 1 / 1.2)}`
  }
}

const PEER_NAMES = { dbos: "DBOS", restate: "Restate" } as const

const ratioText = (
  akter: Spread | undefined,
  peer: Spread | undefined,
  higherIsBetter: boolean,
  peerName: string,
) => {
  if (akter === undefined || peer === undefined || peer.median === 0) return ""
  const ratio = akter.median / peer.median
  const better = higherIsBetter ? ratio >= 1 : ratio <= 1
  return `${number(ratio)}× (${better ? "akter" : peerName} better)`
}

/** The goal against Restate: akter ahead on every shape it runs. */
const restateGoal = (
  akter: Spread | undefined,
  restate: Spread | undefined,
  higherIsBetter: boolean,
) => {
  if (akter === undefined || restate === undefined) return ""
  const ahead = higherIsBetter ? akter.median >= restate.median : akter.median <= restate.median
  return `; ahead of Restate (${number(restate.median)}): ${ahead ? "met" : "NOT met"}`
}

const pad = (text: string, width: number) => text.padEnd(width)

const printTable = (options: Options, results: Results, ceiling: CeilingResult | undefined) => {
  const lines: string[] = []
  const widths = [46, 28, 28, 28, 26]
  lines.push(
    `${pad("", widths[0]!)}${pad("akter median [min–max]", widths[1]!)}${pad("DBOS median [min–max]", widths[2]!)}${pad("Restate median [min–max]", widths[3]!)}${pad("akter ÷ DBOS", widths[4]!)}akter ÷ Restate`,
  )
  for (const shape of options.only) {
    const headline = HEADLINES[shape]
    const { akter, dbos, restate } = results[shape]
    lines.push("", `(${shape}) ${SHAPES[shape].title}`)
    const rows: Array<[string, Record<System, string>, boolean]> = [
      [headline.unit, headline.metric, headline.higherIsBetter],
      ...moreRows(headline, options).map(
        ([metric, label, higher]): [string, Record<System, string>, boolean] => [
          label,
          same(metric),
          higher,
        ],
      ),
    ]
    const ran = (runs: readonly TrialRun[]) => runs.some((run) => run.result !== undefined)
    for (const [label, metric, higher] of rows) {
      const a = spreadFor(akter, metric.akter)
      const d = spreadFor(dbos, metric.dbos)
      const r = spreadFor(restate, metric.restate)
      if (a === undefined && d === undefined && r === undefined) continue
      lines.push(
        `  ${pad(label, widths[0]! - 2)}${pad(cell(a, ran(akter)), widths[1]!)}${pad(cell(d, ran(dbos)), widths[2]!)}${pad(cell(r, ran(restate)), widths[3]!)}${pad(ratioText(a, d, higher, PEER_NAMES.dbos), widths[4]!)}${ratioText(a, r, higher, PEER_NAMES.restate)}`,
      )
    }
    lines.push(
      `  goal: ${goalOf(shape, akter, spreadFor(dbos, headline.metric.dbos))}${restateGoal(
        spreadFor(akter, headline.metric.akter),
        spreadFor(restate, headline.metric.restate),
        headline.higherIsBetter,
      )}`,
    )
    if (shape === "b" && ceiling !== undefined) {
      const commits = spreadFor(akter, "commitsPerSecond")
      const writes = spreadFor(akter, "writeCommitsPerSecond")
      lines.push(
        `  Postgres ceiling (pgbench, ${ceiling.seconds} s each): step-shaped transaction ${number(ceiling.stepTps[1]!)}/s from 1 client, ${number(ceiling.stepTps[16]!)}/s from 16;`,
        `    one-row INSERT ${number(ceiling.insertTps[1]!)}/s from 1, ${number(ceiling.insertTps[16]!)}/s from 16.`,
        `    akter here: ${commits === undefined ? "–" : number(commits.median)} commits/s, of which ${writes === undefined ? "–" : number(writes.median)} write commits/s (${writes === undefined ? "–" : ((writes.median / ceiling.stepTps[16]!) * 100).toFixed(0)}% of the 16-client step ceiling).`,
      )
    }
  }
  console.log(lines.join("\n"))
}

const printNoise = (options: Options, results: Results) => {
  const lines = ["", "noise: spread of each headline over repetitions, (max − min) / median"]
  const loads: number[] = []
  for (const shape of options.only) {
    const parts: string[] = []
    for (const system of ["akter", "dbos", "restate"] as const) {
      const runs = results[shape][system]
      loads.push(...runs.map((run) => run.load))
      const spread = spreadFor(runs, HEADLINES[shape].metric[system])
      if (spread !== undefined)
        parts.push(`${system} ${relativeRange(spread).toFixed(0)}% over ${spread.runs}`)
    }
    lines.push(`  (${shape}) ${parts.join(", ") || "–"}`)
  }
  if (loads.length > 0) {
    lines.push(
      `  1-minute load average when trials started: ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)} (2 cores; above ~0.5 something else was running)`,
    )
  }
  console.log(lines.join("\n"))
}

interface Traced {
  readonly at: number
  readonly kind: string
  readonly ms: number
}

const traceLines = (entries: readonly Traced[], indent: string) =>
  entries.map(
    (entry) =>
      `${indent}+${entry.at.toFixed(1).padStart(6)} ms  ${number(entry.ms).padStart(6)} ms  ${entry.kind}`,
  )

/** Where statements and time went, from the first run of each system: the profile of a step. */
const printDetails = (options: Options, results: Results) => {
  const lines: string[] = []
  const first = (shape: ShapeId, system: System) =>
    results[shape][system].find((run) => run.result)?.result
  for (const system of ["akter", "dbos"] as const) {
    const g = first("g", system)?.detail as
      | {
          perStepKinds: Record<string, number>
          byLength: Record<string, { byKind: Array<{ kind: string; count: number; ms: number }> }>
        }
      | undefined
    if (options.only.includes("g") && g !== undefined) {
      lines.push(
        "",
        `${system}: statements per activity step, by kind (from the 20- and 200-step workflows)`,
      )
      for (const [kind, per] of Object.entries(g.perStepKinds).sort((a, b) => b[1] - a[1])) {
        lines.push(`  ${per.toFixed(2).padStart(6)}  ${kind}`)
      }
      lines.push(
        `${system}: statements of one 3-step workflow, by kind (count, summed round-trip ms)`,
      )
      for (const { kind, count, ms } of g.byLength["3"]?.byKind ?? []) {
        lines.push(`  ${String(count).padStart(6)}  ${number(ms).padStart(7)} ms  ${kind}`)
      }
    }
    const c = first("c", system)?.detail as { steadyTrace?: Traced[] } | undefined
    if (options.only.includes("c") && c?.steadyTrace !== undefined && c.steadyTrace.length > 0) {
      lines.push(
        "",
        `${system}: 30 ms in the middle of the ${SHAPES.c.long}-step workflow (send time, round trip, statement)`,
      )
      lines.push(...traceLines(c.steadyTrace, "  "))
    }
    const d = first("d", system)?.detail as
      { timeline?: { wokeAtMs: number; statements: Traced[] } } | undefined
    if (options.only.includes("d") && d?.timeline !== undefined) {
      lines.push(
        "",
        `${system}: one wake-up, statements from the emit on; the code after the wait ran at +${d.timeline.wokeAtMs.toFixed(1)} ms`,
      )
      lines.push(...traceLines(d.timeline.statements, "  "))
    }
  }
  if (lines.length > 0) console.log(lines.join("\n"))
}

const jsonOf = (options: Options, results: Results) => {
  const out: Record<string, unknown> = {}
  for (const shape of options.only) {
    const headline = HEADLINES[shape]
    out[shape] = {
      akter: spreadFor(results[shape].akter, headline.metric.akter)?.median ?? null,
      dbos: spreadFor(results[shape].dbos, headline.metric.dbos)?.median ?? null,
      restate: spreadFor(results[shape].restate, headline.metric.restate)?.median ?? null,
      unit: headline.unit,
      higherIsBetter: headline.higherIsBetter,
    }
    for (const [key, metric, unit, higherIsBetter] of headline.json?.(options) ?? []) {
      out[key] = {
        akter: spreadFor(results[shape].akter, metric)?.median ?? null,
        dbos: null,
        restate: null,
        unit,
        higherIsBetter,
      }
    }
  }
  return out
}

/** Every figure of the run so far, with the trials' detail, in bench/results/last-run.json. */
const saveRaw = async (
  runId: string,
  options: Options,
  ceiling: CeilingResult | undefined,
  results: Results,
  profiles: ReadonlyArray<{ title: string; summary: ProfileSummary }> = [],
) => {
  await mkdir(resultsDir, { recursive: true })
  await writeFile(
    join(resultsDir, "last-run.json"),
    `${JSON.stringify({ runId, options, ceiling, results, profiles }, null, 2)}\n`,
  )
}

/** Every repetition of every shape asked for, each system in turn; results and profiles kept. */
const runShapes = async (
  options: Options,
  systems: readonly System[],
  runId: string,
  bundled: BundledTrials | undefined,
  results: Results,
  ceiling: CeilingResult | undefined,
  profiles: Array<{ title: string; summary: ProfileSummary }>,
): Promise<void> => {
  for (const shape of options.only) {
    // Shape f parks 10,000 executions per trial (minutes each): at most two repetitions.
    const reps = shape === "f" ? Math.min(options.reps, 2) : options.reps
    for (let rep = 1; rep <= reps; rep++) {
      // Alternate who goes first, so drift in the machine's load favours neither side.
      const order = rep % 2 === 1 ? systems : [...systems].reverse()
      for (const system of order) {
        if (!runsShape(system, shape)) continue
        process.stdout.write(`(${shape}) ${system} run ${rep}/${reps} … `)
        const run = await runTrial(options, system, shape, rep, runId, bundled)
        results[shape][system].push(run)
        if (run.result !== undefined) {
          const metric = HEADLINES[shape].metric[system]
          console.log(
            `${number(run.result.metrics[metric] ?? Number.NaN)} ${HEADLINES[shape].unit}`,
          )
        } else console.log(`failed:\n${run.error}`)
        // Kept after every trial, so an interrupted run leaves what it measured.
        await saveRaw(runId, options, ceiling, results)
        if (run.profile !== undefined && rep === 1) {
          profiles.push({
            title: `${system} (${shape}), measured window only`,
            summary: await summarizeProfile(run.profile),
          })
        }
      }
    }
  }
}

const main = async () => {
  const options = parseOptions(process.argv.slice(2))
  const runId = new Date().toISOString().replace(/[:.]/g, "-")
  const installFailed = options.dbos || options.restate ? installPeers() : undefined
  const dbosUnavailable = !options.dbos ? "skipped (--no-dbos or --no-peer)" : installFailed
  const restateWhyNot = !options.restate
    ? "skipped (--no-restate or --no-peer)"
    : (installFailed ?? restateUnavailable())
  if (dbosUnavailable !== undefined) console.log(`DBOS: ${dbosUnavailable}; its column is null`)
  if (restateWhyNot !== undefined) console.log(`Restate: ${restateWhyNot}; its column is null`)
  const systems: System[] = [
    "akter",
    ...(dbosUnavailable === undefined ? (["dbos"] as const) : []),
    ...(restateWhyNot === undefined ? (["restate"] as const) : []),
  ]

  let ceiling: CeilingResult | undefined
  if (options.ceiling && options.only.includes("b")) {
    try {
      ceiling = await measureCeiling(options.databaseUrl)
    } catch (error) {
      console.log(`Postgres ceiling not measured: ${String(error)}`)
    }
  }

  const results = Object.fromEntries(
    SHAPE_IDS.map((shape) => [shape, { akter: [], dbos: [], restate: [] }]),
  ) as unknown as Results
  const profiles: Array<{ title: string; summary: ProfileSummary }> = []
  const bundled = options.profile
    ? undefined
    : await bundleTrials(join(here, ".."), [
        TRIAL_FILES.akter,
        ...Object.values(OWN_TRIAL_FILES),
        RUNNER_PROCESS_FILE,
      ])
  try {
    await runShapes(options, systems, runId, bundled, results, ceiling, profiles)
  } finally {
    bundled?.remove()
  }

  console.log("")
  if (options.scale !== 1)
    console.log(`SMOKE RUN: every count divided by ${options.scale}; not a measurement.\n`)
  printTable(options, results, ceiling)
  printNoise(options, results)
  printDetails(options, results)
  for (const { title, summary } of profiles)
    console.log(["", ...formatProfile(title, summary)].join("\n"))

  await saveRaw(runId, options, ceiling, results, profiles)
  if (options.json !== undefined) {
    await writeFile(options.json, `${JSON.stringify(jsonOf(options, results), null, 2)}\n`)
    console.log(`\nwrote ${options.json}`)
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error)
  process.exit(2)
})
