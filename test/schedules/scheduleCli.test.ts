/**
 * `akter schedule`, run as the real CLI against Postgres that a runner with a schedule uses: `list`
 * shows the schedule the runner declared, `pause` and `resume` change it (as the row shows
 * afterwards), an unknown name exits 1 with a suggestion, and a missing action exits 2.
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { listSchedules } from "../../runtime/schedules/scheduleStore.js"
import type { Runner } from "../../runtime/runner/runner.js"
import { testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import { createCliProject, type CliProject } from "../cli/cliProject.js"
import { scheduleRegistration, startScheduleRunner } from "./scheduleApp.js"

// The real CLI: a few seconds per call on a loaded machine.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 })

describePostgres("akter schedule", () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>
  let akter: TestAkter
  let runner: Runner
  let project: CliProject
  const run = (...args: string[]) =>
    project.akter(["schedule", ...args, "--database-url", database.url])

  beforeAll(async () => {
    database = await createPostgresDatabase()
    akter = await testAkter({ databaseUrl: database.url })
    runner = await startScheduleRunner(
      akter,
      await scheduleRegistration(`  nightly:
    workflow: stamp
    cron: "30 2 * * *"
    ownerId: reports
    input: { region: eu }`),
    )
    project = createCliProject()
  })
  afterAll(async () => {
    await runner?.close()
    await akter?.close()
    await database?.drop()
    project?.remove()
  })

  it("lists the schedule a runner declared, then pauses and resumes it", async () => {
    const listed = await run("list", "--format", "json")
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout)).toMatchObject({
      schedules: [{ owner: "Report", schedule: "nightly", paused: false, queuedTick: null }],
    })

    const paused = await run("pause", "nightly", "--format", "json")
    expect(paused.code).toBe(0)
    expect(JSON.parse(paused.stdout)).toMatchObject({ schedule: "nightly", paused: true })
    const rows = () => listSchedules(internalsOf(akter).storage.db)
    expect((await rows()).map((row) => row.paused)).toEqual([true])

    const resumed = await run("resume", "Report.nightly")
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toContain("akter schedule: resumed Report.nightly  active")
    expect((await rows()).map((row) => row.paused)).toEqual([false])
  })

  it("exits 1 for an unknown schedule, with a suggestion, and 2 without an action", async () => {
    const unknown = await run("pause", "nighty")
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain(
      `no schedule "nighty" in this database (did you mean "nightly"?)`,
    )
    const bare = await run()
    expect(bare.code).toBe(2)
    expect(bare.stderr).toContain("say what to do: list, pause NAME or resume NAME")
    const help = await project.akter(["schedule", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("usage: akter schedule list|pause|resume [NAME] [options]")
  })
})
