/**
 * A witness of side effects: when `AKTER_EXAMPLE_ACTIVITY_LOG` names a file, every example activity
 * appends one JSON line (execution, step, attempt, idempotency key, process id) before it does
 * anything else. The demo reads it to show that a runner killed with SIGKILL cost no recorded work:
 * after the restart, only attempts that were still pending ran again, under the same key.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs"
import type { ActivityContext } from "akter"

export interface ActivityRun {
  readonly executionId: string
  readonly step: string
  readonly attempt: number
  readonly key: string
  readonly pid: number
}

export const ACTIVITY_LOG_VARIABLE = "AKTER_EXAMPLE_ACTIVITY_LOG"

/** Appends this attempt's run to the log, if one is configured. */
export const recordActivityRun = (ctx: ActivityContext): void => {
  const file = process.env[ACTIVITY_LOG_VARIABLE]
  if (file === undefined || file === "") return
  const run: ActivityRun = {
    executionId: ctx.executionId,
    step: ctx.step,
    attempt: ctx.attempt,
    key: ctx.idempotencyKey(),
    pid: process.pid,
  }
  appendFileSync(file, `${JSON.stringify(run)}\n`)
}

/** Every run in the log, oldest first; a torn last line (the writer was killed) is skipped. */
export const readActivityRuns = (file: string): ActivityRun[] => {
  if (!existsSync(file)) return []
  const runs: ActivityRun[] = []
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue
    try {
      runs.push(JSON.parse(line) as ActivityRun)
    } catch {
      // A process killed mid-append leaves half a line; the attempt it began reruns and logs again.
    }
  }
  return runs
}
