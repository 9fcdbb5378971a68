/**
 * Code generation at scale: a synthetic project of 200 workflows × 10 steps (20 owners of 10
 * workflows, every step kind, named types, declared errors, retries, markers, starts across owners)
 * generated cold, then re-run unchanged. Prints the cold time (wall and CPU, with how it splits
 * between validating, emitting and writing), the time per workflow and the unchanged re-run,
 * in-process (what `generate` itself costs) and as the real CLI (what a build step waits for, Node
 * and tsx start-up included).
 *
 * Every cold run is a fresh process: in one process the second run would find prettier's and the
 * loader's code already optimised. The machine may be shared, so each figure is the median of
 * `--reps` runs with its range, and CPU time is printed beside wall time (it is what load inflates
 * least). `--baseline DIR` also times another checkout's generator (a folder holding its
 * `codegen/`, `runtime/`, `package.json` and `node_modules`), alternating with this one, so that a
 * change is compared under the same load.
 *
 * Run: node --import tsx bench/codegen.ts [--reps 5] [--baseline /tmp/akter-before]
 */
import { spawnSync } from "node:child_process"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import type { GenerateOptions, GenerateReport } from "../codegen/emit/generate.js"
import {
  STEPS_PER_WORKFLOW,
  syntheticManifests,
  WORKFLOWS_PER_OWNER,
} from "../test/codegen/syntheticManifests.js"

const OWNERS = 20
const WORKFLOWS = OWNERS * WORKFLOWS_PER_OWNER
const GOAL_COLD_MS = 3000
const GOAL_UNCHANGED_MS = 300

const REPO = fileURLToPath(new URL("../", import.meta.url))
const THIS_FILE = fileURLToPath(import.meta.url)

/** A project folder holding the synthetic manifests. */
const syntheticProject = async (): Promise<string> => {
  const root = await mkdtemp(join(tmpdir(), "akter-bench-codegen-"))
  await writeFile(join(root, "package.json"), JSON.stringify({ name: "bench", private: true }))
  await mkdir(join(root, "manifests"))
  for (const { file, text } of syntheticManifests(OWNERS)) {
    await writeFile(join(root, "manifests", file), text)
  }
  return root
}

/** What one trial process measured, in milliseconds. */
interface Trial {
  readonly files: number
  readonly coldWall: number
  readonly coldCpu: number
  /** Wall time from the start to each stage's progress report, and to the end. */
  readonly stages: Readonly<Record<"load" | "emit" | "write" | "end", number>>
  readonly unchangedWall: number
}

const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000

/**
 * The child's side: one cold generation with the generator of `generatorRoot` into `projectRoot`,
 * then an unchanged re-run, printed as one JSON line.
 */
const runTrial = async (generatorRoot: string, projectRoot: string): Promise<void> => {
  const { generate } = (await import(join(generatorRoot, "codegen/emit/generate.ts"))) as {
    generate: (options: GenerateOptions) => Promise<GenerateReport>
  }
  await rm(join(projectRoot, "generated"), { recursive: true, force: true })
  await rm(join(projectRoot, ".akter"), { recursive: true, force: true })
  const stages: Record<string, number> = {}
  const started = performance.now()
  const options: GenerateOptions = {
    root: projectRoot,
    manifestsDir: join(projectRoot, "manifests"),
    outDir: join(projectRoot, "generated"),
    onProgress: (progress) => {
      stages[progress.stage] = performance.now() - started
    },
  }
  const cpu = process.cpuUsage()
  const cold = await generate(options)
  const coldCpu = cpuMs(process.cpuUsage(cpu))
  const coldWall = performance.now() - started
  if (cold.kind !== "generated") {
    throw new Error(
      `the synthetic manifests did not generate: ${JSON.stringify(cold).slice(0, 2000)}`,
    )
  }
  const again = performance.now()
  const rerun = await generate(options)
  if (rerun.kind !== "unchanged") throw new Error(`the re-run was not skipped: ${rerun.kind}`)
  const trial: Trial = {
    files: cold.files.length,
    coldWall,
    coldCpu,
    stages: {
      load: stages["load"] ?? 0,
      emit: stages["emit"] ?? 0,
      write: stages["write"] ?? coldWall,
      end: coldWall,
    },
    unchangedWall: performance.now() - again,
  }
  console.log(JSON.stringify(trial))
}

const trialIn = (generatorRoot: string, projectRoot: string): Trial => {
  const result = spawnSync(
    process.execPath,
    ["--import", "tsx", THIS_FILE, "--trial", generatorRoot, projectRoot],
    { cwd: REPO, encoding: "utf8" },
  )
  if (result.status !== 0) throw new Error(`trial failed: ${result.stderr}`)
  return JSON.parse(result.stdout.trim().split("\n").at(-1)!) as Trial
}

