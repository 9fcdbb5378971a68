/**
 * One round of the database fault suite: on a fresh database of a private cluster, two `akter run`
 * processes serve `test/faults/faultApp.ts` while this process, as the client, starts executions
 * (an activity, a sleep, a race of an event against a long sleep, an activity), injects one fault —
 * a fast restart, an immediate stop with the server down 10 s, or SIGSTOP of the postmaster and
 * every backend for 20 s — calls the database throughout the outage, and then emits the events.
 * It reports, from what the database holds: right results, lost executions, duplicate settles,
 * writes under a stale generation (the write-audit triggers), whether every process is alive, how
 * soon the LISTEN sessions and the first finish were back, and start → result latency before and
 * after. Used by faultSuite.test.ts (one round per fault) and by `npm run faults -- --rounds N`.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import { fileURLToPath } from "node:url"
import pg from "pg"
import { createAkter, type Akter } from "../../runtime/akter.js"
import { makeOwnerClient } from "../../runtime/client/ownerClient.js"
import { DatabaseUnavailable } from "../../runtime/errors.js"
import { installWriteAudit, readWriteAudit } from "../support/writeAudit.js"
import { sleep, waitUntil } from "../support/waitUntil.js"
import { expectedValue, registration } from "./faultApp.js"
import type { PrivateCluster } from "./privateCluster.js"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

export type Fault = "restart" | "stop" | "pause" | "none"

export interface RoundReport {
  readonly fault: Fault
  readonly runs: number
  readonly right: number
  readonly wrong: number
  readonly lost: number
  readonly duplicates: number
  readonly staleWrites: number
  readonly processesAlive: string
  /** From the database's return to every runner's (and the client's) LISTEN session back. */
  readonly listenBackMs: number
  /** From the database's return to the first execution finished after it. */
  readonly firstFinishMs: number
  readonly wakeBeforeMs: number
  readonly wakeAfterMs: number
  /** Client calls during the outage: succeeded, DatabaseUnavailable, anything else, over their bound. */
  readonly outageCalls: {
    readonly ok: number
    readonly unavailable: number
    readonly other: number
    readonly late: number
  }
  readonly runnerLog: string
}

type FaultClient = {
  mixed: {
    start: (ownerId: string, input: { n: number }) => Promise<{ executionId: string }>
  }
  quick: {
    start: (
      ownerId: string,
      input: { n: number },
    ) => Promise<{ result: (options?: { timeout?: string }) => Promise<{ _tag: string }> }>
  }
  emit: (
    ownerId: string,
    event: "Go",
    payload: { k: number },
    options?: { commandId?: string },
  ) => Promise<unknown>
}

const CALL_TIMEOUT_MS = 3000
/** Slack over a call's bound for a loaded machine's timers. */
const LATE_SLACK_MS = 1500

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

const adminQuery = async (url: string, text: string, values: unknown[] = []) => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  client.on("error", () => {})
  await client.connect()
  try {
    return (await client.query(text, values)).rows
  } finally {
    await client.end().catch(() => {})
  }
}

const spawnRunner = (name: string, databaseUrl: string, env: Record<string, string>) => {
  const child = spawn(
    process.execPath,
    ["bin/akter.js", "run", "test/faults/faultApp.ts", "--lease-ms", "10000"],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        PGAPPNAME: name,
        AKTER_LOG: "info",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  )
  let output = ""
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
  return { name, child, output: () => output }
}

/** Start → result of `quick`, sequentially: the median, in ms. */
const wakeLatency = async (client: FaultClient, rounds: number) => {
  const times: number[] = []
  for (let i = 0; i < rounds; i++) {
    const started = Date.now()
    const execution = await client.quick.start(`q-${randomBytes(4).toString("hex")}`, { n: i })
    const result = await execution.result({ timeout: "30 seconds" })
    if (result._tag !== "Success") throw new Error(`quick ended ${JSON.stringify(result)}`)
    times.push(Date.now() - started)
  }
  return median(times)
}

export interface RoundOptions {
  readonly cluster: PrivateCluster
  readonly fault: Fault
  readonly executions?: number
  /** Where runners and the client connect (a PgBouncer in front of the cluster); default the cluster. */
  readonly connectUrl?: (database: string) => string
  /** Extra environment of the runners (AKTER_LISTEN_URL). */
  readonly runnerEnv?: (database: string) => Record<string, string>
  /** LISTEN sessions expected back (runners and client), counted on the cluster. */
  readonly listenSessions?: number
  readonly progress?: (line: string) => void
}

