/**
 * `npm run mutate`: mutation testing of the modules that carry akter's invariants. Runs StrykerJS
 * once per module of strykerGroups.ts (its guard files only), then the textual SQL mutations of
 * textualMutations.ts, and prints the score of each: killed ÷ (killed + survived), where a mutant
 * no test covers counts as survived, a timeout as killed, and a survivor listed in
 * equivalentMutants.ts (with its reason) is left out. Every other survivor is printed with its
 * place and replacement. Reports go to reports/mutation/.
 *
 * Options: `USAGE` below (`npm run mutate -- --help` prints it, with the groups and mutation ids).
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { equivalentMutants, type EquivalentMutant } from "./equivalentMutants.js"
import { runTextualMutations, type TextualResult } from "./runTextualMutations.js"
import { mutateRanges, strykerGroups, type StrykerGroup } from "./strykerGroups.js"
import { textualMutations } from "./textualMutations.js"

const USAGE = `usage: npm run mutate -- [--groups fence,settle | --no-stryker] [--no-textual] [--textual id,id]
  [--concurrency 2] [--fail-on-survivor] [--from-reports] [--lines FILE] [--tag NAME]
  [--timeout-ms 15000] [--backends pglite]
--fail-on-survivor exits 1 when a mutant survives that equivalentMutants.ts does not list (CI).`

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const REPORTS = path.join(ROOT, "reports/mutation")

const option = (name: string): string | undefined => {
  const at = process.argv.indexOf(name)
  return at === -1 ? undefined : process.argv[at + 1]
}

interface ReportedMutant {
  readonly id: string
  readonly mutatorName: string
  readonly replacement?: string
  readonly status: string
  readonly location: { readonly start: { readonly line: number; readonly column: number } }
  readonly killedBy?: readonly string[]
}

export interface Survivor {
  readonly group: string
  readonly file: string
  readonly line: number
  readonly column: number
  readonly mutator: string
  readonly replacement: string
  /** The source line the mutant is on, trimmed: what equivalentMutants.ts matches. */
  readonly source: string
  readonly status: string
}

export interface GroupScore {
  readonly name: string
  readonly file: string
  readonly killed: number
  readonly survived: number
  readonly equivalent: number
  readonly ignored: number
  readonly score: number
  readonly ms: number
  readonly survivors: readonly Survivor[]
}

const isEquivalent = (survivor: Survivor, listed: readonly EquivalentMutant[]) =>
  listed.some(
    (entry) =>
      entry.file === survivor.file &&
      entry.mutator === survivor.mutator &&
      entry.source === survivor.source &&
      (entry.replacement === undefined || entry.replacement === survivor.replacement) &&
      (entry.column === undefined || entry.column === survivor.column),
  )

const runGroup = (group: StrykerGroup, concurrency: number): GroupScore => {
  const report = path.join(REPORTS, `${reportName(group)}.json`)
  const started = Date.now()
  runStryker(group, concurrency, report)
  return scoreOf(group, report, Date.now() - started)
}

/**
 * `--lines FILE`: mutate only the given lines of each group (`{ "lines": { "rules": [12, 40] } }`),
 * e.g. the lines of the last run's survivors, after adding tests: mutants elsewhere were killed
 * then, and added tests cannot bring them back. An entry `"168-198"` is a range of lines: a
 * mutant is run only if it lies wholly within one entry, so a mutant spanning lines (a multi-line
 * condition, a block) needs a range that holds it. A long group split into ranges run one after
 * another keeps the report of each range (`--tag`), so a run stopped for time keeps what it did.
 */
const onlyLines = (() => {
  const file = option("--lines")
  if (file === undefined) return undefined
  return (JSON.parse(readFileSync(file, "utf8")) as { lines: Record<string, (number | string)[]> })
    .lines
})()

/** `--tag NAME`: the reports go to `<group>-NAME.json`, beside (not over) the group's own. */
const tag = option("--tag")
const reportName = (group: StrykerGroup) =>
  tag === undefined ? group.name : `${group.name}-${tag}`

