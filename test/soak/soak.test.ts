/**
 * The short soak of the default suite: three runner processes, 100 executions over 20 owners, a
 * runner killed and replaced every few seconds (three times) and one paused past its lease. The
 * long one is `npm run soak`.
 */
import { expect, it } from "vitest"
import { describePostgres } from "../support/backends.js"
import { runSoak } from "./soakRun.js"

describePostgres("the short soak", () => {
  it(
    "finishes every execution with its result, records every step once and commits nothing under a stale generation, with runners killed and paused",
    { timeout: 600_000 },
    async () => {
      const report = await runSoak({
        executions: 100,
        owners: 20,
        runners: 3,
        startOverMs: 15_000,
        disruptEveryMs: [1500, 3000],
        maxKills: 3,
        pauseEvery: 3,
        disruptForMs: 60_000,
        settleMs: 120_000,
        leaseMs: 1500,
        recoveryMs: 1500,
      })
      const { resumeLatenciesMs, ...summary } = report
      console.log(
        `short soak: ${JSON.stringify({ ...summary, resumes: resumeLatenciesMs.length })}`,
      )
      expect(report.unexpectedExits).toEqual([])
      expect(report.kills).toBe(3)
      expect(report.wrongResults).toEqual([])
      expect(report.finished).toBe(100)
      expect(report.duplicateSettles).toEqual([])
      expect(report.overwrites).toEqual([])
      expect(report.fenceBreaches).toEqual([])
      expect(report.duplicateFinishes).toEqual([])
      expect(report.journalProblems).toEqual([])
      expect(report.neverRan).toEqual([])
      expect({ steps: report.leftSteps, outbox: report.leftOutbox }).toEqual({
        steps: 0,
        outbox: 0,
      })
    },
  )
})
