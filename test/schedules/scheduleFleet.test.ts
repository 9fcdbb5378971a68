/**
 * Three runner processes (the real `akter run`) on one Postgres database share a schedule that
 * ticks every second, and the one that started the most ticks drains halfway: every tick from the
 * first to the last started has exactly one execution, the runners' logs of the ticks they started
 * name each tick once across all three (the other two took over), and each finished execution ran
 * its activity once. The runners' own clocks are real: the schedule catches
 * up every tick a loaded machine makes late, so a gap would be a tick nobody started.
 */
import { sql } from "kysely"
import { expect, it } from "vitest"
import { readJournal } from "../support/activityJournal.js"
import { describePostgres } from "../support/backends.js"
import { withScenario } from "../support/scenarioDatabase.js"
import { waitUntil } from "../support/waitUntil.js"

const APP = "test/schedules/scheduleFleetApp.ts"
const TICKS = 8

describePostgres("a schedule shared by three runner processes", () => {
  it("starts each tick once", { timeout: 240_000 }, async () => {
    await withScenario(async (scenario) => {
      const fleet = scenario.fleet({ app: APP, args: ["--pool-size", "4"] })
      const runners = [fleet.spawn(), fleet.spawn(), fleet.spawn()]
      await Promise.all(runners.map((runner) => runner.runnerId()))
      const finished = () =>
        sql<{ key: string; id: string }>`
          SELECT execution_key AS key, execution_id AS id FROM akter.executions
          WHERE owner_type = 'Fleet' AND status = 'finished' ORDER BY execution_key`
          .execute(scenario.db)
          .then((result) => result.rows)
      const startedBy = (runner: (typeof runners)[number]) =>
        runner
          .logLines()
          .filter((line) => line.message === "schedule tick started")
          .map((line) => String(line["tick"]))
      await waitUntil(`${TICKS} ticks finish`, async () => (await finished()).length >= TICKS, {
        timeoutMs: 120_000,
        intervalMs: 100,
        details: scenario.outputs,
      })
      // The runner that started the most ticks drains (SIGTERM); the others go on ticking.
      const busiest = [...runners].sort((a, b) => startedBy(b).length - startedBy(a).length)[0]!
      await busiest.child.kill("SIGTERM")
      const others = runners.filter((runner) => runner !== busiest)
      const before = others.flatMap(startedBy).length
      await waitUntil(
        `the other runners start ${TICKS} more ticks`,
        () => others.flatMap(startedBy).length >= before + TICKS,
        { timeoutMs: 120_000, intervalMs: 100, details: scenario.outputs },
      )
      await fleet.stopAll()

      const { rows } = await sql<{ key: string }>`
        SELECT execution_key AS key FROM akter.executions WHERE owner_type = 'Fleet'
        ORDER BY execution_key`.execute(scenario.db)
      const ticks = rows.map((row) => Date.parse(row.key.replace("schedule:everySecond:", "")))
      // One execution per second from the first tick to the last: none missing, none twice.
      const expected = Array.from(
        { length: (ticks.at(-1)! - ticks[0]!) / 1000 + 1 },
        (_, i) => ticks[0]! + i * 1000,
      )
      expect(ticks).toEqual(expected)

      const logged = runners.flatMap(startedBy)
      expect(logged.length).toBeGreaterThanOrEqual(2 * TICKS)
      expect(new Set(logged).size).toBe(logged.length)
      for (const tick of logged) {
        expect(rows.map((row) => row.key)).toContain(`schedule:everySecond:${tick}`)
      }

      const journal = readJournal(scenario.journal)
      for (const execution of await finished()) {
        expect(journal.filter((entry) => entry.execution === execution.id)).toHaveLength(1)
      }
    })
  })
})
