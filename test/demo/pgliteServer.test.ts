/**
 * The PGlite wire-protocol server with real node-postgres clients, in this process and in child
 * processes: transactions of different connections never interleave, a connection that dies inside
 * a transaction is rolled back without blocking the others, notifications reach their listener.
 */
import { spawn } from "node:child_process"
import { connect } from "node:net"
import { fileURLToPath } from "node:url"
import { PGlite } from "@electric-sql/pglite"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { servePglite, type PgliteServer } from "../../runtime/storage/pgliteServer.js"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** A child process that runs `transactions` read-modify-write increments of `counter` row `name`. */
const incrementInChild = (url: string, name: string, transactions: number) =>
  new Promise<{ code: number | null; output: string }>((resolve) => {
    const script = `
      import pg from "pg"
      const clients = [new pg.Client(${JSON.stringify(url)}), new pg.Client(${JSON.stringify(url)})]
      for (const client of clients) await client.connect()
      await Promise.all(clients.map(async (client) => {
        for (let i = 0; i < ${transactions}; i++) {
          await client.query("BEGIN")
          const { rows } = await client.query("SELECT n FROM counter WHERE name = $1", [${JSON.stringify(name)}])
          await new Promise((resolve) => setTimeout(resolve, i % 3))
          await client.query("UPDATE counter SET n = $1 WHERE name = $2", [rows[0].n + 1, ${JSON.stringify(name)}])
          await client.query("COMMIT")
        }
      }))
      for (const client of clients) await client.end()
    `
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.once("exit", (code) => resolve({ code, output }))
  })

