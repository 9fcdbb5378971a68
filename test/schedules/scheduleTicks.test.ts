/**
 * Schedules on PGlite and Postgres, with the test clock: a daily cron expression in New York
 * starts each tick once across the autumn and spring daylight-saving changes; after five missed
 * hourly ticks each catch-up policy starts what it says (all five, the latest, none) and then ticks
 * on time again; and an hourly schedule of an 80-minute workflow skips, allows or queues the ticks
 * that find the previous one open; a paused schedule starts nothing and, resumed, does not catch
 * up. Expected keys are written out by hand (UTC instants worked out
 * from the time zone's offsets), not computed by the code under test. One database per backend:
 * each test moves its clock further ahead and names schedules of its own.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { renderExecutionDetail } from "../../cli/renderInspection.js"
import { showExecution } from "../../runtime/inspect/executionQueries.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { encodeExecutionId } from "../../runtime/model/executionId.js"
import { setSchedulePaused } from "../../runtime/schedules/scheduleStore.js"
import type { Runner } from "../../runtime/runner/runner.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import {
  HOUR_MS,
  MINUTE_MS,
  moveClockTo,
  scheduleRegistration,
  startedTicks,
  startScheduleRunner,
  step,
  ticksDecided,
  tickKey,
} from "./scheduleApp.js"

type WorkflowClient = { attach(id: string): { result(): Promise<unknown> } }

describeEachBackend("schedules", (backend) => {
  let akter: TestAkter
  let runner: Runner | undefined

  beforeAll(async () => {
    akter = await openTestAkter(backend)
  })
  afterEach(async () => {
    await runner?.close()
    runner = undefined
  })
  afterAll(() => akter?.close())

  /** The clock moved to `at`, and a runner of the given schedules. */
  const open = async (at: string, names: readonly string[], schedules: string) => {
    moveClockTo(akter, Date.parse(at))
    const registration = await scheduleRegistration(schedules)
    runner = await startScheduleRunner(akter, registration)
    await ticksDecided(akter, names)
    return { runner, registration }
  }

  it("a daily cron schedule at 02:30 New York time starts once on the day that has no 02:30", async () => {
    const { runner } = await open(
      "2027-03-12T12:00:00.000Z",
      ["early"],
      `  early:
    workflow: stamp
    cron: "30 2 * * *"
    timeZone: America/New_York
    ownerId: east
    input: { region: us-east }`,
    )
    for (let day = 0; day < 3; day++) await step(akter, runner, ["early"], 24 * HOUR_MS)
    expect((await startedTicks(akter, ["early"])).map((tick) => tick.key)).toEqual([
      tickKey("early", "2027-03-13T07:30:00.000Z"), // 02:30 EST (UTC-5)
      tickKey("early", "2027-03-14T07:00:00.000Z"), // 02:30 does not exist: 03:00 EDT
      tickKey("early", "2027-03-15T06:30:00.000Z"), // 02:30 EDT (UTC-4)
    ])
  })

  it("a daily cron schedule at 01:30 New York time starts once on the day that has two", async () => {
    const { runner, registration } = await open(
      "2027-11-05T12:00:00.000Z",
      ["night"],
      `  night:
    workflow: stamp
    cron: "30 1 * * *"
    timeZone: America/New_York
    ownerId: east
    input: { region: us-east }
    overlap: allow`,
    )
    // Steps of six hours: each of the day's two 01:30s (05:30Z and 06:30Z) falls in its own step.
    for (let hours = 0; hours < 4 * 24; hours += 6)
      await step(akter, runner, ["night"], 6 * HOUR_MS)
    const ticks = [
      "2027-11-06T05:30:00.000Z", // 01:30 EDT (UTC-4)
      "2027-11-07T05:30:00.000Z", // the first 01:30, still EDT; the second (06:30Z) starts nothing
      "2027-11-08T06:30:00.000Z", // 01:30 EST (UTC-5)
      "2027-11-09T06:30:00.000Z",
    ]
    expect(await startedTicks(akter, ["night"])).toEqual(
      ticks.map((tick) => ({
        key: tickKey("night", tick),
        workflow: "stamp",
        ownerId: "east",
        status: "finished",
      })),
    )
    // Each started with the schedule's input.
    const stamp = makeOwnerClient<Record<string, WorkflowClient>>(akter, registration)["stamp"]!
    const id = encodeExecutionId({
      tenant: "default",
      ownerType: "Report",
      ownerId: "east",
      workflow: "stamp",
      key: tickKey("night", ticks[0]!),
    })
    expect(await stamp.attach(id).result()).toEqual({
      _tag: "Success",
      value: { region: "us-east" },
    })
    // inspect names the schedule and tick that started it.
    const detail = await showExecution(internalsOf(akter).storage.db, id)
    expect(renderExecutionDetail(detail!, akter.now())).toContain(
      "started by schedule night, tick 2027-11-06T05:30:00.000Z",
    )
  })

  it("after five missed hourly ticks, catch-up all starts five, latest one, none none; then each ticks on time", async () => {
    const hourly = (name: string, catchUp: string) => `  ${name}:
    workflow: stamp
    cron: "0 * * * *"
    ownerId: ${name}
    input: { region: ${name} }
    overlap: allow
    catchUp: ${catchUp}
`
    const names = ["catchAll", "catchLatest", "catchNone"]
    const first = await open(
      "2028-01-04T10:05:00.000Z",
      names,
      hourly("catchAll", "all") + hourly("catchLatest", "latest") + hourly("catchNone", "none"),
    )
    await first.runner.close()
    runner = undefined
    // Down from 10:05 to 15:05: the ticks of 11:00 to 15:00 are missed (15:00 by five minutes).
    akter.advance(5 * HOUR_MS)
    runner = await startScheduleRunner(akter, first.registration)
    await step(akter, runner, names, 0)
    const missed = ["11", "12", "13", "14", "15"].map((hour) => `2028-01-04T${hour}:00:00.000Z`)
    expect((await startedTicks(akter, names)).map((tick) => tick.key)).toEqual([
      ...missed.map((tick) => tickKey("catchAll", tick)),
      tickKey("catchLatest", missed[4]!),
    ])
    // To 16:00:30: the 16:00 tick is on time, and every policy starts it.
    await step(akter, runner, names, HOUR_MS - 4.5 * MINUTE_MS)
    const onTime = "2028-01-04T16:00:00.000Z"
    expect((await startedTicks(akter, names)).map((tick) => tick.key)).toEqual([
      ...missed.map((tick) => tickKey("catchAll", tick)),
      tickKey("catchAll", onTime),
      tickKey("catchLatest", missed[4]!),
      tickKey("catchLatest", onTime),
      tickKey("catchNone", onTime),
    ])
  })

  it("an hourly schedule of an 80-minute workflow skips, allows or queues the ticks that find the last one open", async () => {
    const slow = (name: string, overlap: string) => `  ${name}:
    workflow: slow
    every: 1h
    ownerId: ${name}
    overlap: ${overlap}
`
    const names = ["skipping", "allowing", "queueing"]
    const { runner } = await open(
      "2028-01-10T10:05:00.000Z",
      names,
      slow("skipping", "skip") + slow("allowing", "allow") + slow("queueing", "queue"),
    )
    // Ten-minute steps from 10:05 to 14:55: ticks are decided at :05, direct starts wake at :25.
    for (let minutes = 0; minutes < 290; minutes += 10) {
      await step(akter, runner, names, 10 * MINUTE_MS)
    }
    const at = (hour: number) => `2028-01-10T${hour}:00:00.000Z`
    const keys = (await startedTicks(akter, names)).map((tick) => tick.key)
    expect(keys).toEqual([
      // allow: every tick
      ...[11, 12, 13, 14].map((hour) => tickKey("allowing", at(hour))),
      // queue: 12:00 waits for 11:00's (ends 12:25), 13:00 for 12:00's (ends 13:45); 14:00 still waits
      ...[11, 12, 13].map((hour) => tickKey("queueing", at(hour))),
      // skip: 12:00 and 14:00 find the previous one open
      ...[11, 13].map((hour) => tickKey("skipping", at(hour))),
    ])
  })

  it("a paused schedule starts nothing, and resumed it starts from the next tick without catching up", async () => {
    const { runner } = await open(
      "2028-01-20T10:05:00.000Z",
      ["paused"],
      `  paused:
    workflow: stamp
    every: 1h
    ownerId: paused
    input: { region: paused }
    catchUp: all`,
    )
    const internals = internalsOf(akter)
    await setSchedulePaused(internals.storage.db, internals.clock, "Report", "paused", true)
    // 11:00, 12:00 and 13:00 pass while it is paused.
    for (let hour = 0; hour < 3; hour++) await step(akter, runner, ["paused"], HOUR_MS)
    await setSchedulePaused(internals.storage.db, internals.clock, "Report", "paused", false)
    await step(akter, runner, ["paused"], HOUR_MS)
    expect((await startedTicks(akter, ["paused"])).map((tick) => tick.key)).toEqual([
      tickKey("paused", "2028-01-20T14:00:00.000Z"),
    ])
  })
})
