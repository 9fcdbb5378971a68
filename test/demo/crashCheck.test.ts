/**
 * The demo's crash check on hand-made witness logs: what counts as a rerun the crash allowed, and
 * what is a broken guarantee.
 */
import { describe, expect, it } from "vitest"
import { checkActivityRuns } from "../../examples/demo/crashCheck.js"
import type { RecordedStep } from "../../runtime/inspect/executionQueries.js"

const KILLED = 100
const REPLACEMENT = 200

const run = (step: string, attempt: number, pid: number, key = `${step}-${attempt}`) => ({
  executionId: "e1",
  step,
  attempt,
  key,
  pid,
})

const recorded = (step: string, attempt: number, settled: boolean): RecordedStep => ({
  executionId: "e1",
  step,
  attempt,
  kind: "activity",
  settled,
})

describe("the demo's crash check", () => {
  it("accepts a pending attempt rerun once by the replacement under its key, and counts retries", () => {
    const check = checkActivityRuns(
      [
        run("reserve", 1, KILLED),
        run("reserve", 2, KILLED),
        run("reserve", 2, REPLACEMENT),
        run("ship", 1, REPLACEMENT),
      ],
      [recorded("reserve", 1, true), recorded("reserve", 2, false)],
      KILLED,
      REPLACEMENT,
    )
    expect(check).toEqual({
      attempts: 3,
      retries: 1,
      stepsAtKill: 2,
      settledAtKill: 1,
      executionsAtKill: 1,
      pendingRerun: 1,
      abandonedRerun: 0,
      mostRuns: 2,
      violations: [],
    })
  })

  it("reports an attempt settled before the kill that ran again after it", () => {
    const check = checkActivityRuns(
      [run("reserve", 1, KILLED), run("reserve", 1, REPLACEMENT)],
      [recorded("reserve", 1, true)],
      KILLED,
      REPLACEMENT,
    )
    expect(check.violations).toEqual([
      "reserve attempt 1 of e1 was settled before the kill and ran again after it",
    ])
  })

  it("reports a rerun under a new idempotency key", () => {
    const check = checkActivityRuns(
      [run("ship", 1, KILLED, "k1"), run("ship", 1, REPLACEMENT, "k2")],
      [recorded("ship", 1, false)],
      KILLED,
      REPLACEMENT,
    )
    expect(check.violations).toEqual(["ship attempt 1 of e1 reran under a new idempotency key"])
  })

  it("counts a rerun within one process apart from the reruns the kill caused", () => {
    const check = checkActivityRuns(
      [run("ship", 1, REPLACEMENT), run("ship", 1, REPLACEMENT)],
      [],
      KILLED,
      REPLACEMENT,
    )
    expect([check.pendingRerun, check.abandonedRerun, check.mostRuns, check.violations]).toEqual([
      0,
      1,
      2,
      [],
    ])
  })
})
