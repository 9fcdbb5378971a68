/**
 * Who hears of a finish, on Postgres: a caller in the runner's own process is handed the result by
 * the pass; a caller anywhere else is notified, because its start or its wait marked the execution
 * awaited, and the notification carries a small result, so the caller reads nothing. A finish
 * nobody elsewhere awaits sends no notification (each one costs the server a write to its notify
 * queue under a global lock). Two handles on one database stand for two processes: each has its
 * own in-process wake-ups.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { sql } from "kysely"
import pg from "pg"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  createAkter,
  makeLogger,
  makeOwnerClient,
  startRunner,
  type Akter,
  type Runner,
} from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import {
  FINISHED_CHANNEL,
  MAX_ANNOUNCED_RESULT_BYTES,
  parseFinishedPayload,
  type FinishedNotice,
} from "../../runtime/outbox/notifications.js"
import { decodeJson } from "../../runtime/storage/codec.js"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import { waitUntil } from "../support/waitUntil.js"
import { makeProbe, type Probe } from "./probeWorkflows.js"

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describePostgres("result notifications", () => {
  let probe: Probe
  let drop: (() => Promise<void>) | undefined
  let running: Akter
  let elsewhere: Akter
  let runner: Runner
  let listener: pg.Client
  /** The ids of the finish notifications heard, in order (and the markers we send). */
  const notified: string[] = []
  const notices: FinishedNotice[] = []

  beforeAll(async () => {
    probe = await makeProbe()
    const database = await createPostgresDatabase()
    drop = database.drop
    const logger = makeLogger({ level: "warn" })
    running = await createAkter({ databaseUrl: database.url, logger })
    elsewhere = await createAkter({ databaseUrl: database.url, logger })
    runner = await startRunner({ akter: running, workflows: probe.workflows, pollMs: 20 })
    listener = new pg.Client({ connectionString: database.url })
    await listener.connect()
    listener.on("notification", (message) => {
      if (message.channel !== FINISHED_CHANNEL) return
      const notice = parseFinishedPayload(message.payload ?? "")
      notified.push(notice.executionId)
      notices.push(notice)
    })
    await listener.query(`LISTEN ${FINISHED_CHANNEL}`)
  })

  afterAll(async () => {
    await listener?.end()
    await runner?.close()
    await running?.close()
    await elsewhere?.close()
    await drop?.()
  })

  const awaitedFlag = async (executionId: string) =>
    (
      await internalsOf(running)
        .storage.db.selectFrom("akter.executions")
        .select("awaited")
        .where("execution_id", "=", executionId)
        .executeTakeFirstOrThrow()
    ).awaited

  /** A finish notifies inside its own statement: once a later marker arrives, it would have too. */
  const notificationsUpTo = async (marker: string) => {
    // A NOTIFY of our own, sent after the finish committed: notifications arrive in commit order.
    await sql`SELECT pg_notify(${FINISHED_CHANNEL}, ${marker})`.execute(
      internalsOf(running).storage.db,
    )
    await waitUntil("our own notification arrives", () => notified.includes(marker), {
      timeoutMs: 5000,
    })
    return notified.slice(0, notified.indexOf(marker))
  }

  it("sends no notification for a start handed to this process's runner and awaited here", async () => {
    const client = makeOwnerClient<AnyClient>(running, probe.registration)
    const run = await client.quick.start(`o-${randomUUID().slice(0, 8)}`, { id: "local" })
    expect(await run.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { id: "local" },
    })
    expect(await awaitedFlag(run.executionId)).toBe(false)
    expect(await notificationsUpTo(`marker-${randomUUID()}`)).not.toContain(run.executionId)
  })

  it("notifies a caller whose start a runner in another process took", async () => {
    const client = makeOwnerClient<AnyClient>(elsewhere, probe.registration)
    const run = await client.quick.start(`o-${randomUUID().slice(0, 8)}`, { id: "remote" })
    expect(await awaitedFlag(run.executionId)).toBe(true)
    expect(await run.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { id: "remote" },
    })
    await waitUntil("its finish notifies", () => notified.includes(run.executionId), {
      timeoutMs: 5000,
    })
  })

  /** The handle elsewhere hears finishes: its LISTEN session is up and notifications work. */
  const hearingElsewhere = async () => {
    await internalsOf(elsewhere).listenForResults()
    await waitUntil("notifications work elsewhere", () => internalsOf(elsewhere).hearsResults(), {
      timeoutMs: 10_000,
    })
  }

  it("reads nothing for a caller awaiting a start it just wrote while it hears finishes: the notification carries the result", async () => {
    await hearingElsewhere()
    const client = makeOwnerClient<AnyClient>(elsewhere, probe.registration)
    const counters = internalsOf(elsewhere).storage.counters
    for (let round = 0; round < 5; round++) {
      const run = await client.quick.start(`o-${randomUUID().slice(0, 8)}`, { id: `r${round}` })
      const before = counters.statements
      expect(await run.result({ timeout: "5 seconds" })).toEqual({
        _tag: "Success",
        value: { id: `r${round}` },
      })
      expect(counters.statements - before).toBe(0)
      await waitUntil("its finish notifies", () => notified.includes(run.executionId), {
        timeoutMs: 5000,
      })
      const notice = notices.find((heard) => heard.executionId === run.executionId)!
      expect(decodeJson(notice.result!)).toEqual({
        _tag: "Success",
        value: { id: `r${round}` },
      })
    }
  })

  it("answers at once, reading nothing, for a fresh start whose finish was heard before the caller waited", async () => {
    await hearingElsewhere()
    const client = makeOwnerClient<AnyClient>(elsewhere, probe.registration)
    const run = await client.quick.start(`o-${randomUUID().slice(0, 8)}`, { id: "early" })
    await waitUntil("its finish notifies", () => notified.includes(run.executionId), {
      timeoutMs: 5000,
    })
    const counters = internalsOf(elsewhere).storage.counters
    const before = counters.statements
    const askedAt = Date.now()
    expect(await run.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { id: "early" },
    })
    // Not after the fallback poll, and not from the database: the notification's result was kept.
    expect(Date.now() - askedAt).toBeLessThan(90)
    expect(counters.statements - before).toBe(0)
  })

  it("reads nothing for a fresh start that runs past the first fallback poll: its finish will be announced", async () => {
    await hearingElsewhere()
    const client = makeOwnerClient<AnyClient>(elsewhere, probe.registration)
    const counters = internalsOf(elsewhere).storage.counters
    const owner = `o-${randomUUID().slice(0, 8)}`
    const run = await client.fenced.start(owner, { label: "long", then: "finish" })
    const before = counters.statements
    const result = run.result({ timeout: "10 seconds" })
    await waitUntil("its activity holds", () => probe.gates.entered(`${owner}/hold`), {
      timeoutMs: 5000,
    })
    // Longer than a poll that starts at 100 ms and doubles would wait before its first read.
    await new Promise((resolve) => setTimeout(resolve, 400))
    probe.gates.open(`${owner}/hold`)
    expect(await result).toMatchObject({ _tag: "Success" })
    expect(counters.statements - before).toBe(0)
  })

  it("reads a result too big for the notification once, after the notification", async () => {
    await hearingElsewhere()
    const client = makeOwnerClient<AnyClient>(elsewhere, probe.registration)
    const counters = internalsOf(elsewhere).storage.counters
    // Stored results are compressed: random text stays bigger than the limit.
    const text = randomBytes(MAX_ANNOUNCED_RESULT_BYTES).toString("hex")
    const run = await client.echo.start(`o-${randomUUID().slice(0, 8)}`, { text })
    const before = counters.statements
    expect(await run.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { text },
    })
    expect(counters.statements - before).toBe(1)
    await waitUntil("its finish notifies", () => notified.includes(run.executionId), {
      timeoutMs: 5000,
    })
    expect(notices.find((heard) => heard.executionId === run.executionId)!.result).toBeUndefined()
  })

  it("notifies a caller elsewhere that attached to a parked execution, once it finishes", async () => {
    const owner = `o-${randomUUID().slice(0, 8)}`
    const local = makeOwnerClient<AnyClient>(running, probe.registration)
    const run = await local.waits.start(owner, { mode: "single" })
    await waitUntil("it parks", async () => (await run.status()).status === "suspended", {
      timeoutMs: 5000,
    })
    expect(await awaitedFlag(run.executionId)).toBe(false)

    const remote = makeOwnerClient<AnyClient>(elsewhere, probe.registration)
    const awaiting = remote.waits.attach(run.executionId).result({ timeout: "10 seconds" })
    await waitUntil("the caller elsewhere marks it awaited", () => awaitedFlag(run.executionId), {
      timeoutMs: 5000,
    })
    await local.emit(owner, "Ping", { n: 7 })
    expect(await awaiting).toEqual({ _tag: "Success", value: { seen: [7] } })
    await waitUntil("its finish notifies", () => notified.includes(run.executionId), {
      timeoutMs: 5000,
    })
  })
})
