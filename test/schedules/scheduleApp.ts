/**
 * The schedules suites' app: a manifest with two workflows — `stamp`, which records its input in
 * one activity and finishes, and `slow`, which sleeps 80 minutes, so that a tick of an hourly
 * schedule finds it open — and whichever schedules a test declares. Helpers move the test clock and
 * wait until every due tick is decided and every started execution is idle, and read what the
 * schedules started from the database.
 */
import { sql } from "kysely"
import { Effect } from "effect"
import { internalsOf } from "../../runtime/akter.js"
import { implementWorkflow } from "../../runtime/index.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import { startRunner, type Runner } from "../../runtime/runner/runner.js"
import { nowMs } from "../../runtime/storage/clock.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import type { UntypedSteps } from "../support/untypedSteps.js"
import { waitUntil } from "../support/waitUntil.js"

export const HOUR_MS = 3_600_000
export const MINUTE_MS = 60_000

/** The manifest with the given `schedules:` entries (YAML text, indented under the key). */
export const scheduleManifest = (schedules: string) => `
akter: 1
owner: Report
workflows:
  stamp:
    input: { region: string }
    output: { region: string }
    steps:
      record: { kind: activity, input: { region: string }, output: { region: string } }
  slow:
    steps:
      hold: { kind: sleep, duration: 80m }
schedules:
${schedules}`

export const scheduleRegistration = (schedules: string): Promise<OwnerRegistration> =>
  registrationFromYaml(scheduleManifest(schedules), "manifests/report.yaml")

/** Starts a runner of both workflows of `registration`. */
export const startScheduleRunner = (akter: TestAkter, registration: OwnerRegistration) =>
  startRunner({
    akter,
    retention: false,
    workflows: [
      implementWorkflow(registration, "stamp", {
        activities: { record: (input: { region: string }) => Promise.resolve(input) },
        body: ((input: { region: string }, wf: UntypedSteps) =>
          wf.record({ region: input.region })) as never,
      }),
      implementWorkflow(registration, "slow", {
        activities: {},
        body: ((_: undefined, wf: UntypedSteps) =>
          Effect.gen(function* () {
            yield* wf.hold()
          })) as never,
      }),
    ],
  })

/** Moves the test clock to `atMs` (database time), which must be ahead. */
export const moveClockTo = (akter: TestAkter, atMs: number) => {
  const by = atMs - akter.now()
  if (by < 0) throw new Error(`the test clock is already past ${new Date(atMs).toISOString()}`)
  akter.advance(by)
}

/**
 * Resolves once none of the named schedules has a due tick undecided, a claim held, or a queued
 * tick whose predecessor has finished: every tick due by now has been started, skipped or queued.
 */
export const ticksDecided = (akter: TestAkter, schedules: readonly string[]) => {
  const internals = internalsOf(akter)
  return waitUntil(
    "every due tick is decided",
    async () => {
      const { rows } = await sql<{ pending: number }>`
        SELECT count(*)::int AS pending FROM akter.schedules s
        WHERE s.schedule IN (${sql.join(schedules)}) AND NOT s.paused AND (s.claimed_by IS NOT NULL
          OR s.next_tick_ms <= ${nowMs(internals.clock)}
          OR (s.queued_tick_ms IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM akter.executions e
            WHERE e.execution_id = s.last_execution_id AND e.status <> 'finished')))`.execute(
        internals.storage.db,
      )
      return rows[0]!.pending === 0
    },
    { timeoutMs: 30_000, intervalMs: 10 },
  )
}

/** Moves the clock by `ms`, then waits until ticks are decided and the runner is idle. */
export const step = async (
  akter: TestAkter,
  runner: Runner,
  schedules: readonly string[],
  ms: number,
) => {
  akter.advance(ms)
  // Twice: a finish during the first idle wait may start a queued tick.
  for (let round = 0; round < 2; round++) {
    await ticksDecided(akter, schedules)
    await runUntilIdle(akter, runner, { timeoutMs: 30_000 })
  }
}

export interface StartedTick {
  readonly key: string
  readonly workflow: string
  readonly ownerId: string
  readonly status: string
}

/** The executions of owner type Report that the named schedules started, by key. */
export const startedTicks = async (
  akter: TestAkter,
  schedules: readonly string[],
): Promise<StartedTick[]> => {
  const { rows } = await sql<StartedTick>`
    SELECT execution_key AS key, workflow, owner_id AS "ownerId", status
    FROM akter.executions WHERE owner_type = 'Report' ORDER BY execution_key`.execute(
    internalsOf(akter).storage.db,
  )
  return rows.filter((row) => schedules.some((name) => row.key.startsWith(`schedule:${name}:`)))
}

/** The execution key a tick of `schedule` at `tick` (an ISO instant) has, written out by hand. */
export const tickKey = (schedule: string, tick: string) => `schedule:${schedule}:${tick}`