const rangesOf = (group: StrykerGroup): string[] => {
  const lines = onlyLines?.[group.name]
  if (lines === undefined) return mutateRanges(group, ROOT)
  return lines.map((line) =>
    typeof line === "number" ? `${group.file}:${line}-${line}` : `${group.file}:${line}`,
  )
}

const runStryker = (group: StrykerGroup, concurrency: number, report: string) => {
  rmSync(report, { force: true })
  const config = {
    testRunner: "vitest",
    plugins: ["@stryker-mutator/vitest-runner"],
    vitest: { configFile: "test/mutation/vitest.mutate.config.ts", related: false },
    mutate: rangesOf(group),
    testFiles: group.guards,
    coverageAnalysis: "perTest",
    ignoreStatic: true,
    concurrency,
    // `--timeout-ms`: the time a mutant's tests may take beyond 1.5 times what they took unmutated
    // (a mutant past it counts as killed); raise it on a loaded machine, where tests slow down
    // after StrykerJS timed them.
    timeoutMS: Number(option("--timeout-ms") ?? "15000"),
    dryRunTimeoutMinutes: 10,
    reporters: ["json", "progress"],
    jsonReporter: { fileName: path.relative(ROOT, report) },
    tempDirName: `.stryker-tmp/${reportName(group)}`,
    cleanTempDir: true,
    ignorePatterns: [".scratch", "reports", "bench", "docs", ".stryker-tmp"],
    mutator: { excludedMutations: group.excludedMutations ?? [] },
    thresholds: { high: 90, low: 80, break: null },
    allowConsoleColors: false,
  }
  const configFile = path.join(REPORTS, `${reportName(group)}.stryker.json`)
  writeFileSync(configFile, JSON.stringify(config, null, 2))
  const run = spawnSync("npx", ["stryker", "run", configFile], {
    cwd: ROOT,
    stdio: ["ignore", "inherit", "inherit"],
    // PGlite only: a guard file runs once per mutant, and the JavaScript a mutant changes runs
    // the same on both backends (the textual SQL mutations run both).
    // `--backends postgres` reruns a mutant Postgres alone can tell apart (a notification).
    env: {
      ...process.env,
      CI: process.env["CI"] ?? "true",
      AKTER_TEST_BACKENDS: option("--backends") ?? "pglite",
    },
  })
  if (run.status !== 0) throw new Error(`stryker failed for ${group.name} (exit ${run.status})`)
}

/** The score of a group's StrykerJS JSON report (mutation-testing-report-schema). */
const scoreOf = (group: StrykerGroup, report: string, ms: number): GroupScore => {
  const parsed = JSON.parse(readFileSync(report, "utf8")) as {
    files: Record<string, { source: string; mutants: ReportedMutant[] }>
  }
  let killed = 0
  let equivalent = 0
  let ignored = 0
  const survivors: Survivor[] = []
  for (const [file, { source, mutants }] of Object.entries(parsed.files)) {
    const lines = source.split("\n")
    for (const mutant of mutants) {
      if (mutant.status === "Killed" || mutant.status === "Timeout") killed += 1
      else if (mutant.status === "Survived" || mutant.status === "NoCoverage") {
        const survivor: Survivor = {
          group: group.name,
          file: path.relative(ROOT, path.resolve(ROOT, file)),
          line: mutant.location.start.line,
          column: mutant.location.start.column,
          mutator: mutant.mutatorName,
          replacement: mutant.replacement ?? "",
          source: (lines[mutant.location.start.line - 1] ?? "").trim(),
          status: mutant.status,
        }
        if (isEquivalent(survivor, equivalentMutants)) equivalent += 1
        else survivors.push(survivor)
      } else ignored += 1
    }
  }
  const survived = survivors.length
  return {
    name: group.name,
    file: group.file,
    killed,
    survived,
    equivalent,
    ignored,
    score: killed + survived === 0 ? 100 : (100 * killed) / (killed + survived),
    ms,
    survivors,
  }
}

const percent = (score: number) => `${score.toFixed(1)}%`