describe("the PGlite wire-protocol server", () => {
  let pglite: PGlite
  let server: PgliteServer
  const clients: pg.Client[] = []

  const client = async () => {
    const made = new pg.Client({ connectionString: server.url })
    made.on("error", () => {})
    await made.connect()
    clients.push(made)
    return made
  }

  beforeAll(async () => {
    pglite = await PGlite.create()
    await pglite.exec(`
      CREATE TABLE counter (name text PRIMARY KEY, n integer NOT NULL);
      CREATE TABLE notes (id serial PRIMARY KEY, text text NOT NULL);
    `)
    server = await servePglite(pglite)
  })

  afterAll(async () => {
    for (const made of clients) await made.end().catch(() => {})
    await server?.close()
    await pglite?.close()
  })

  it("listens on 127.0.0.1 at an ephemeral port and answers node-postgres", async () => {
    expect(server.url).toMatch(
      /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\?akter_statements=unprepared$/,
    )
    expect(server.port).toBeGreaterThan(0)
    const one = await client()
    const { rows } = await one.query("SELECT $1::int + 1 AS answer, current_database() AS db", [41])
    expect(rows).toEqual([{ answer: 42, db: "postgres" }])
  })

  it("makes a second connection's transaction wait until the first one commits", async () => {
    const first = await client()
    const second = await client()
    const order: string[] = []
    await first.query("BEGIN")
    await first.query("INSERT INTO notes (text) VALUES ('first')")
    const secondDone = (async () => {
      await second.query("BEGIN")
      order.push("second began")
      const { rows } = await second.query("SELECT text FROM notes WHERE text = 'first'")
      await second.query("COMMIT")
      return rows
    })()
    await new Promise((resolve) => setTimeout(resolve, 50))
    order.push("first commits")
    await first.query("COMMIT")
    expect(await secondDone).toEqual([{ text: "first" }])
    expect(order).toEqual(["first commits", "second began"])
  })

  it("keeps read-modify-write transactions of four connections in two processes from interleaving", async () => {
    const setup = await client()
    await setup.query("INSERT INTO counter (name, n) VALUES ('shared', 0)")
    const [one, two] = await Promise.all([
      incrementInChild(server.url, "shared", 40),
      incrementInChild(server.url, "shared", 40),
    ])
    expect(one).toEqual({ code: 0, output: "" })
    expect(two).toEqual({ code: 0, output: "" })
    const { rows } = await setup.query("SELECT n FROM counter WHERE name = 'shared'")
    // Any interleaving of two increments loses one of them: 4 connections × 40 must all count.
    expect(rows).toEqual([{ n: 160 }])
  })

  it("rolls back a connection that dies inside a transaction, and lets the others go on", async () => {
    const doomed = new pg.Client({ connectionString: server.url })
    doomed.on("error", () => {})
    await doomed.connect()
    await doomed.query("BEGIN")
    await doomed.query("INSERT INTO notes (text) VALUES ('never committed')")
    const waiting = await client()
    const waited = waiting.query(
      "SELECT count(*)::int AS n FROM notes WHERE text = 'never committed'",
    )
    ;(
      doomed as unknown as { connection: { stream: { destroy(): void } } }
    ).connection.stream.destroy()
    expect((await waited).rows).toEqual([{ n: 0 }])
    const { rows } = await waiting.query("SELECT 1 AS alive")
    expect(rows).toEqual([{ alive: 1 }])
  })

  it("holds the session through a failed transaction until its ROLLBACK", async () => {
    const failing = await client()
    const other = await client()
    await failing.query("BEGIN")
    const error = await failing.query("SELECT 1 / 0").catch((e: Error) => e)
    expect((error as Error).message).toBe("division by zero")
    const otherDone = other.query("SELECT 'after' AS step")
    const refused = await failing.query("SELECT 1").catch((e: Error) => e)
    expect((refused as Error).message).toContain("current transaction is aborted")
    await failing.query("ROLLBACK")
    expect((await otherDone).rows).toEqual([{ step: "after" }])
  })

  it("delivers a NOTIFY to the connection that listens on its channel, and only to it", async () => {
    const listener = await client()
    const notifier = await client()
    const heard: string[] = []
    const notifierHeard: string[] = []
    listener.on("notification", (note) => heard.push(`${note.channel}:${note.payload}`))
    notifier.on("notification", (note) => notifierHeard.push(`${note.channel}:${note.payload}`))
    await listener.query(`LISTEN ${pg.escapeIdentifier("akter_Wake")}`)
    await notifier.query("BEGIN")
    await notifier.query("SELECT pg_notify('akter_Wake', '7')")
    await notifier.query("COMMIT")
    await notifier.query("NOTIFY other_channel, 'x'")
    const deadline = Date.now() + 2000
    while (heard.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    expect(heard).toEqual(["akter_Wake:7"])
    expect(notifierHeard).toEqual([])
  })

  it("answers an SSL request with N and then serves the startup that follows in clear text", async () => {
    const received = await new Promise<Buffer>((resolve, reject) => {
      const socket = connect(server.port, "127.0.0.1")
      let bytes = Buffer.alloc(0)
      socket.on("error", reject)
      socket.on("data", (chunk: Buffer) => {
        bytes = Buffer.concat([bytes, chunk])
        if (bytes.length === 1) {
          const params = Buffer.from("user\0postgres\0database\0postgres\0\0")
          const startup = Buffer.alloc(8)
          startup.writeInt32BE(8 + params.length, 0)
          startup.writeInt32BE(196_608, 4)
          socket.write(Buffer.concat([startup, params]))
        }
        // ReadyForQuery 'Z', length 5, status 'I' ends the startup.
        if (bytes.subarray(-6).equals(Buffer.from([0x5a, 0, 0, 0, 5, 0x49]))) {
          socket.end()
          resolve(bytes)
        }
      })
      const sslRequest = Buffer.alloc(8)
      sslRequest.writeInt32BE(8, 0)
      sslRequest.writeInt32BE(80_877_103, 4)
      socket.write(sslRequest)
    })
    expect(received.subarray(0, 1).toString()).toBe("N")
    // AuthenticationOk: 'R', length 8, code 0.
    expect([...received.subarray(1, 10)]).toEqual([0x52, 0, 0, 0, 8, 0, 0, 0, 0])
    expect(received.toString("latin1")).toContain("server_version\0")
  })
})
