/**
 * Start-up of the package as a user installs it: the tarball `npm pack` makes of this checkout,
 * installed into a fresh project under the OS temp dir beside effect and zod from the registry
 * (test/support/packedAkter.ts), with the example manifests generated once. Each figure is a
 * process's wall time, from spawn to exit, on plain Node:
 *
 * - `node -e ''`: Node alone, the baseline every other figure is compared with;
 * - `akter --help`;
 * - `akter generate` with nothing changed (it stops before loading a manifest);
 * - `import("akter")`: what an application or a deployed runner pays to load the runtime.
 *
 * - `import("effect/Effect")`: what `import("akter")` loads of its peers, so that the import's own
 *   share can be read off;
 * - `import("effect/Effect"), import("zod")`: what an akter application loads anyway (generated code
 *   imports both; akter loads zod with a client's calls or a runner, not on import).
 *
 * The commands run in turn, round after round, so that the machine's load weighs on all of them
 * alike; each prints its median and 90th percentile of wall time, its median over the baseline's,
 * its median CPU time (user + system, read by a preloaded module at exit: on a shared machine the
 * steadier figure), and the goal of issue 13 (--help and an unchanged generate under 250 ms, the
 * import under 300 ms).
 *
 * The last lines give the import's own share: `import("akter")` less the effect import, in wall
 * time and in CPU time.
 *
 * `--against DIR` packs another checkout of akter (a worktree of the parent commit, say: it must
 * have its node_modules) into a second project, and times its `import("akter")` in the same rounds,
 * right after this one's, so that a change is compared with its parent in the same minutes.
 *
 * Run: node --conditions=akter-source --import tsx bench/startup.ts [--rounds 21] [--against DIR]
 */
import { spawnSync } from "node:child_process"
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { installedProject, REPO } from "../test/support/packedAkter.js"
import { median, percentile } from "./statistics.js"

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "21" }, against: { type: "string" } },
})
const rounds = Number(values.rounds)
const against = values.against === undefined ? undefined : resolve(values.against)

interface Subject {
  readonly label: string
  readonly args: readonly string[]
  /** The project it runs in (default: this checkout's). */
  readonly cwd?: string
  /** Wall-time goal in ms, if the issue sets one. */
  readonly goalMs: number | undefined
}

console.error(
  "packing and installing akter (the tarball is reused while the sources are unchanged)…",
)
const project = installedProject("akter-bench-startup")

/**
 * A project with the checkout at `checkout` packed (its prepack builds it) and installed beside the
 * same effect and zod as this checkout's project, or undefined without `--against`.
 */
const againstProject = (checkout: string | undefined): string | undefined => {
  if (checkout === undefined) return undefined
  const root = mkdtempSync(join(tmpdir(), "akter-bench-against-"))
  const npm = (args: readonly string[], cwd: string) => {
    const result = spawnSync("npm", [...args], { cwd, encoding: "utf8" })
    if (result.status !== 0) {
      throw new Error(`npm ${args.join(" ")} in ${cwd} failed:\n${result.stdout}${result.stderr}`)
    }
  }
  console.error(`packing and installing the akter of ${checkout}…`)
  npm(["pack", "--pack-destination", root], checkout)
  const tarball = readdirSync(root).find((name) => name.endsWith(".tgz"))!
  writeFileSync(join(root, "package.json"), '{ "private": true, "type": "module" }\n')
  const versions = (name: string) =>
    (
      JSON.parse(
        readFileSync(join(project.root, "node_modules", name, "package.json"), "utf8"),
      ) as { version: string }
    ).version
  npm(
    [
      "install",
      "--no-audit",
      "--no-fund",
      `./${tarball}`,
      `effect@${versions("effect")}`,
      `zod@${versions("zod")}`,
    ],
    root,
  )
  return root
}

