/**
 * `akter inspect` through the real CLI, on a real execution of the example Order.fulfill recorded
 * in a PGlite data directory: the listing with filters, one execution in text and JSON, a corrupt
 * stored exit shown as a defect, and the exit codes for unknown and malformed ids.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { sql } from "kysely"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAkter, internalsOf } from "../../runtime/akter.js"
import { makeLogger } from "../../runtime/log.js"
import { encodeExecutionId } from "../../runtime/model/executionId.js"
import { startRunner } from "../../runtime/runner/runner.js"
import { Order } from "../../generated/index.js"
import { makeFulfill } from "../../examples/app.js"
import { manifestPace } from "../../examples/pace.js"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const TEN_MINUTES = 10 * 60 * 1000

/** The environment without DATABASE_URL, so the CLI reads the PGlite data directory. */
const { DATABASE_URL: _ignored, ...pgliteEnvironment } = process.env

const inspect = async (...args: string[]) => {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [path.join(ROOT, "bin/akter.js"), "inspect", ...args],
      { cwd: ROOT, env: pgliteEnvironment },
    )
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

// Every case runs the CLI in a new process (tsx and PGlite start each time): slow on a busy machine.
describe("akter inspect", { timeout: 240_000 }, () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "akter-inspect-"))
  const waiting = { ownerId: "o-inspect-1", executionId: "" }
  const corrupt = { ownerId: "o-inspect-2", executionId: "" }
  let startedAtMs = 0

  beforeAll(async () => {
    const akter = await createAkter({ dataDir, logger: makeLogger({ level: "warn" }) })
    const runner = await startRunner({
      akter,
      workflows: [makeFulfill(manifestPace)],
      pollMs: 20,
    })
    const orders = Order.client(akter)
    startedAtMs = Date.now()
    for (const owner of [waiting, corrupt]) {
      const run = await orders.fulfill.start(owner.ownerId, {
        orderId: owner.ownerId,
        total: { amount: 2500, currency: "EUR" },
        skus: ["sku-1", "restock-lamp"],
      })
      owner.executionId = run.executionId
    }
    // At manifest pace the order reserves (failing once: the lamp is restocked for attempt 2,
    // a second later), screens, then sleeps 10 minutes: it stays suspended with a pending sleep.
    const db = internalsOf(akter).storage.db
    const deadline = Date.now() + 30_000
    for (;;) {
      const suspended = await db
        .selectFrom("akter.executions")
        .select("execution_id")
        .where("status", "=", "suspended")
        .where(({ exists, selectFrom }) =>
          exists(
            selectFrom("akter.steps")
              .select("step")
              .whereRef("akter.steps.execution_id", "=", "akter.executions.execution_id")
              .where("akter.steps.step", "=", "coolOff"),
          ),
        )
        .execute()
      if (suspended.length === 2) break
      if (Date.now() > deadline) throw new Error("the orders never reached their cool-off")
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await runner.close()
    await sql`UPDATE akter.steps SET exit = '\\x07ff'::bytea
      WHERE execution_id = ${corrupt.executionId} AND step = 'screen'`.execute(db)
    await akter.close()
  })

  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  it("lists executions filtered by workflow and status, newest first, with their ids", async () => {
    const listed = await inspect(
      "--data-dir",
      dataDir,
      "--workflow",
      "Order.fulfill",
      "--status",
      "suspended",
    )
    expect(listed.code).toBe(0)
    const lines = listed.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^OWNER\s+WORKFLOW\s+STATUS\s+STARTED\s+EXECUTION ID$/)
    expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual([
      "Order/o-inspect-2",
      "Order/o-inspect-1",
    ])
    expect(lines[2]).toContain(waiting.executionId)
    const none = await inspect("--data-dir", dataDir, "--status", "finished")
    expect(none.stdout.trim()).toBe("no executions match")
    const json = JSON.parse(
      (await inspect("--data-dir", dataDir, "--owner", "Order/o-inspect-1", "--format", "json"))
        .stdout,
    )
    expect(json.executions).toHaveLength(1)
    expect(json.executions[0]).toMatchObject({
      executionId: waiting.executionId,
      ownerType: "Order",
      ownerId: "o-inspect-1",
      workflow: "fulfill",
      key: "o-inspect-1",
      status: "suspended",
    })
  })

  it("shows one execution's steps, attempts, decoded exits, markers and pending timer as JSON", async () => {
    const shown = await inspect(waiting.executionId, "--data-dir", dataDir, "--format", "json")
    expect(shown.code).toBe(0)
    const detail = JSON.parse(shown.stdout)
    expect(detail).toMatchObject({
      executionId: waiting.executionId,
      ownerType: "Order",
      ownerId: "o-inspect-1",
      workflow: "fulfill",
      key: "o-inspect-1",
      status: "suspended",
      interrupting: false,
      caller: { tenant: "default" },
      input: {
        readable: true,
        value: {
          orderId: "o-inspect-1",
          total: { amount: 2500, currency: "EUR" },
          skus: ["sku-1", "restock-lamp"],
        },
      },
      markers: [{ name: "fraudCheck", value: 1 }],
      defects: [],
    })
    expect(detail.manifestHash).toMatch(/^akter1:sha256:[0-9a-f]{64}$/)
    const steps = detail.steps.map(
      (step: { step: string; attempt: number; kind: string; settled: boolean }) => [
        step.step,
        step.attempt,
        step.kind,
        step.settled,
      ],
    )
    expect(steps).toEqual([
      ["reserve", 1, "activity", true],
      ["reserve", 2, "activity", true],
      ["screen", 1, "activity", true],
      ["coolOff", 1, "sleep", false],
    ])
    const [failed, reserved, screened, sleeping] = detail.steps
    expect(failed.exit).toEqual({
      _tag: "Failure",
      error: { _tag: "OutOfStock", sku: "restock-lamp" },
    })
    // The failed attempt records when the retry may start: the manifest's initial backoff (1 s)
    // after the attempt ended. The runner computes it from its estimate of the database clock, so
    // allow for that estimate's error on a busy machine.
    expect(failed.dueAtMs - failed.startedAtMs).toBeGreaterThanOrEqual(1000 - 250)
    expect(failed.dueAtMs - failed.settledAtMs).toBeLessThanOrEqual(1000 + 250)
    expect(reserved.exit._tag).toBe("Success")
    expect(reserved.exit.value.reservationId).toMatch(/^res-[0-9a-f]{10}$/)
    expect(screened.exit.value.score).toBeGreaterThanOrEqual(0)
    expect(screened.exit.value.score).toBeLessThan(1)
    expect(sleeping.exit).toBeUndefined()
    expect(sleeping.dueAtMs - screened.settledAtMs).toBeGreaterThanOrEqual(TEN_MINUTES - 50)
    expect(sleeping.dueAtMs - screened.settledAtMs).toBeLessThanOrEqual(TEN_MINUTES + 5000)
    expect(detail.timer.dueAtMs).toBe(sleeping.dueAtMs)
    expect(detail.startedAtMs).toBeGreaterThanOrEqual(startedAtMs - 1000)
  })

  it("shows the same execution as text: fields, a step table and the timer", async () => {
    const shown = await inspect(waiting.executionId, "--data-dir", dataDir)
    expect(shown.code).toBe(0)
    const text = shown.stdout
    expect(text).toContain(`execution  ${waiting.executionId}\n`)
    expect(text).toContain("owner      Order/o-inspect-1 (tenant default)\n")
    expect(text).toContain("workflow   Order.fulfill\n")
    expect(text).toContain("key        o-inspect-1\n")
    expect(text).toContain("status     suspended\n")
    expect(text).toContain("markers    fraudCheck=1\n")
    expect(text).toMatch(/timer {6}due \d{4}-\d\d-\d\dT[\d:.]+Z \(in \d+ min\), claimed \d+ times?/)
    const table = text.slice(text.indexOf("STEP"))
    const rows = table.trimEnd().split("\n")
    expect(rows[0]).toMatch(/^STEP\s+KIND\s+ATTEMPT\s+STATE\s+DUE\s+EXIT$/)
    expect(rows[1]).toMatch(
      /^reserve\s+activity\s+1\s+settled\s+\S+ \S+ ago\s+Failure OutOfStock \{"sku":"restock-lamp"\}$/,
    )
    expect(rows[2]).toMatch(
      /^reserve\s+activity\s+2\s+settled\s+Success \{"reservationId":"res-[0-9a-f]{10}"\}$/,
    )
    expect(rows[3]).toMatch(/^screen\s+activity\s+1\s+settled\s+Success \{"score":[\d.e-]+\}$/)
    expect(rows[4]).toMatch(/^coolOff\s+sleep\s+1\s+pending\s+in \d+ min$/)
  })

  it("shows a corrupt stored exit as a defect of its execution and still shows the rest", async () => {
    const shown = await inspect(corrupt.executionId, "--data-dir", dataDir)
    expect(shown.code).toBe(0)
    expect(shown.stdout).toMatch(
      /screen\s+activity\s+1\s+settled\s+DEFECT unreadable exit: stored value is corrupt: unknown format byte 0x07/,
    )
    expect(shown.stdout).toContain(
      "defects (1):\n  step screen attempt 1: stored value is corrupt: unknown format byte 0x07",
    )
    expect(shown.stdout).toMatch(/coolOff\s+sleep\s+1\s+pending/)
    const json = JSON.parse(
      (await inspect(corrupt.executionId, "--data-dir", dataDir, "--format", "json")).stdout,
    )
    expect(json.defects).toEqual([
      "step screen attempt 1: stored value is corrupt: unknown format byte 0x07",
    ])
  })

  it("exits 1 for an execution id that names nothing, and 2 for a string that is no execution id", async () => {
    const unknown = encodeExecutionId({
      tenant: "default",
      ownerType: "Order",
      ownerId: "o-never",
      workflow: "fulfill",
      key: "o-never",
    })
    const missing = await inspect(unknown, "--data-dir", dataDir)
    expect(missing.code).toBe(1)
    expect(missing.stderr.trim()).toBe(`akter inspect: no execution ${unknown} in this database`)
    const malformed = await inspect("not-an-id", "--data-dir", dataDir)
    expect(malformed.code).toBe(2)
    expect(malformed.stderr).toContain('akter inspect: invalid execution id "not-an-id"')
    const badStatus = await inspect("--data-dir", dataDir, "--status", "sleeping")
    expect(badStatus.code).toBe(2)
    expect(badStatus.stderr).toContain(
      'akter inspect: --status must be one of queued, running, suspended, finished, open, not "sleeping"',
    )
  })
})
