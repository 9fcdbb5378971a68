/**
 * Two deployments of one workflow on one database (a rolling deploy): a runner built from a
 * manifest that lacks a step or a version marker an execution needs leaves that execution untouched
 * — it logs why, records nothing, runs none of its activities — and a runner that has them finishes
 * it.
 */
import { expect, it } from "vitest"
import { makeOwnerClient, type Execution as TypedExecution } from "../../runtime/index.js"
import { readJournal } from "../support/activityJournal.js"
import { describePostgres } from "../support/backends.js"
import { ownerIdInBuckets } from "../support/leaseView.js"
import { logLines, type FleetRunner } from "../support/runnerFleet.js"
import { withScenario, type Scenario } from "../support/scenarioDatabase.js"
import { waitUntil } from "../support/waitUntil.js"
import { readWriteAudit } from "../support/writeAudit.js"
import { fullRegistration } from "./evolvingWorkflows.js"

const FULL_APP = "test/multi/evolvingFullApp.ts"
const LACKING_APP = "test/multi/evolvingLackingApp.ts"
const ARGS = ["--lease-ms", "1000", "--recovery-ms", "1000", "--pool-size", "4"]
type Execution = TypedExecution<unknown, unknown>

const LEFT_ALONE = "execution incompatible with this runner; left for a compatible one"

const range = (from: number, to: number) =>
  new Set(Array.from({ length: to - from }, (_, i) => from + i))

/** The problems a runner logged for each execution it left alone. */
const leftAlone = (runner: FleetRunner): Map<string, string[]> => {
  const problems = new Map<string, string[]>()
  for (const line of logLines(runner.child.output())) {
    if (line.message === LEFT_ALONE) {
      problems.set(String(line["executionId"]), line["problems"] as string[])
    }
  }
  return problems
}

const startBoth = async (scenario: Scenario, buckets: ReadonlySet<number>) => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = makeOwnerClient<any>(scenario.akter, await fullRegistration())
  const stepRun = await client.stepGone.start(ownerIdInBuckets("step", buckets, "Evolving"))
  const markerRun = await client.markerGone.start(ownerIdInBuckets("marker", buckets, "Evolving"))
  return { stepRun, markerRun }
}

/**
 * Both executions finish, once a runner with the full manifest serves, with its results: every step
 * ran, the marker read 1.
 */
const expectFinishedInFull = async (stepRun: Execution, markerRun: Execution) => {
  expect(await stepRun.result({ timeout: "30 seconds" })).toEqual({
    _tag: "Success",
    value: { steps: ["a", "extra"] },
  })
  expect(await markerRun.result({ timeout: "30 seconds" })).toEqual({
    _tag: "Success",
    value: { marker: 1 },
  })
}

const expectUntouched = async (scenario: Scenario, executionIds: readonly string[]) => {
  const rows = await scenario.db
    .selectFrom("akter.executions")
    .select(["execution_id", "status"])
    .where("execution_id", "in", executionIds)
    .orderBy("execution_id")
    .execute()
  expect(rows).toEqual(
    [...executionIds].sort().map((id) => ({ execution_id: id, status: "running" })),
  )
  const steps = await scenario.db
    .selectFrom("akter.steps")
    .select(["execution_id", "step", "kind"])
    .where("execution_id", "in", executionIds)
    .execute()
  // Only the marker the start recorded.
  expect(steps.map((row) => [row.step, row.kind])).toEqual([["fraud", "version"]])
  expect((await readWriteAudit(scenario.db)).settles).toEqual([])
  expect(readJournal(scenario.journal)).toEqual([])
}

describePostgres("a runner that lacks a step or a marker", () => {
  it(
    "leaves the execution untouched, and a runner that has them finishes it",
    { timeout: 300_000 },
    () =>
      withScenario(async (scenario) => {
        const lacking = scenario.fleet({ app: LACKING_APP, args: ARGS }).spawn()
        await lacking.runnerId()
        // A runner holding every bucket gives back the highest first: the joining runner gets these.
        const { stepRun, markerRun } = await startBoth(scenario, range(128, 256))
        const problems = await waitUntil(
          "the lacking runner judges both executions",
          () => {
            const judged = leftAlone(lacking)
            return judged.has(stepRun.executionId) && judged.has(markerRun.executionId)
              ? judged
              : undefined
          },
          { timeoutMs: 60_000, details: scenario.outputs },
        )
        expect(problems.get(stepRun.executionId)).toEqual([
          expect.stringMatching(/^step-removed: .*extra/),
        ])
        expect(problems.get(markerRun.executionId)).toEqual([
          expect.stringMatching(/^marker-removed: .*fraud/),
        ])
        await expectUntouched(scenario, [stepRun.executionId, markerRun.executionId])

        const full = scenario.fleet({ app: FULL_APP, args: ARGS }).spawn()
        await full.runnerId()
        await expectFinishedInFull(stepRun, markerRun)
        expect(new Set(readJournal(scenario.journal).map((entry) => entry.pid))).toEqual(
          new Set([full.pid]),
        )
        const audit = await readWriteAudit(scenario.db)
        expect(audit.duplicateSettles).toEqual([])
        expect(audit.fenceBreaches).toEqual([])
        expect(new Set(audit.settles.map((settle) => settle.writer))).toEqual(new Set([full.name]))
      }),
  )

  it(
    "leaves the execution to a compatible runner even when it keeps the execution's bucket",
    { timeout: 300_000 },
    () =>
      withScenario(async (scenario) => {
        const lacking = scenario.fleet({ app: LACKING_APP, args: ARGS }).spawn()
        await lacking.runnerId()
        // The lacking runner keeps the lower half of the buckets once a second runner joins.
        const { stepRun, markerRun } = await startBoth(scenario, range(0, 128))
        await waitUntil(
          "the lacking runner judges both executions",
          () => leftAlone(lacking).size === 2,
          { timeoutMs: 60_000, details: scenario.outputs },
        )
        const full = scenario.fleet({ app: FULL_APP, args: ARGS }).spawn()
        await full.runnerId()
        await expectFinishedInFull(stepRun, markerRun)
      }),
  )
})
