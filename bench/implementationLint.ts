/**
 * Cold run time of `akter check --app`, the implementation lint, against baselines measured in the
 * same rounds. Each figure is a process's wall time from spawn to exit, and its CPU time (user +
 * system, written by a preloaded module at exit: on a shared machine the steadier figure):
 *
 * - `node -e ''`: Node alone;
 * - `tsc --version`: a process that loads the TypeScript compiler and does nothing with it, what the
 *   lint cannot do without;
 * - `akter check --app examples/app.ts`: the repository's example app (3 workflows);
 * - `akter check --app 'apps/*.ts'` on a synthetic project of 200 workflows (20 owners of 10, each
 *   with two activities, a sleep and a marker; one file of implementations per owner and a shared
 *   helper file), generated once into the OS temp dir with `akter generate`; beside it the same
 *   command without `--app`, so that the lint's own share can be read off.
 *
 * Each `check` runs twice: from the repository's sources (bin/akter.js loads them through tsx) and
 * from the package as a user installs it (the tarball `npm pack` makes of this checkout, compiled
 * code on plain Node; test/support/packedAkter.ts), which is the figure the goal is about: the lint
 * of each app under 5 s cold (issue 16).
 *
 * Run: node --conditions=akter-source --import tsx bench/implementationLint.ts [--rounds 5]
 */
import { spawnSync } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { installedProject } from "../test/support/packedAkter.js"
import { median, percentile } from "./statistics.js"

const { values } = parseArgs({ options: { rounds: { type: "string", default: "5" } } })
const rounds = Number(values.rounds)
const REPO = join(import.meta.dirname, "..")
const AKTER = join(REPO, "bin", "akter.js")
const OWNERS = 20
const WORKFLOWS_PER_OWNER = 10
const GOAL_MS = 5000

const ownerName = (o: number) => `Owner${o}`
const workflowName = (w: number) => `flow${w}`

const manifestOf = (o: number) =>
  [
    "akter: 1",
    `owner: ${ownerName(o)}`,
    "workflows:",
    ...Array.from({ length: WORKFLOWS_PER_OWNER }, (_, w) =>
      [
        `  ${workflowName(w)}:`,
        "    input: { id: string, amount: integer }",
        "    output: { total: integer }",
        "    versions:",
        "      doubled: { min: 0, current: 1 }",
        "    steps:",
        "      load:",
        "        kind: activity",
        "        input: { id: string }",
        "        output: { amount: integer }",
        "      pause: { kind: sleep, duration: 1m }",
        "      store:",
        "        kind: activity",
        "        input: { id: string, total: integer }",
      ].join("\n"),
    ),
    "",
  ].join("\n")

const appOf = (o: number) =>
  [
    `/** The implementations of owner ${ownerName(o)}. */`,
    'import { Effect } from "effect"',
    `import { ${ownerName(o)} } from "../generated/index.js"`,
    'import { addUp, stampOf } from "./shared.js"',
    "",
    ...Array.from({ length: WORKFLOWS_PER_OWNER }, (_, w) =>
      [
        `export const ${workflowName(w)} = ${ownerName(o)}.${workflowName(w)}.implement({`,
        "  activities: {",
        "    load: async ({ id }) => ({ amount: id.length + Date.now() % 7 }),",
        "    store: async () => undefined,",
        "  },",
        "  body: (input, wf) =>",
        "    Effect.gen(function* () {",
        "      const { amount } = yield* wf.load({ id: input.id })",
        "      yield* wf.pause()",
        '      const doubled = (yield* wf.version("doubled")) >= 1',
        "      const total = addUp(amount, input.amount, doubled)",
        // One body in the whole app reaches the clock, so the lint has something to find.
        o === 0 && w === 0 ? "      yield* Effect.log(stampOf(input.id))" : "",
        "      yield* wf.store({ id: input.id, total })",
        "      return { total }",
        "    }),",
        "})",
        "",
      ]
        .filter((line) => line !== "")
        .join("\n"),
    ),
  ].join("\n")

const SHARED = [
  "/** Helpers every body of the synthetic app calls. */",
  "export const addUp = (a: number, b: number, doubled: boolean): number => (doubled ? 2 : 1) * (a + b)",
  "export const stampOf = (id: string): string => `${id}@${Date.now()}`",
  "",
].join("\n")

/** Writes the synthetic project and generates its SDK; returns its root. */
const syntheticProject = (): string => {
  const root = mkdtempSync(join(tmpdir(), "akter-bench-lint-"))
  writeFileSync(join(root, "package.json"), '{ "name": "synthetic", "type": "module" }\n')
  mkdirSync(join(root, "manifests"))
  mkdirSync(join(root, "apps"))
  for (let o = 0; o < OWNERS; o++) {
    writeFileSync(join(root, "manifests", `owner${o}.yaml`), manifestOf(o))
    writeFileSync(join(root, "apps", `owner${o}.ts`), appOf(o))
  }
  writeFileSync(join(root, "apps", "shared.ts"), SHARED)
  const generated = spawnSync(process.execPath, [AKTER, "generate"], {
    cwd: root,
    encoding: "utf8",
  })
  if (generated.status !== 0) {
    throw new Error(`akter generate failed:\n${generated.stdout}${generated.stderr}`)
  }
  return root
}

