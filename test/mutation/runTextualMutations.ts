/**
 * Runs the textual SQL mutations (textualMutations.ts): copies the working tree to a sandbox, runs
 * each mutation's guard files there once unmutated (a failing baseline judges nothing), then applies
 * each mutation alone, runs its guards, and restores the file. A mutation is killed when a guard
 * fails (or the run exceeds its time limit), and survives when every guard passes.
 *
 * Usage: node --import tsx test/mutation/runTextualMutations.ts [--only id,id] [--files a,b]
 *   [--report path.json]   (exits 1 when a mutation survives)
 */
import { spawnSync } from "node:child_process"
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { textualMutations, type TextualMutation } from "./textualMutations.js"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
/** A run past this is a hang the mutation caused: counted as killed, as Stryker counts a timeout. */
const RUN_LIMIT_MS = 20 * 60_000

export interface TextualResult {
  readonly id: string
  readonly invariant: string
  readonly file: string
  readonly guards: readonly string[]
  readonly status: "killed" | "survived" | "timeout"
  /** The first failing test the run reported, when killed. */
  readonly failed: readonly string[]
  readonly ms: number
}

const option = (name: string): string | undefined => {
  const at = process.argv.indexOf(name)
  return at === -1 ? undefined : process.argv[at + 1]
}

/** The working tree (tracked and untracked, not ignored) copied to a fresh folder, sharing node_modules. */
const makeSandbox = (): string => {
  const sandbox = mkdtempSync(path.join(tmpdir(), "akter-mutation-"))
  const listed = spawnSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    {
      cwd: ROOT,
      encoding: "utf8",
    },
  )
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`)
  for (const file of listed.stdout.split("\0").filter((f) => f !== "")) {
    const from = path.join(ROOT, file)
    const to = path.join(sandbox, file)
    mkdirSync(path.dirname(to), { recursive: true })
    try {
      cpSync(from, to)
    } catch {
      // A file deleted in the working tree but not yet in the index.
    }
  }
  symlinkSync(path.join(ROOT, "node_modules"), path.join(sandbox, "node_modules"), "dir")
  return sandbox
}

/** Applies each edit in turn; throws if a `find` is not there (the list is stale). */
export const applyMutation = (text: string, mutation: TextualMutation): string =>
  mutation.edits.reduce((current, edit) => {
    let at = -1
    for (let n = 0; n < (edit.occurrence ?? 1); n++) {
      at = current.indexOf(edit.find, at + 1)
      if (at === -1) {
        throw new Error(`mutation ${mutation.id}: "${edit.find}" is not in ${mutation.file}`)
      }
    }
    return current.slice(0, at) + edit.replace + current.slice(at + edit.find.length)
  }, text)

const runVitest = (sandbox: string, files: readonly string[]) => {
  const started = Date.now()
  const report = path.join(sandbox, ".vitest-report.json")
  rmSync(report, { force: true })
  const run = spawnSync(
    "npx",
    ["vitest", "run", "--reporter=json", `--outputFile=${report}`, ...files],
    {
      cwd: sandbox,
      encoding: "utf8",
      timeout: RUN_LIMIT_MS,
      maxBuffer: 256 * 1024 * 1024,
      env: { ...process.env, CI: process.env["CI"] ?? "true", NO_COLOR: "1" },
    },
  )
  const output = `${run.stdout ?? ""}${run.stderr ?? ""}`
  return {
    passed: run.status === 0,
    timedOut: run.error !== undefined || run.signal !== null,
    failed: failedTests(report, sandbox),
    output,
    ms: Date.now() - started,
  }
}

/** `file > test name` of every failed test in a vitest JSON report (none if it was not written). */
const failedTests = (report: string, sandbox: string): string[] => {
  let parsed: {
    testResults?: {
      name: string
      status: string
      message?: string
      assertionResults?: { fullName: string; status: string }[]
    }[]
  }
  try {
    parsed = JSON.parse(readFileSync(report, "utf8"))
  } catch {
    return []
  }
  return (parsed.testResults ?? []).flatMap((file) => {
    const name = path.relative(sandbox, file.name)
    const tests = (file.assertionResults ?? [])
      .filter((test) => test.status === "failed")
      .map((test) => `${name} > ${test.fullName}`)
    return tests.length === 0 && file.status === "failed"
      ? [`${name} (${file.message ?? "failed"})`]
      : tests
  })
}

export const runTextualMutations = (
  mutations: readonly TextualMutation[],
  filesOverride?: readonly string[],
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): TextualResult[] => {
  const sandbox = makeSandbox()
  try {
    const guardsOf = (m: TextualMutation) => filesOverride ?? m.guards
    const all = [...new Set(mutations.flatMap(guardsOf))]
    log(`textual mutations: baseline of ${all.length} guard files in ${sandbox}`)
    const baseline = runVitest(sandbox, all)
    if (!baseline.passed) {
      throw new Error(`the unmutated guard files fail; nothing can be judged:\n${baseline.output}`)
    }
    log(`textual mutations: baseline passed in ${Math.round(baseline.ms / 1000)} s`)
    const results: TextualResult[] = []
    for (const mutation of mutations) {
      const file = path.join(sandbox, mutation.file)
      const original = readFileSync(file, "utf8")
      writeFileSync(file, applyMutation(original, mutation))
      try {
        const run = runVitest(sandbox, guardsOf(mutation))
        const status = run.timedOut ? "timeout" : run.passed ? "survived" : "killed"
        results.push({
          id: mutation.id,
          invariant: mutation.invariant,
          file: mutation.file,
          guards: guardsOf(mutation),
          status,
          failed: run.failed,
          ms: run.ms,
        })
        log(`  ${status.padEnd(8)} ${mutation.id} (${Math.round(run.ms / 1000)} s)`)
        for (const line of run.failed.slice(0, 5)) log(`           ${line}`)
      } finally {
        writeFileSync(file, original)
      }
    }
    return results
  } finally {
    rmSync(sandbox, { recursive: true, force: true })
  }
}

if (
  process.argv[1] !== undefined &&
  fileURLToPath(import.meta.url) === path.resolve(process.argv[1])
) {
  const only = option("--only")?.split(",")
  const files = option("--files")?.split(",")
  const report = option("--report")
  const selected = textualMutations.filter((m) => only === undefined || only.includes(m.id))
  const unknown = (only ?? []).filter((id) => !textualMutations.some((m) => m.id === id))
  if (unknown.length > 0) throw new Error(`no textual mutation named ${unknown.join(", ")}`)
  const results = runTextualMutations(selected, files)
  if (report !== undefined) {
    mkdirSync(path.dirname(report), { recursive: true })
    writeFileSync(report, `${JSON.stringify(results, null, 2)}\n`)
  }
  const survived = results.filter((r) => r.status === "survived")
  process.stderr.write(
    `textual mutations: ${results.length - survived.length} killed, ${survived.length} survived\n`,
  )
  process.exitCode = survived.length > 0 ? 1 : 0
}
