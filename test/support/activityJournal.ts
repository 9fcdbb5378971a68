/**
 * The activity journal of multi-process tests: every activity of a test app appends one line — which
 * execution, step and attempt ran, under which idempotency key, in which process, when — to the file
 * `ACTIVITY_JOURNAL` names, before it does anything else. The parent reads it to count how often
 * each attempt ran and to check that reruns saw the same key. Small appends to one file with
 * `O_APPEND` do not interleave, so several runner processes can share a journal.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs"
import type { ActivityContext } from "../../runtime/index.js"

export const JOURNAL_VARIABLE = "ACTIVITY_JOURNAL"

export interface JournalEntry {
  readonly execution: string
  readonly step: string
  readonly attempt: number
  readonly key: string
  readonly pid: number
  /** Local epoch milliseconds when the run began. */
  readonly at: number
  /** What the activity saw of its execution, for attribution tests. */
  readonly ownerId: string
  readonly caller: ActivityContext["caller"]
  /** A free-form mark (e.g. `"undo"` for a compensation). */
  readonly note?: string
}

/** Appends the line of one activity run (child side); returns the attempt's idempotency key. */
export const journalRun = (ctx: ActivityContext, note?: string): string => {
  const key = ctx.idempotencyKey()
  const file = process.env[JOURNAL_VARIABLE]
  if (file !== undefined && file !== "") {
    const entry: JournalEntry = {
      execution: ctx.executionId,
      step: ctx.step,
      attempt: ctx.attempt,
      key,
      pid: process.pid,
      at: Date.now(),
      ownerId: ctx.ownerId,
      caller: ctx.caller,
      ...(note === undefined ? {} : { note }),
    }
    appendFileSync(file, `${JSON.stringify(entry)}\n`)
  }
  return key
}

/** Every complete line of a journal (a line being written by a process killed mid-append is skipped). */
export const readJournal = (file: string): JournalEntry[] => {
  if (!existsSync(file)) return []
  const entries: JournalEntry[] = []
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue
    try {
      entries.push(JSON.parse(line) as JournalEntry)
    } catch {
      // A partial last line: its process died writing it, and the run it describes never started.
    }
  }
  return entries
}

export const attemptKey = (entry: Pick<JournalEntry, "execution" | "step" | "attempt">) =>
  `${entry.execution} ${entry.step}#${entry.attempt}`

/** The runs of each attempt, in journal order. */
export const runsByAttempt = (entries: readonly JournalEntry[]): Map<string, JournalEntry[]> => {
  const runs = new Map<string, JournalEntry[]>()
  for (const entry of entries) {
    const key = attemptKey(entry)
    const list = runs.get(key)
    if (list === undefined) runs.set(key, [entry])
    else list.push(entry)
  }
  return runs
}

/**
 * What breaks "an activity runs at least once and at most once per kill plus one, and every rerun
 * of an attempt sees the attempt's idempotency key": one line per offending attempt, empty when
 * none does.
 */
export const journalProblems = (entries: readonly JournalEntry[], kills: number): string[] => {
  const problems: string[] = []
  for (const [attempt, runs] of runsByAttempt(entries)) {
    if (runs.length > kills + 1) {
      problems.push(`${attempt} ran ${runs.length} times with ${kills} kill(s)`)
    }
    const keys = new Set(runs.map((run) => run.key))
    if (keys.size > 1)
      problems.push(`${attempt} ran under ${keys.size} keys: ${[...keys].join(", ")}`)
  }
  return problems
}