interface Subject {
  readonly label: string
  readonly cwd: string
  readonly args: readonly string[]
  /** The exit code it must end with; the check of the synthetic app finds its planted clock read. */
  readonly exitCode: number
  readonly expectOut?: string
  readonly goalMs?: number
}

console.error(
  "packing and installing akter (the tarball is reused while the sources are unchanged)…",
)
const installed = installedProject("akter-bench-lint")
cpSync(join(REPO, "manifests"), join(installed.root, "manifests"), { recursive: true })
cpSync(join(REPO, "examples"), join(installed.root, "examples"), { recursive: true })
const INSTALLED_AKTER = join(installed.root, "node_modules", "akter", "bin", "akter.js")
const installedGenerate = installed.run(process.execPath, [INSTALLED_AKTER, "generate"])
if (installedGenerate.status !== 0) {
  throw new Error(`akter generate failed:\n${installedGenerate.stdout}${installedGenerate.stderr}`)
}
console.error(`generating a synthetic project of ${OWNERS * WORKFLOWS_PER_OWNER} workflows…`)
const synthetic = syntheticProject()
try {
  const tsc = join(createRequire(import.meta.url).resolve("typescript"), "../../bin/tsc")
  const compiled = (subject: Subject, cwd: string): Subject => ({
    ...subject,
    label: `${subject.label}, installed`,
    cwd,
    args: [INSTALLED_AKTER, ...subject.args.slice(1)],
  })
  const fromSources: readonly Subject[] = [
    { label: "node -e ''", cwd: REPO, args: ["-e", ""], exitCode: 0 },
    { label: "tsc --version", cwd: REPO, args: [tsc, "--version"], exitCode: 0 },
    {
      label: "check --app examples/app.ts",
      cwd: REPO,
      args: [AKTER, "check", "--app", "examples/app.ts"],
      exitCode: 0,
      expectOut: "0 errors",
      goalMs: GOAL_MS,
    },
    {
      label: `check, no --app (${OWNERS * WORKFLOWS_PER_OWNER} workflows)`,
      cwd: synthetic,
      args: [AKTER, "check"],
      exitCode: 0,
    },
    {
      label: `check --app (${OWNERS * WORKFLOWS_PER_OWNER} workflows)`,
      cwd: synthetic,
      args: [AKTER, "check", "--app", "apps/*.ts"],
      exitCode: 1,
      expectOut: "apps/shared.ts:3:57: error[nondeterministic-call]",
      goalMs: GOAL_MS,
    },
  ]
  const subjects: readonly Subject[] = [
    ...fromSources,
    ...fromSources
      .filter((subject) => subject.args[0] === AKTER)
      .map((subject) => compiled(subject, subject.cwd === REPO ? installed.root : subject.cwd)),
  ]
  const cpuFile = join(synthetic, "cpu-ms.txt")
  const cpuProbe = join(synthetic, "cpu-probe.mjs")
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
        cwd: subject.cwd,
        encoding: "utf8",
        env: { ...process.env, NODE_OPTIONS: `--import=${cpuProbe}` },
      })
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      if (
        result.status !== subject.exitCode ||
        (subject.expectOut !== undefined && !result.stdout.includes(subject.expectOut))
      ) {
        throw new Error(
          `${subject.label} exited ${result.status}:\n${result.stdout.slice(0, 2000)}${result.stderr}`,
        )
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
    return [
      subject.label,
      `${p50.toFixed(0)} ms`,
      `${percentile(times, 90).toFixed(0)} ms`,
      `${(p50 / baseline).toFixed(2)}×`,
      `${median(cpuSamples.get(subject.label)!).toFixed(0)} ms`,
      subject.goalMs === undefined
        ? ""
        : `${p50 < subject.goalMs ? "met" : "NOT met"} (< ${subject.goalMs} ms)`,
    ]
  })
  const header = ["process", "p50 wall", "p90 wall", "÷ node", "p50 CPU", "goal (p50 wall)"]
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  )
  const line = (cells: readonly string[]) =>
    cells.map((cell, column) => cell.padEnd(widths[column]!)).join("  ")
  console.log(
    `akter check --app, cold processes from the repository's sources; ${rounds} rounds; node ${process.version}; ${availableParallelism()} cores; load ${loadBefore.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`,
  )
  console.log(line(header))
  for (const row of rows) console.log(line(row))
} finally {
  rmSync(synthetic, { recursive: true, force: true })
  installed.remove()
}
