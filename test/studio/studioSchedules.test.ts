/**
 * The studio's Schedules page over schedules a real runner ticks with the test clock. Through the
 * Fetch handler on both backends: each schedule with its workflow, cron expression or interval,
 * time zone, next and last tick, paused state and policies, beside a schedule the manifests
 * declare that no runner has declared yet; pausing and resuming through the page's forms (CSRF
 * checked) changes the schedule's row, read back from the database; a read-only studio offers
 * neither and refuses a hand-made one; a studio given a tenant shows and changes none. In a real
 * headless Chromium (PGlite): the page opens from the nav, Pause asks for a confirmation and shows
 * the schedule paused, Resume brings it back, and the read-only studio has no button.
 * With AKTER_STUDIO_SCREENSHOTS=docs it writes the README's screenshot to docs/studio/schedules.png.
 * Without Chromium the browser half skips saying why; under CI=true it fails instead.
 */
import { existsSync, mkdirSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { sql } from "kysely"
import type { BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import type { CanonicalSchedule } from "../../runtime/model/schedule.js"
import type { Runner } from "../../runtime/runner/runner.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import {
  serveFetchHandler,
  studioHandler,
  type ScheduleDeclarations,
  type StudioHandler,
} from "../../studio/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { CHROMIUM, closeServers, launchChromium, listenOnLoopback } from "./chromium.js"
import {
  HOUR_MS,
  moveClockTo,
  scheduleRegistration,
  startScheduleRunner,
  step,
  ticksDecided,
} from "../schedules/scheduleApp.js"

const TOKEN = "schedules-test-token-0123456789"
const ORIGIN = "http://studio.test"
const NAMES = ["nightly", "halfHourly"]
const SCREENSHOTS =
  process.env["AKTER_STUDIO_SCREENSHOTS"] === "docs"
    ? fileURLToPath(new URL("../../docs/studio/", import.meta.url))
    : undefined

const SCHEDULES = `  nightly:
    workflow: stamp
    cron: "30 2 * * *"
    timeZone: Europe/Paris
    ownerId: paris
    input: { region: eu }
    overlap: queue
    catchUp: all
  halfHourly:
    workflow: stamp
    every: 30m
    ownerId: often
    input: { region: us }
`

/** Declared in a manifest the studio is given, ticked by no runner. */
const UNTICKED: ScheduleDeclarations = {
  owner: "Audit",
  schedules: {
    weekly: {
      workflow: "sweep",
      cron: "0 6 * * 1",
      timeZone: "Asia/Tokyo",
      everyMs: null,
      ownerId: "audit",
      input: null,
      overlap: "skip",
      catchUp: "none",
    } satisfies CanonicalSchedule,
  },
}

/** The text of each cell of a schedule's row, by its `data-cell`. */
const cellsOf = (page: string, schedule: string): Record<string, string> => {
  const start = page.indexOf(`data-schedule="${schedule}"`)
  if (start < 0) throw new Error(`no row for ${schedule}`)
  const row = page.slice(start, page.indexOf("</tr>", start))
  return Object.fromEntries(
    [...row.matchAll(/data-cell="([^"]+)">([\s\S]*?)<\/td>/g)].map((m) => [
      m[1]!,
      m[2]!
        .replace(/<[^>]*>/g, " ")
        .replace(/\s+/g, " ")
        .trim(),
    ]),
  )
}

const csrfOf = (page: string): string => {
  const match = /name="csrf" value="([^"]*)"/.exec(page)
  if (match === null) throw new Error("the page holds no CSRF field")
  return match[1]!
}

