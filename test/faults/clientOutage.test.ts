/**
 * One process, its own Postgres cluster, the database's routine faults: a fast restart kills a
 * statement in flight on a checked-out connection, an immediate stop leaves the server down, and a
 * SIGSTOP leaves it silent. The process survives each (an unhandled 'error' event would fail the
 * run), its client calls either succeed or fail with `DatabaseUnavailable` (carrying the driver's
 * cause) within their own timeout — `result({ timeout: "3 seconds" })` on a paused server comes back
 * long before the pause ends — and once the database is back the same handle works again and the
 * LISTEN session is back in pg_stat_activity.
 */
import { Effect } from "effect"
import pg from "pg"
import { afterAll, beforeAll, expect, it } from "vitest"
import { createAkter, internalsOf, type Akter } from "../../runtime/akter.js"
import { makeEffectOwnerClient, makeOwnerClient } from "../../runtime/client/ownerClient.js"
import { DatabaseUnavailable } from "../../runtime/errors.js"
import {
  countExecutions,
  inspectExecution,
  listExecutions,
} from "../../runtime/inspect/executionListing.js"
import { isConnectionError } from "../../runtime/storage/connectionErrors.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { waitUntil } from "../support/waitUntil.js"
import {
  clusterMissing,
  describeNeeding,
  startPrivateCluster,
  type PrivateCluster,
} from "./privateCluster.js"

const registration = await registrationFromYaml(
  `
akter: 1
owner: Outage
events:
  Poke: { n: integer }
workflows:
  waiting:
    output: { n: integer }
    steps:
      poke: { kind: wait, event: Poke }
`,
  "test/faults/outage.yaml",
)

type Client = {
  waiting: {
    start: (
      ownerId: string,
      input: undefined,
      options?: { commandId?: string },
    ) => Promise<{
      executionId: string
      status: () => Promise<unknown>
      result: (options?: { timeout?: string }) => Promise<unknown>
    }>
  }
  emit: (
    ownerId: string,
    event: string,
    payload: unknown,
    options?: { commandId?: string },
  ) => Promise<unknown>
}

/** The error a call rejected with and how long it took, or its value. */
const timed = async <A>(call: () => Promise<A>) => {
  const started = Date.now()
  try {
    return { value: await call(), ms: Date.now() - started }
  } catch (error) {
    return { error, ms: Date.now() - started }
  }
}

const listenSessions = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
    )
    return rows[0].n as number
  } finally {
    await client.end()
  }
}

