/**
 * A runner killed with SIGKILL while it keeps soon-due timers in memory (runtime/runner/
 * localTimers.ts) loses nothing: the timers' rows keep the due times its passes wrote, and the
 * runner that takes its buckets once their leases lapse fires each sleep then, each execution's
 * next activity running once and in the new process.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { randomUUID } from "node:crypto"
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { createAkter, internalsOf, type Akter } from "../../runtime/akter.js"
import { makeOwnerClient } from "../../runtime/index.js"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import { startChildRunner, type ChildRunner } from "../support/childRunner.js"
import { waitUntil } from "../support/waitUntil.js"
import { registration } from "./crashApp.js"

interface LogLine {
  readonly step: string
  readonly pid: number
}

const LEASE_MS = 1500

describePostgres("a runner killed while it keeps timers in memory", () => {
  let database: { url: string; drop: () => Promise<void> }
  let akter: Akter
  const children: ChildRunner[] = []
  const logDir = mkdtempSync(path.join(tmpdir(), "akter-local-timers-"))

  beforeAll(async () => {
    database = await createPostgresDatabase()
    akter = await createAkter({ databaseUrl: database.url })
  })

  afterEach(async () => {
    for (const child of children.splice(0)) await child.kill()
  })

  afterAll(async () => {
    await akter?.close()
    await database?.drop()
  })

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = () => makeOwnerClient<any>(akter, registration)
  const db = () => internalsOf(akter).storage.db
  const spawnRunner = (log: string) => {
    // A fallback poll far off: the first runner wakes its sleeps only from memory.
    const child = startChildRunner({
      app: "test/crash/crashApp.ts",
      databaseUrl: database.url,
      args: ["--poll-ms", "600000", "--recovery-ms", "60000", "--lease-ms", String(LEASE_MS)],
      env: { CRASH_LOG: log },
    })
    children.push(child)
    return child
  }
  const lines = (file: string): LogLine[] =>
    existsSync(file)
      ? readFileSync(file, "utf8")
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => JSON.parse(line) as LogLine)
      : []

  it("leaves its kept timers to the runner that takes its buckets after the leases lapse", async () => {
    const log = path.join(logDir, `${randomUUID()}.log`)
    const first = spawnRunner(log)
    await first.waitForOutput("runner started")
    const runs = await Promise.all(
      Array.from({ length: 4 }, () => client().sleeping.start(`owner-${randomUUID()}`)),
    )
    const ids = runs.map((run) => run.executionId as string)
    await waitUntil(
      "every execution is parked on its one-second sleep",
      async () => {
        const rows = await db()
          .selectFrom("akter.executions")
          .select("status")
          .where("execution_id", "in", ids)
          .execute()
        return rows.length === ids.length && rows.every((row) => row.status === "suspended")
      },
      { intervalMs: 5, details: () => first.output() },
    )
    expect(await first.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" })
    const killedAt = Date.now()

    // Each timer is due when its sleep is, as the parking pass wrote it; the sleep is unsettled.
    const naps = await db()
      .selectFrom("akter.steps")
      .select(["execution_id", "due_at_ms", "exit"])
      .where("step", "=", "nap")
      .where("execution_id", "in", ids)
      .execute()
    const timers = await db()
      .selectFrom("akter.outbox")
      .select(["id", "due_at_ms"])
      .where("kind", "=", "timer")
      .where("id", "in", ids)
      .execute()
    expect(naps).toHaveLength(ids.length)
    for (const nap of naps) {
      expect(nap.exit).toBeNull()
      expect(timers.find((timer) => timer.id === nap.execution_id)?.due_at_ms).toBe(nap.due_at_ms)
    }
    expect(lines(log).map((line) => line.step)).toEqual(ids.map(() => "before"))

    const second = spawnRunner(log)
    const results = await Promise.all(runs.map((run) => run.result({ timeout: "30 seconds" })))
    expect(results.map((result) => result._tag)).toEqual(ids.map(() => "Success"))
    // The new runner took the buckets only once the killed one's leases lapsed.
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(LEASE_MS - 1000)
    const after = lines(log).filter((line) => line.step === "after")
    expect(after).toHaveLength(ids.length)
    expect(new Set(after.map((line) => line.pid))).toEqual(new Set([second.process.pid]))
    const left = await db().selectFrom("akter.outbox").select("id").where("id", "in", ids).execute()
    expect(left).toEqual([])
  })
})