describeEachBackend("studio schedules", (backend) => {
  let akter: TestAkter
  let runner: Runner
  let studio: StudioHandler
  let readOnly: StudioHandler
  let bare: StudioHandler
  let cookie = ""

  const get = (handler: StudioHandler, path: string) =>
    handler(new Request(`${ORIGIN}${path}`, { headers: { cookie } }))
  const post = (handler: StudioHandler, path: string, fields: Record<string, string>) =>
    handler(
      new Request(`${ORIGIN}${path}`, {
        method: "POST",
        headers: {
          cookie,
          origin: ORIGIN,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams(fields).toString(),
      }),
    )
  /** The schedule's row as the database holds it. */
  const rowOf = async (schedule: string) => {
    const { rows } = await sql<{ paused: boolean; next_tick_ms: string | null }>`
      SELECT paused, next_tick_ms FROM akter.schedules
      WHERE owner_type = 'Report' AND schedule = ${schedule}`.execute(internalsOf(akter).storage.db)
    return rows[0]
  }

  beforeAll(async () => {
    akter = await openTestAkter(backend)
    moveClockTo(akter, Date.parse("2028-03-01T10:05:00.000Z"))
    const registration = await scheduleRegistration(SCHEDULES)
    runner = await startScheduleRunner(akter, registration)
    await ticksDecided(akter, NAMES)
    // To 11:05: halfHourly starts its 10:30 and 11:00 ticks; nightly (01:30 UTC) none yet.
    await step(akter, runner, NAMES, HOUR_MS)
    const declarations = async () => [registration.canonical, UNTICKED]
    studio = studioHandler(akter, { token: TOKEN, schedules: declarations })
    readOnly = studioHandler(akter, { readOnly: true, schedules: declarations })
    bare = studioHandler(akter, { readOnly: true, tenant: "acme" })
    const signIn = await get(studio, `/?token=${TOKEN}`)
    cookie = signIn.headers.get("set-cookie")!.split(";")[0]!
  }, 120_000)

  afterAll(async () => {
    await studio?.close()
    await readOnly?.close()
    await bare?.close()
    await runner?.close()
    await akter?.close()
  })

  it("shows each schedule with its workflow, timing, zone, ticks, state and policies", async () => {
    const response = await get(studio, "/schedules")
    expect(response.status).toBe(200)
    const page = await response.text()
    expect(page).toContain(`href="/schedules"`)
    expect(cellsOf(page, "Report.nightly")).toEqual({
      workflow: "stamp owner id paris",
      timing: "30 2 * * *",
      "time-zone": "Europe/Paris",
      // 02:30 in Paris on 2 March 2028 is 01:30 UTC (CET, UTC+1).
      next: expect.stringMatching(/^2028-03-02 01:30:00Z \(in 14\.\d h\)$/) as unknown as string,
      last: "none",
      state: "active",
      overlap: "queue",
      "catch-up": "all",
    })
    expect(cellsOf(page, "Report.halfHourly")).toEqual({
      workflow: "stamp owner id often",
      timing: "every 30m",
      "time-zone": "(interval)",
      next: "2028-03-01 11:30:00Z (in 25 min)",
      last: "2028-03-01 11:00:00Z (5 min ago) its execution",
      state: "active",
      overlap: "skip",
      "catch-up": "latest",
    })
    expect(cellsOf(page, "Audit.weekly")).toMatchObject({
      workflow: "sweep owner id audit",
      timing: "0 6 * * 1",
      "time-zone": "Asia/Tokyo",
      next: "when a runner declares it",
      state: "not ticked: no runner has declared it yet",
    })
    // The last execution links to the execution the 11:00 tick started.
    const last = /data-cell="last">[\s\S]*?href="\/executions\/([^"]+)"/.exec(
      page.slice(page.indexOf('data-schedule="Report.halfHourly"')),
    )
    const { rows } = await sql<{ key: string }>`
      SELECT execution_key AS key FROM akter.executions
      WHERE execution_id = ${decodeURIComponent(last![1]!)}`.execute(internalsOf(akter).storage.db)
    expect(rows[0]?.key).toBe("schedule:halfHourly:2028-03-01T11:00:00.000Z")
  })

  it("pauses and resumes a schedule through the page's forms", async () => {
    const page = await (await get(studio, "/schedules")).text()
    const csrf = csrfOf(page)
    const paused = await post(studio, "/actions/schedule-pause", {
      csrf,
      ownerType: "Report",
      schedule: "halfHourly",
    })
    expect(paused.status).toBe(303)
    expect((await rowOf("halfHourly"))?.paused).toBe(true)
    const after = await (await get(studio, paused.headers.get("location")!)).text()
    expect(after).toContain("Report.halfHourly: Paused: it starts nothing until resumed.")
    expect(cellsOf(after, "Report.halfHourly")).toMatchObject({
      state: "paused",
      next: "none while paused",
    })
    expect(after).toMatch(/data-action="schedule-resume"/)
    // Paused, its 11:30 tick starts nothing.
    await step(akter, runner, NAMES, HOUR_MS / 2)
    const tickedWhilePaused = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM akter.executions
      WHERE execution_key = 'schedule:halfHourly:2028-03-01T11:30:00.000Z'`.execute(
      internalsOf(akter).storage.db,
    )
    expect(tickedWhilePaused.rows[0]?.n).toBe(0)
    const resumed = await post(studio, "/actions/schedule-resume", {
      csrf,
      ownerType: "Report",
      schedule: "halfHourly",
    })
    expect(resumed.status).toBe(303)
    expect(await rowOf("halfHourly")).toMatchObject({ paused: false })
    // Resumed at 11:35, it starts from the next tick: 12:00, not the 11:30 it missed.
    const back = await (await get(studio, resumed.headers.get("location")!)).text()
    expect(cellsOf(back, "Report.halfHourly")).toMatchObject({
      state: "active",
      next: expect.stringMatching(/^2028-03-01 12:00:00Z \(in 2\d min\)$/) as unknown as string,
    })
    // Without the CSRF token, or for a schedule no runner declared, nothing changes.
    const forged = await post(studio, "/actions/schedule-pause", {
      ownerType: "Report",
      schedule: "halfHourly",
    })
    expect(forged.status).toBe(403)
    const unknown = await post(studio, "/actions/schedule-pause", {
      csrf,
      ownerType: "Audit",
      schedule: "weekly",
    })
    expect(unknown.status).toBe(404)
    expect(await unknown.text()).toContain("No schedule Audit.weekly in this database")
    expect((await rowOf("halfHourly"))?.paused).toBe(false)
  })

  it("a read-only studio offers no pause and refuses a hand-made one", async () => {
    const page = await (await readOnly(new Request(`${ORIGIN}/schedules`))).text()
    expect(cellsOf(page, "Report.nightly").state).toBe("active")
    expect(page).not.toContain('method="post"')
    expect(page).not.toContain("data-action")
    const refused = await readOnly(
      new Request(`${ORIGIN}/actions/schedule-pause`, {
        method: "POST",
        headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
        body: "ownerType=Report&schedule=nightly&csrf=x",
      }),
    )
    expect(refused.status).toBe(403)
    expect((await rowOf("nightly"))?.paused).toBe(false)
  })

  it("a studio given a tenant shows no schedule, and one without manifests says so", async () => {
    const scoped = await (await bare(new Request(`${ORIGIN}/schedules`))).text()
    expect(scoped).toContain("Schedules belong to the whole database")
    expect(scoped).not.toContain("data-schedule")
    const plain = studioHandler(akter, { readOnly: true })
    try {
      const page = await (await plain(new Request(`${ORIGIN}/schedules`))).text()
      expect(page).toContain("This studio was not given the manifests")
      expect(cellsOf(page, "Report.nightly")).toMatchObject({
        workflow: "not declared in the manifests given",
        state: "active",
      })
    } finally {
      await plain.close()
    }
  })

  if (backend !== "pglite") return
  const browserSuite = () => {
    let servers: Server[] = []
    let url = ""
    let readOnlyUrl = ""
    let browser: BrowserContext
    let page: Page

    beforeAll(async () => {
      servers = [createServer(serveFetchHandler(studio)), createServer(serveFetchHandler(readOnly))]
      url = await listenOnLoopback(servers[0]!)
      readOnlyUrl = await listenOnLoopback(servers[1]!)
      browser = await launchChromium({ width: 1400, height: 800 })
      page = browser.pages()[0] ?? (await browser.newPage())
      page.setDefaultTimeout(30_000)
      await page.goto(`${url}/?token=${TOKEN}`)
    }, 120_000)

    afterAll(async () => {
      await browser?.close()
      await closeServers(servers)
    })

    it("opens Schedules from the nav, pauses after a confirmation and resumes", async () => {
      await page.goto(`${url}/`)
      await page.click('header nav a[href="/schedules"]')
      await page.waitForURL(/\/schedules$/)
      const row = page.locator('tr[data-schedule="Report.nightly"]')
      expect(await row.locator('[data-cell="timing"]').innerText()).toBe("30 2 * * *")
      expect(await row.locator('[data-cell="time-zone"]').innerText()).toBe("Europe/Paris")
      expect(await row.locator("[data-state]").getAttribute("data-state")).toBe("active")
      if (SCREENSHOTS !== undefined) {
        mkdirSync(SCREENSHOTS, { recursive: true })
        await page.screenshot({ path: join(SCREENSHOTS, "schedules.png"), fullPage: false })
      }
      let asked = ""
      page.once("dialog", (dialog) => {
        asked = dialog.message()
        void dialog.accept()
      })
      await row.locator('[data-action="schedule-pause"]').click()
      await page.waitForURL(/notice=schedule-paused/)
      expect(asked).toContain("Pause Report.nightly?")
      expect(await page.locator(".notice").innerText()).toContain("Report.nightly: Paused")
      expect(await row.locator("[data-state]").getAttribute("data-state")).toBe("paused")
      expect((await rowOf("nightly"))?.paused).toBe(true)
      await row.locator('[data-action="schedule-resume"]').click()
      await page.waitForURL(/notice=schedule-resumed/)
      expect(await row.locator("[data-state]").getAttribute("data-state")).toBe("active")
      expect((await rowOf("nightly"))?.paused).toBe(false)
    })

    it("the read-only studio shows the schedules with no button", async () => {
      const viewer = await browser.newPage()
      await viewer.goto(`${readOnlyUrl}/schedules`)
      expect(await viewer.locator("tr[data-schedule]").count()).toBe(3)
      expect(await viewer.locator('form[method="post"]').count()).toBe(0)
      expect(await viewer.locator("[data-action]").count()).toBe(0)
      await viewer.close()
    })
  }
  if (existsSync(CHROMIUM)) describe("in Chromium", browserSuite)
  else
    describe("in Chromium", () => {
      if (process.env["CI"] === "true") {
        it("needs Chromium under CI", () => {
          throw new Error(`${CHROMIUM} is missing, and CI=true: the browser suite must run`)
        })
      } else it.skip(`skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`, () => {})
    })
})