describeNeeding("client calls while the database is away", clusterMissing, () => {
  let cluster: PrivateCluster
  let akter: Akter
  let client: Client

  beforeAll(async () => {
    cluster = await startPrivateCluster()
    akter = await createAkter({ databaseUrl: cluster.url, callTimeout: "2 seconds" })
    client = makeOwnerClient<Client>(akter, registration)
  })
  afterAll(async () => {
    cluster?.resume()
    await akter?.close().catch(() => {})
    cluster?.destroy()
  })

  it("a fast restart fails the statement in flight on a checked-out connection, and the process goes on", async () => {
    const execution = await client.waiting.start("o1", undefined)
    // Listening for results opens the LISTEN session.
    await expect(execution.result({ timeout: "10 millis" })).rejects.toMatchObject({
      _tag: "ResultTimeout",
    })
    const { db } = internalsOf(akter).storage
    const inFlight = db.connection().execute((connection) =>
      connection.executeQuery({
        sql: "SELECT pg_sleep(30)",
        parameters: [],
        query: { kind: "RawNode" },
      } as never),
    )
    await waitUntil("the pg_sleep is running", async () => {
      const pgClient = new pg.Client({ connectionString: cluster.url })
      await pgClient.connect()
      const { rows } = await pgClient.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'",
      )
      await pgClient.end()
      return rows[0].n === 1
    })
    cluster.restartFast()
    const failed = await inFlight.then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(isConnectionError(failed)).toBe(true)
    expect(await execution.status()).toMatchObject({ status: "running" })
    await waitUntil(
      "the LISTEN session is back",
      async () => (await listenSessions(cluster.url)) === 1,
      {
        timeoutMs: 10_000,
      },
    )
  })

  it("while the server is stopped, calls fail with DatabaseUnavailable within the call timeout, and work again after", async () => {
    const execution = await client.waiting.start("o2", undefined, { commandId: "start-o2" })
    cluster.stopImmediate()
    try {
      const status = await timed(() => execution.status())
      expect(status.error).toBeInstanceOf(DatabaseUnavailable)
      expect((status.error as DatabaseUnavailable).operation).toBe("status")
      expect(isConnectionError((status.error as DatabaseUnavailable).cause)).toBe(true)
      expect(status.ms).toBeLessThan(2000 + 3000)
      const start = await timed(() =>
        client.waiting.start("o3", undefined, { commandId: "start-o3" }),
      )
      expect(start.error).toBeInstanceOf(DatabaseUnavailable)
      expect((start.error as DatabaseUnavailable).message).toMatch(
        /^start Outage\.waiting: the database is unavailable \(.*\); gave up after \d+ ms/,
      )
      const emit = await timed(() => client.emit("o2", "Poke", { n: 1 }, { commandId: "poke-o2" }))
      expect(emit.error).toBeInstanceOf(DatabaseUnavailable)
      const effects = makeEffectOwnerClient<{
        waiting: {
          attach: (
            id: string,
          ) => Effect.Effect<{ status: Effect.Effect<unknown, DatabaseUnavailable> }>
        }
      }>(akter, registration)
      const flipped = await Effect.runPromise(
        Effect.flip(
          Effect.flatMap(effects.waiting.attach(execution.executionId), (handle) => handle.status),
        ),
      )
      expect(flipped).toBeInstanceOf(DatabaseUnavailable)
      // The inspection reads are idempotent calls too.
      const reads: readonly (readonly [string, () => Promise<unknown>])[] = [
        ["listExecutions", () => listExecutions(akter, { ownerType: "Outage" })],
        ["countExecutions", () => countExecutions(akter, { ownerType: "Outage" })],
        ["inspectExecution", () => inspectExecution(akter, execution.executionId)],
      ]
      for (const [operation, read] of reads) {
        const outcome = await timed(read)
        expect(outcome.error, operation).toBeInstanceOf(DatabaseUnavailable)
        expect((outcome.error as DatabaseUnavailable).operation).toBe(operation)
        expect(outcome.ms).toBeLessThan(2000 + 3000)
      }
    } finally {
      cluster.start()
    }
    // And so do the inspection reads: a page and the count agree.
    const { total } = await countExecutions(akter, { ownerType: "Outage" })
    expect(total).toBeGreaterThan(0)
    expect((await listExecutions(akter, { ownerType: "Outage" })).executions).toHaveLength(total)
    // The same handle and the same commands, once the server is back: nothing was written twice.
    await client.waiting.start("o3", undefined, { commandId: "start-o3" })
    expect(await client.emit("o2", "Poke", { n: 1 }, { commandId: "poke-o2" })).toEqual({
      sequence: 1,
    })
    expect(await client.emit("o2", "Poke", { n: 1 }, { commandId: "poke-o2" })).toEqual({
      sequence: 1,
    })
    await waitUntil(
      "the LISTEN session is back",
      async () => (await listenSessions(cluster.url)) === 1,
      {
        timeoutMs: 10_000,
      },
    )
  })

  it("a paused server costs result({ timeout: '3 seconds' }) its three seconds, not the pause", async () => {
    const execution = await client.waiting.start("o4", undefined)
    cluster.pause()
    let outcome: Awaited<ReturnType<typeof timed>>
    try {
      outcome = await timed(() => execution.result({ timeout: "3 seconds" }))
      // The pause would have lasted 20 s: the call came back on its own deadline.
      const status = await timed(() => execution.status())
      expect(status.error).toBeInstanceOf(DatabaseUnavailable)
      expect(status.ms).toBeLessThan(2000 + 3000)
    } finally {
      cluster.resume()
    }
    expect(outcome.error).toBeInstanceOf(DatabaseUnavailable)
    expect(String((outcome.error as DatabaseUnavailable).message)).toMatch(
      /^result: .*no answer within/,
    )
    expect(outcome.ms).toBeGreaterThanOrEqual(2900)
    expect(outcome.ms).toBeLessThan(3000 + 3000)
    expect(await execution.status()).toMatchObject({ status: "running" })
  })
})