/** Runs the real CLI; its progress lines (stderr) are kept to show what a user sees. */
const cliMilliseconds = (root: string): { wall: number; progress: string } => {
  const bin = join(REPO, "bin/akter.js")
  const started = performance.now()
  const result = spawnSync(process.execPath, [bin, "generate"], { cwd: root, encoding: "utf8" })
  if (result.status !== 0) throw new Error(`akter generate failed: ${result.stderr}`)
  return { wall: performance.now() - started, progress: result.stderr.trim() }
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** `1234 ms [1100–1500]`: the median and the range of a figure over the repetitions. */
const spread = (values: readonly number[]) =>
  `${median(values).toFixed(0).padStart(6)} ms [${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}]`

const goal = (values: readonly number[], limit: number) =>
  `   (goal < ${limit} ms: ${median(values) < limit ? "met" : "missed"})`

const report = (label: string, trials: readonly Trial[]): string[] => {
  const of = (pick: (trial: Trial) => number) => trials.map(pick)
  const row = (name: string, values: readonly number[], suffix = "") =>
    `  ${name.padEnd(34)} ${spread(values)}${suffix}`
  return [
    `${label}: ${trials[0]!.files} files, ${trials.length} cold processes`,
    row(
      "cold, in-process, wall",
      of((t) => t.coldWall),
      goal(
        of((t) => t.coldWall),
        GOAL_COLD_MS,
      ),
    ),
    row(
      "cold, in-process, CPU",
      of((t) => t.coldCpu),
      goal(
        of((t) => t.coldCpu),
        GOAL_COLD_MS,
      ),
    ),
    row(
      "  validating the manifests",
      of((t) => t.stages.emit - t.stages.load),
    ),
    row(
      "  emitting and formatting",
      of((t) => t.stages.write - t.stages.emit),
    ),
    row(
      "  writing the folder",
      of((t) => t.stages.end - t.stages.write),
    ),
    row(
      "per workflow, cold, wall",
      of((t) => t.coldWall / WORKFLOWS),
    ),
    row(
      "unchanged re-run, in-process",
      of((t) => t.unchangedWall),
      goal(
        of((t) => t.unchangedWall),
        GOAL_UNCHANGED_MS,
      ),
    ),
  ]
}

const { values } = parseArgs({
  options: {
    reps: { type: "string", default: "5" },
    baseline: { type: "string" },
    trial: { type: "boolean", default: false },
  },
  allowPositionals: true,
  strict: false,
})

if (values.trial === true) {
  const [generatorRoot, projectRoot] = process.argv.slice(-2) as [string, string]
  await runTrial(generatorRoot, projectRoot)
} else {
  const reps = Number(values.reps)
  const baseline = typeof values.baseline === "string" ? resolve(values.baseline) : undefined
  const current = await syntheticProject()
  const before = baseline === undefined ? undefined : await syntheticProject()
  try {
    const loads: number[] = []
    const trials: Trial[] = []
    const baselineTrials: Trial[] = []
    for (let rep = 0; rep < reps; rep++) {
      loads.push(loadavg()[0]!)
      // alternate who goes first, so a burst of load on the machine hits both sides alike
      const order = rep % 2 === 0 ? ["current", "baseline"] : ["baseline", "current"]
      for (const side of order) {
        if (side === "current") trials.push(trialIn(REPO, current))
        else if (baseline !== undefined) baselineTrials.push(trialIn(baseline, before!))
      }
    }
    const cliUnchanged = cliMilliseconds(current)
    await rm(join(current, ".akter"), { recursive: true })
    await rm(join(current, "generated"), { recursive: true })
    const cliCold = cliMilliseconds(current)
    console.log(
      [
        `akter generate: ${WORKFLOWS} workflows × ${STEPS_PER_WORKFLOW} steps in ${OWNERS} owners; median [min–max] of ${reps}`,
        ...report("this checkout", trials),
        ...(baseline === undefined ? [] : report(`baseline ${baseline}`, baselineTrials)),
        `  ${"cold, CLI process, wall".padEnd(34)} ${cliCold.wall.toFixed(0).padStart(6)} ms`,
        `  ${"unchanged re-run, CLI process, wall".padEnd(34)} ${cliUnchanged.wall.toFixed(0).padStart(6)} ms`,
        `CLI progress lines: ${cliCold.progress.split("\n").join(" | ")}`,
        `1-minute load average at each repetition: ${loads.map((load) => load.toFixed(1)).join(" ")} on ${availableParallelism()} cores`,
      ].join("\n"),
    )
  } finally {
    await rm(current, { recursive: true, force: true })
    if (before !== undefined) await rm(before, { recursive: true, force: true })
  }
}
