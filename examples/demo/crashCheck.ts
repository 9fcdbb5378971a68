/**
 * The demo's proof that a SIGKILL cost no recorded work. It compares the activity runs the example
 * app witnessed (examples/activityLog.ts) with the step rows on record at the moment of the kill:
 * an attempt settled before the kill must never run again; an attempt still pending may run again
 * — that is the at-least-once part — but always under its original idempotency key. A runner also
 * reruns a pending attempt, in the same process, when it abandons a pass because it lost its bucket
 * leases (a process starved of CPU for longer than the lease): those reruns are counted apart.
 */
import type { RecordedStep } from "../../runtime/inspect/executionQueries.js"
import type { ActivityRun } from "../activityLog.js"

export interface CrashCheck {
  /** Distinct activity attempts that ran (each is recorded once its execution finished). */
  readonly attempts: number
  /** Attempts after a failed first one: retries. */
  readonly retries: number
  /** Step rows on record when the runner was killed, and how many of them were settled. */
  readonly stepsAtKill: number
  readonly settledAtKill: number
  /** Executions with step rows at the kill. */
  readonly executionsAtKill: number
  /** Pending attempts the replacement ran again after the kill, under their original key. */
  readonly pendingRerun: number
  /** Pending attempts a runner ran again after abandoning its own pass (a lapsed lease). */
  readonly abandonedRerun: number
  /** The most times one attempt ran. */
  readonly mostRuns: number
  /** Every way the runs broke the rules, one line each; empty when the crash cost nothing. */
  readonly violations: readonly string[]
}

const attemptKey = (executionId: string, step: string, attempt: number) =>
  JSON.stringify([executionId, step, attempt])

/**
 * @example
 * const check = checkActivityRuns(readActivityRuns(log), stepsAtKill, killed.pid, replacement.pid)
 * if (check.violations.length > 0) process.exitCode = 1
 */
export const checkActivityRuns = (
  runs: readonly ActivityRun[],
  atKill: readonly RecordedStep[],
  killedPid: number,
  replacementPid: number,
): CrashCheck => {
  const settled = new Set(
    atKill
      .filter((step) => step.kind === "activity" && step.settled)
      .map((step) => attemptKey(step.executionId, step.step, step.attempt)),
  )
  const groups = new Map<string, ActivityRun[]>()
  for (const run of runs) {
    const key = attemptKey(run.executionId, run.step, run.attempt)
    groups.set(key, [...(groups.get(key) ?? []), run])
  }
  const violations: string[] = []
  let pendingRerun = 0
  let abandonedRerun = 0
  let retries = 0
  let mostRuns = 0
  for (const [key, group] of groups) {
    const first = group[0]!
    const where = `${first.step} attempt ${first.attempt} of ${first.executionId}`
    mostRuns = Math.max(mostRuns, group.length)
    if (first.attempt > 1) retries += 1
    if (settled.has(key) && group.some((run) => run.pid === replacementPid)) {
      violations.push(`${where} was settled before the kill and ran again after it`)
    }
    if (group.some((run) => run.key !== first.key)) {
      violations.push(`${where} reran under a new idempotency key`)
    }
    group.forEach((run, index) => {
      if (index === 0) return
      if (run.pid === replacementPid && group[index - 1]!.pid === killedPid) pendingRerun += 1
      else abandonedRerun += 1
    })
  }
  return {
    attempts: groups.size,
    retries,
    stepsAtKill: atKill.filter((step) => step.kind !== "version").length,
    settledAtKill: atKill.filter((step) => step.kind !== "version" && step.settled).length,
    executionsAtKill: new Set(atKill.map((step) => step.executionId)).size,
    pendingRerun,
    abandonedRerun,
    mostRuns,
    violations,
  }
}