export const runFaultRound = async (options: RoundOptions): Promise<RoundReport> => {
  const { cluster, fault } = options
  const say = options.progress ?? (() => {})
  const executions = options.executions ?? 150
  const database = `faults_${randomBytes(4).toString("hex")}`
  await adminQuery(cluster.url, `CREATE DATABASE ${database}`)
  const direct = cluster.url.replace(/\/postgres$/, `/${database}`)
  const url = options.connectUrl?.(database) ?? direct
  const migrating = await createAkter({ databaseUrl: direct })
  await migrating.close()
  await installWriteAudit(direct)
  const runners = ["runner-a", "runner-b"].map((name) =>
    spawnRunner(name, url, options.runnerEnv?.(database) ?? {}),
  )
  let akter: Akter | undefined
  try {
    await waitUntil(
      "both runners started",
      () => runners.every((runner) => runner.output().includes("runner started")),
      { timeoutMs: 90_000, details: () => runners.map((r) => r.output()).join("\n") },
    )
    akter = await createAkter({
      databaseUrl: url,
      callTimeout: `${CALL_TIMEOUT_MS} millis`,
      ...(options.runnerEnv === undefined
        ? {}
        : { listenUrl: options.runnerEnv(database)["AKTER_LISTEN_URL"] }),
    })
    const client = makeOwnerClient<FaultClient>(akter, registration)
    const wakeBeforeMs = await wakeLatency(client, 15)
    say(`${fault}: baseline wake ${wakeBeforeMs} ms; starting ${executions} executions`)
    const ids: string[] = []
    for (let i = 0; i < executions; i++) {
      ids.push((await client.mixed.start(`m-${i}`, { n: i })).executionId)
    }
    // Most are past the activity and in the sleep or the race when the fault lands.
    await sleep(800)
    const calls = { ok: 0, unavailable: 0, other: 0, late: 0 }
    let outage = true
    const caller = (async () => {
      const quick = makeOwnerClient<{
        mixed: { attach: (id: string) => { status: () => Promise<unknown> } }
      }>(akter!, registration)
      while (outage) {
        const started = Date.now()
        try {
          await quick.mixed.attach(ids[Math.floor(Math.random() * ids.length)]!).status()
          calls.ok += 1
        } catch (error) {
          if (error instanceof DatabaseUnavailable) calls.unavailable += 1
          else calls.other += 1
        }
        if (Date.now() - started > CALL_TIMEOUT_MS + LATE_SLACK_MS) calls.late += 1
        await sleep(200)
      }
    })()
    say(`${fault}: injecting`)
    if (fault === "restart") cluster.restartFast()
    else if (fault === "stop") {
      cluster.stopImmediate()
      await sleep(10_000)
      cluster.start()
    } else if (fault === "pause") {
      cluster.pause()
      await sleep(20_000)
      cluster.resume()
    }
    const returnedAt = Date.now()
    outage = false
    await caller
    const expectedListens = options.listenSessions ?? 3
    await waitUntil(
      "the LISTEN sessions are back",
      async () => {
        const rows = await adminQuery(
          cluster.url,
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN%'`,
          [database],
        ).catch(() => [{ n: 0 }])
        return rows[0].n >= expectedListens
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    )
    const listenBackMs = Date.now() - returnedAt
    say(`${fault}: database back; LISTEN back after ${listenBackMs} ms; emitting`)
    for (let i = 0; i < executions; i++) {
      await client.emit(`m-${i}`, "Go", { k: i + 1 }, { commandId: `go-${i}` })
    }
    const finishedRows = () =>
      adminQuery(
        direct,
        `SELECT execution_id, status, finished_at_ms FROM akter.executions WHERE workflow = 'mixed'`,
      )
    await waitUntil(
      `all ${executions} executions finish`,
      async () =>
        (await finishedRows()).filter((row) => row.status === "finished").length === executions,
      {
        timeoutMs: 180_000,
        intervalMs: 200,
        details: () => runners.map((r) => r.output()).join("\n"),
      },
    )
    const firstFinish = Math.min(
      ...(await finishedRows())
        .map((row) => Number(row.finished_at_ms))
        .filter((at) => at >= returnedAt - 5000),
    )
    const firstFinishMs = Math.max(0, firstFinish - returnedAt)
    const wakeAfterMs = await wakeLatency(client, 15)
    let right = 0
    let wrong = 0
    for (let i = 0; i < executions; i++) {
      const execution = makeOwnerClient<{
        mixed: {
          attach: (id: string) => {
            result: () => Promise<{ _tag: string; value?: { value: number } }>
          }
        }
      }>(akter, registration).mixed.attach(ids[i]!)
      const result = await execution.result()
      if (result._tag === "Success" && result.value?.value === expectedValue(i, i + 1)) right += 1
      else wrong += 1
    }
    const lost =
      executions - (await finishedRows()).filter((row) => row.status === "finished").length
    const auditDb = await createAkter({ databaseUrl: direct, migrate: false })
    const { internalsOf } = await import("../../runtime/akter.js")
    const audit = await readWriteAudit(internalsOf(auditDb).storage.db)
    await auditDb.close()
    const alive = runners.filter(
      (runner) => runner.child.exitCode === null && runner.child.signalCode === null,
    )
    return {
      fault,
      runs: executions,
      right,
      wrong,
      lost,
      duplicates:
        audit.duplicateSettles.length + audit.duplicateFinishes.length + audit.overwrites.length,
      staleWrites: audit.fenceBreaches.length,
      processesAlive: `${alive.length + 1}/${runners.length + 1}`,
      listenBackMs,
      firstFinishMs,
      wakeBeforeMs,
      wakeAfterMs,
      outageCalls: calls,
      runnerLog: runners.map((runner) => `--- ${runner.name}\n${runner.output()}`).join("\n"),
    }
  } finally {
    await akter?.close().catch(() => {})
    for (const runner of runners) runner.child.kill("SIGKILL")
    await adminQuery(cluster.url, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(
      () => {},
    )
  }
}

export const reportHeader =
  "| fault | runs | right | lost | duplicates | stale writes | processes alive | LISTEN back (ms) | DB return → first finish (ms) | wake before (ms) | wake after (ms) | outage calls ok / DatabaseUnavailable / other / late |"

export const reportRow = (r: RoundReport) =>
  `| ${r.fault} | ${r.runs} | ${r.right} | ${r.lost} | ${r.duplicates} | ${r.staleWrites} | ${r.processesAlive} | ${r.listenBackMs} | ${r.firstFinishMs} | ${r.wakeBeforeMs} | ${r.wakeAfterMs} | ${r.outageCalls.ok} / ${r.outageCalls.unavailable} / ${r.outageCalls.other} / ${r.outageCalls.late} |`

export type { ChildProcess }