if (
  process.argv[1] !== undefined &&
  fileURLToPath(import.meta.url) === path.resolve(process.argv[1])
) {
  if (process.argv.includes("--help") || process.argv.includes("-h")) {
    console.log(
      [
        USAGE,
        `groups: ${strykerGroups.map((g) => g.name).join(", ")}`,
        `textual mutations: ${textualMutations.map((m) => m.id).join(", ")}`,
      ].join("\n"),
    )
    process.exit(0)
  }
  mkdirSync(REPORTS, { recursive: true })
  const names = option("--groups")?.split(",")
  const unknown = (names ?? []).filter((name) => !strykerGroups.some((g) => g.name === name))
  if (unknown.length > 0) throw new Error(`no mutation group named ${unknown.join(", ")}`)
  const groups = process.argv.includes("--no-stryker")
    ? []
    : strykerGroups.filter((g) => names === undefined || names.includes(g.name))
  const concurrency = Number(option("--concurrency") ?? "2")
  const started = Date.now()
  // `--from-reports`: score the JSON reports an earlier run left, without running anything.
  const fromReports = process.argv.includes("--from-reports")
  const scores = groups.map((group) => {
    if (fromReports) return scoreOf(group, path.join(REPORTS, `${reportName(group)}.json`), 0)
    process.stderr.write(
      `\nmutate: ${group.name} (${group.file}) against ${group.guards.join(", ")}\n`,
    )
    return runGroup(group, concurrency)
  })
  const textualIds = option("--textual")?.split(",")
  const textual: TextualResult[] =
    process.argv.includes("--no-textual") || fromReports
      ? []
      : runTextualMutations(
          textualMutations.filter((m) => textualIds === undefined || textualIds.includes(m.id)),
        )
  const totalMs = Date.now() - started

  const lines = [
    "",
    "module | killed | survived | equivalent | score | time",
    "--- | --- | --- | --- | --- | ---",
  ]
  for (const s of scores) {
    lines.push(
      `${s.name} (${s.file}) | ${s.killed} | ${s.survived} | ${s.equivalent} | ${percent(s.score)} | ${Math.round(s.ms / 1000)} s`,
    )
  }
  const killed = scores.reduce((n, s) => n + s.killed, 0)
  const survived = scores.reduce((n, s) => n + s.survived, 0)
  const equivalent = scores.reduce((n, s) => n + s.equivalent, 0)
  if (scores.length > 0) {
    lines.push(
      `all StrykerJS modules | ${killed} | ${survived} | ${equivalent} | ${percent(killed + survived === 0 ? 100 : (100 * killed) / (killed + survived))} |`,
    )
  }
  const textualSurvivors = textual.filter((t) => t.status === "survived")
  if (textual.length > 0) {
    lines.push(
      `textual SQL mutations | ${textual.length - textualSurvivors.length} | ${textualSurvivors.length} | 0 | ${percent((100 * (textual.length - textualSurvivors.length)) / textual.length)} | ${Math.round(textual.reduce((n, t) => n + t.ms, 0) / 1000)} s`,
    )
  }
  lines.push("", `total time: ${Math.round(totalMs / 1000)} s`)
  const survivors = scores.flatMap((s) => s.survivors)
  if (survivors.length > 0) {
    lines.push("", "surviving mutants (not listed as equivalent):")
    for (const s of survivors) {
      lines.push(
        `- ${s.file}:${s.line}:${s.column} ${s.mutator} → ${JSON.stringify(s.replacement)} (${s.status}): ${s.source}`,
      )
    }
  }
  for (const t of textualSurvivors) lines.push(`- textual ${t.id} survived: ${t.invariant}`)
  process.stdout.write(`${lines.join("\n")}\n`)
  writeFileSync(
    path.join(REPORTS, tag === undefined ? "summary.json" : `summary-${tag}.json`),
    `${JSON.stringify({ totalMs, scores, textual }, null, 2)}\n`,
  )
  writeFileSync(
    path.join(REPORTS, tag === undefined ? "summary.md" : `summary-${tag}.md`),
    `${lines.join("\n")}\n`,
  )
  if (
    process.argv.includes("--fail-on-survivor") &&
    (survivors.length > 0 || textualSurvivors.length > 0)
  ) {
    process.exitCode = 1
  }
}
