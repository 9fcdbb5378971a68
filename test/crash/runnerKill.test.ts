/**
 * A runner process killed with SIGKILL costs nothing but time: killed while an activity runs, the
 * activity is rerun by a new process under the same attempt and idempotency key; killed while the
 * execution is suspended, a new process finishes it without rerunning what was recorded.
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
import { registration } from "./crashApp.js"

interface LogLine {
  readonly step: string
  readonly attempt: number
  readonly key: string
  readonly pid: number
}

describePostgres("a runner killed with SIGKILL", () => {
  let database: { url: string; drop: () => Promise<void> }
  let akter: Akter
  const children: ChildRunner[] = []
  const logDir = mkdtempSync(path.join(tmpdir(), "akter-crash-"))

  beforeAll(async () => {
    database = await createPostgresDatabase()
    akter = await createAkter({ databaseUrl: database.url })
  })

  // Each test's runners go with it: a runner left alive would serve the next test's executions.
  afterEach(async () => {
    for (const child of children.splice(0)) await child.kill()
  })

  afterAll(async () => {
    await akter?.close()
    await database?.drop()
  })

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = () => makeOwnerClient<any>(akter, registration)
  const spawnRunner = (log: string, env: Record<string, string> = {}) => {
    const child = startChildRunner({
      app: "test/crash/crashApp.ts",
      databaseUrl: database.url,
      args: ["--recovery-ms", "1000", "--lease-ms", "1500"],
      env: { CRASH_LOG: log, ...env },
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
  const waitForLines = async (file: string, count: number) => {
    const deadline = Date.now() + 20_000
    while (lines(file).length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} log lines in ${file}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const db = () => internalsOf(akter).storage.db

  it("reruns the activity it was running under the same attempt and idempotency key", async () => {
    const log = path.join(logDir, `${randomUUID()}.log`)
    const run = await client().blocking.start(`owner-${randomUUID()}`)
    const first = spawnRunner(log, { CRASH_BLOCK: "1" })
    await waitForLines(log, 1)
    expect(await first.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" })

    const pending = await db()
      .selectFrom("akter.steps")
      .select(["step", "attempt", "exit"])
      .where("execution_id", "=", run.executionId)
      .execute()
    expect(pending).toEqual([{ step: "work", attempt: 1, exit: null }])
    const execution = await db()
      .selectFrom("akter.executions")
      .select("status")
      .where("execution_id", "=", run.executionId)
      .executeTakeFirstOrThrow()
    expect(execution.status).toBe("running")

    spawnRunner(log)
    const result = await run.result({ timeout: "30 seconds" })
    const [killed, rerun] = lines(log)
    expect(lines(log)).toHaveLength(2)
    expect(rerun!.pid).not.toBe(killed!.pid)
    expect(rerun!.attempt).toBe(1)
    expect(rerun!.key).toBe(killed!.key)
    expect(result).toEqual({ _tag: "Success", value: { done: killed!.key } })
    const left = await db()
      .selectFrom("akter.steps")
      .select("step")
      .where("execution_id", "=", run.executionId)
      .execute()
    expect(left).toEqual([])
  })

  it("finishes a suspended execution without rerunning its recorded steps", async () => {
    const log = path.join(logDir, `${randomUUID()}.log`)
    const first = spawnRunner(log)
    const run = await client().sleeping.start(`owner-${randomUUID()}`)
    await waitForLines(log, 1)
    const deadline = Date.now() + 10_000
    for (;;) {
      const row = await db()
        .selectFrom("akter.executions")
        .select("status")
        .where("execution_id", "=", run.executionId)
        .executeTakeFirstOrThrow()
      if (row.status === "suspended") break
      if (Date.now() > deadline) throw new Error("execution never suspended")
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await first.kill("SIGKILL")
    const recorded = await db()
      .selectFrom("akter.steps")
      .select(["step", "kind"])
      .select((eb) => eb("exit", "is not", null).as("settled"))
      .where("execution_id", "=", run.executionId)
      .orderBy("step")
      .execute()
    expect(recorded).toEqual([
      { step: "before", kind: "activity", settled: true },
      { step: "nap", kind: "sleep", settled: false },
    ])

    spawnRunner(log)
    const result = await run.result({ timeout: "30 seconds" })
    expect(result._tag).toBe("Success")
    expect(lines(log).map((line) => line.step)).toEqual(["before", "after"])
  })
})