const againstRoot = againstProject(against)
try {
  cpSync(join(REPO, "manifests"), join(project.root, "manifests"), { recursive: true })
  const bin = join(project.root, "node_modules", "akter", "bin", "akter.js")
  const first = project.run(process.execPath, [bin, "generate"])
  if (first.status !== 0) throw new Error(`akter generate failed:\n${first.stdout}${first.stderr}`)

  const subjects: readonly Subject[] = [
    { label: "node -e ''", args: ["-e", ""], goalMs: undefined },
    { label: "akter --help", args: [bin, "--help"], goalMs: 250 },
    { label: "akter generate (unchanged)", args: [bin, "generate"], goalMs: 250 },
    {
      label: 'import("akter")',
      args: ["--input-type=module", "-e", 'await import("akter")'],
      goalMs: 300,
    },
    ...(againstRoot === undefined
      ? []
      : [
          {
            label: 'import("akter") --against',
            args: ["--input-type=module", "-e", 'await import("akter")'],
            cwd: againstRoot,
            goalMs: 300,
          },
        ]),
    {
      label: "import effect/Effect",
      args: ["--input-type=module", "-e", 'await import("effect/Effect")'],
      goalMs: undefined,
    },
    {
      label: "import effect/Effect + zod",
      args: ["--input-type=module", "-e", 'await import("effect/Effect"); await import("zod")'],
      goalMs: undefined,
    },
  ]
  // Each process writes its own CPU time at exit, through a module preloaded with --import.
  const cpuFile = join(project.root, "cpu-ms.txt")
  const cpuProbe = join(project.root, "cpu-probe.mjs")
  writeFileSync(
    cpuProbe,
    `import { writeFileSync } from "node:fs"\nprocess.on("exit", () => { const used = process.cpuUsage(); writeFileSync(${JSON.stringify(cpuFile)}, String((used.user + used.system) / 1000)) })\n`,
  )
  const samples = new Map<string, number[]>(subjects.map((subject) => [subject.label, []]))
  const cpuSamples = new Map<string, number[]>(subjects.map((subject) => [subject.label, []]))
  const loadBefore = loadavg()[0]!
  for (let round = 0; round < rounds + 1; round++) {
    for (const subject of subjects) {
      const started = process.hrtime.bigint()
      const result = spawnSync(process.execPath, subject.args, {
        cwd: subject.cwd ?? project.root,
        encoding: "utf8",
        env: { ...process.env, NODE_OPTIONS: `--import=${cpuProbe}` },
      })
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      if (result.status !== 0) {
        throw new Error(`${subject.label} failed:\n${result.stdout}${result.stderr}`)
      }
      if (subject.label.startsWith("akter generate") && !result.stdout.includes("is up to date")) {
        throw new Error(`the unchanged generate regenerated:\n${result.stdout}`)
      }
      // The first round warms the file cache; it is not counted.
      if (round > 0) {
        samples.get(subject.label)!.push(ms)
        cpuSamples.get(subject.label)!.push(Number(readFileSync(cpuFile, "utf8")))
      }
    }
  }
  const baseline = median(samples.get(subjects[0]!.label)!)
  const rows = subjects.map((subject) => {
    const times = samples.get(subject.label)!
    const p50 = median(times)
    const verdict =
      subject.goalMs === undefined
        ? ""
        : `${p50 < subject.goalMs ? "met" : "NOT met"} (< ${subject.goalMs} ms)`
    return [
      subject.label,
      `${p50.toFixed(0)} ms`,
      `${percentile(times, 90).toFixed(0)} ms`,
      `${(p50 / baseline).toFixed(2)}×`,
      `+${(p50 - baseline).toFixed(0)} ms`,
      `${median(cpuSamples.get(subject.label)!).toFixed(0)} ms`,
      verdict,
    ]
  })
  const header = ["process", "p50 wall", "p90 wall", "÷ node", "over node", "p50 CPU", "goal (p50)"]
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  )
  const line = (cells: readonly string[]) =>
    cells.map((cell, column) => cell.padEnd(widths[column]!)).join("  ")
  console.log(
    `akter start-up, installed from the packed tarball; ${rounds} rounds; node ${process.version}; ${availableParallelism()} cores; load ${loadBefore.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`,
  )
  console.log(line(header))
  for (const row of rows) console.log(line(row))
  // What importing akter costs beyond the peer it loads, which any akter application loads anyway.
  const p50 = (label: string) => median(samples.get(label)!)
  const cpu = (label: string) => median(cpuSamples.get(label)!)
  const peers = "import effect/Effect"
  for (const label of ['import("akter")', 'import("akter") --against']) {
    if (!samples.has(label)) continue
    console.log(
      `${label}, own share (less ${peers}): ${(p50(label) - p50(peers)).toFixed(0)} ms wall, ${(cpu(label) - cpu(peers)).toFixed(0)} ms CPU; ${peers}: ${(p50(peers) / baseline).toFixed(2)}× node`,
    )
  }
  if (against !== undefined) console.log(`--against: ${against}`)
} finally {
  project.remove()
  if (againstRoot !== undefined) rmSync(againstRoot, { recursive: true, force: true })
}
