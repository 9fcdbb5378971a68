/**
 * Code generation at scale: a synthetic project of 200 workflows × 10 steps (20 owners of 10
 * workflows, every step kind, named types, declared errors, retries, markers, starts across owners)
 * generated cold, then re-run unchanged. Prints the cold time, the time per workflow and the
 * unchanged re-run, in-process (what `generate` itself costs) and as the real CLI (what a build
 * step waits for, Node and tsx start-up included).
 *
 * Run: node --import tsx bench/codegen.ts
 */
import { spawnSync } from "node:child_process"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { generate } from "../codegen/emit/generate.js"

const OWNERS = 20
const WORKFLOWS_PER_OWNER = 10
const STEPS_PER_WORKFLOW = 10
const GOAL_COLD_MS = 3000
const GOAL_UNCHANGED_MS = 300

const ownerName = (o: number) => `Owner${o}`

/** One owner's manifest: 10 workflows whose 10 steps cover every step kind. */
const manifestYaml = (o: number): string => {
  const lines = [
    "akter: 1",
    `owner: ${ownerName(o)}`,
    `description: Synthetic owner ${o} for the code generation benchmark.`,
    "types:",
    "  Money: { amount: integer, currency: { enum: [USD, EUR, GBP] } }",
    '  Address: { street: string, city: string, zip?: string, tags: "string[]" }',
    "events:",
    "  Confirmed: { id: string, amount: Money }",
    "  Changed: { address: Address, note?: string }",
    "  Closed: { reason: { enum: [done, cancelled] } }",
    "workflows:",
  ]
  for (let w = 0; w < WORKFLOWS_PER_OWNER; w++) {
    const next = `${ownerName((o + 1) % OWNERS)}`
    lines.push(
      `  flow${w}:`,
      `    description: Synthetic workflow ${w} of owner ${o}.`,
      '    input: { id: string, total: Money, address: Address, count: integer, flags?: "boolean[]" }',
      "    output: { result: string, amount: Money }",
      "    errors:",
      "      Declined: { code: string }",
      "      Missing: {}",
      "    key: id",
      "    versions:",
      "      fast-path: { min: 0, current: 2 }",
      "    steps:",
    )
    const activities = STEPS_PER_WORKFLOW - 5
    for (let s = 0; s < activities; s++) {
      lines.push(
        `      act${s}:`,
        "        kind: activity",
        `        description: Activity ${s}.`,
        "        input: { id: string, amount: Money, note?: string }",
        `        output: { ref${s}: string, at: number, address: Address }`,
        s % 2 === 0 ? "        errors: [Declined]" : "        errors: [Declined, Missing]",
        "        retry: { attempts: 4, initial: 1s, factor: 2, max: 1m }",
      )
    }
    lines.push(
      "      pause: { kind: sleep, duration: 10m }",
      "      confirmed: { kind: wait, event: Confirmed, timeout: 1d }",
      "      changed: { kind: wait, event: Changed }",
      "      decide: { kind: race, output: { outcome: { enum: [confirmed, changed, expired] } } }",
      `      follow: { kind: start, owner: ${next}, workflow: flow${w} }`,
    )
  }
  return `${lines.join("\n")}\n`
}

/** Wall time, and the CPU time this process spent (the wall time is inflated on a busy machine). */
const milliseconds = async (
  work: () => Promise<unknown>,
): Promise<{ wall: number; cpu: number }> => {
  const started = performance.now()
  const cpu = process.cpuUsage()
  await work()
  const spent = process.cpuUsage(cpu)
  return { wall: performance.now() - started, cpu: (spent.user + spent.system) / 1000 }
}

/** Runs the real CLI; its progress lines (stderr) are kept to show what a user sees. */
const cliMilliseconds = (root: string): { wall: number; progress: string } => {
  const bin = fileURLToPath(new URL("../bin/akter.js", import.meta.url))
  const started = performance.now()
  const result = spawnSync(process.execPath, [bin, "generate"], { cwd: root, encoding: "utf8" })
  if (result.status !== 0) throw new Error(`akter generate failed: ${result.stderr}`)
  return { wall: performance.now() - started, progress: result.stderr.trim() }
}

const root = await mkdtemp(join(tmpdir(), "akter-bench-codegen-"))
try {
  await writeFile(join(root, "package.json"), JSON.stringify({ name: "bench", private: true }))
  await mkdir(join(root, "manifests"))
  for (let o = 0; o < OWNERS; o++) {
    await writeFile(join(root, "manifests", `owner${o}.yaml`), manifestYaml(o))
  }
  const options = {
    root,
    manifestsDir: join(root, "manifests"),
    outDir: join(root, "generated"),
  }
  const workflows = OWNERS * WORKFLOWS_PER_OWNER
  let cold: Awaited<ReturnType<typeof generate>> | undefined
  const coldMs = await milliseconds(async () => {
    cold = await generate(options)
  })
  if (cold?.kind !== "generated") {
    throw new Error(
      `the synthetic manifests did not generate: ${JSON.stringify(cold).slice(0, 2000)}`,
    )
  }
  const unchangedMs = await milliseconds(async () => {
    const again = await generate(options)
    if (again.kind !== "unchanged") throw new Error(`the re-run was not skipped: ${again.kind}`)
  })
  const cliUnchangedMs = cliMilliseconds(root)
  await rm(join(root, ".akter"), { recursive: true })
  await rm(options.outDir, { recursive: true })
  const cliColdMs = cliMilliseconds(root)

  const row = (label: string, ms: number, goal?: number) =>
    `${label.padEnd(36)} ${ms.toFixed(0).padStart(6)} ms${goal === undefined ? "" : `   (goal < ${goal} ms: ${ms < goal ? "met" : "missed"})`}`
  console.log(
    [
      `akter generate: ${workflows} workflows × ${STEPS_PER_WORKFLOW} steps in ${OWNERS} owners, ${cold.files.length} files`,
      row("cold, in-process", coldMs.wall, GOAL_COLD_MS),
      row("cold, in-process, CPU time", coldMs.cpu),
      row("per workflow, cold", coldMs.wall / workflows),
      row("unchanged re-run, in-process", unchangedMs.wall, GOAL_UNCHANGED_MS),
      row("cold, CLI process", cliColdMs.wall),
      row("unchanged re-run, CLI process", cliUnchangedMs.wall),
      `CLI progress lines: ${cliColdMs.progress.split("\n").join(" | ")}`,
      `load average during the run: ${loadavg()
        .map((load) => load.toFixed(2))
        .join(" ")} on ${availableParallelism()} cores`,
    ].join("\n"),
  )
} finally {
  await rm(root, { recursive: true, force: true })
}
