/**
 * A Postgres wire-protocol server over one PGlite instance, listening on 127.0.0.1 at an ephemeral
 * port, so that other processes — a runner started with `akter run`, `psql`, `akter inspect` — can
 * use an embedded database. PGlite is one database session, so the server lends that session to one
 * connection at a time, at transaction boundaries: a connection holds it from its first message until
 * a ReadyForQuery reports the session idle (`I`); while it is inside a transaction (`T`) or a failed
 * one (`E`), every other connection's messages wait in arrival order. A connection that closes while
 * it holds the session is rolled back. Notifications are routed to the connections that asked for
 * them with `LISTEN`, because the one session receives every `NOTIFY`.
 *
 * Not supported: TLS (an SSL request is answered `N`, and clients continue in clear text), cancel
 * requests, and session state kept across transactions (a `SET` or a named prepared statement is
 * seen by every connection). The server never closes the PGlite instance: its owner does.
 */
import { createServer, type Server, type Socket } from "node:net"
import type { PGlite } from "@electric-sql/pglite"
import { UNPREPARED_PARAMETER } from "./openStorage.js"

export interface PgliteServer {
  /** `postgres://postgres@127.0.0.1:PORT/postgres?akter_statements=unprepared`, for `DATABASE_URL`. */
  readonly url: string
  readonly port: number
  /** Connections accepted so far. */
  readonly connections: number
  /** Stops listening, closes every connection (rolling back the one inside a transaction). */
  close(): Promise<void>
}

const PROTOCOL_3 = 196_608
const SSL_REQUEST = 80_877_103
const GSSENC_REQUEST = 80_877_104
const CANCEL_REQUEST = 80_877_102
/** Startup packets larger than this are refused: a real one is a few hundred bytes. */
const MAX_STARTUP_BYTES = 10_000

/** Settings a client reads from ParameterStatus at startup (node-postgres and libpq look at these). */
const REPORTED_SETTINGS = [
  "server_version",
  "server_encoding",
  "client_encoding",
  "DateStyle",
  "IntervalStyle",
  "TimeZone",
  "integer_datetimes",
  "standard_conforming_strings",
] as const

const message = (type: string, body: Buffer): Buffer => {
  const header = Buffer.alloc(5)
  header.write(type, 0, "latin1")
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}

const int32 = (...values: number[]): Buffer => {
  const buffer = Buffer.alloc(values.length * 4)
  values.forEach((value, index) => buffer.writeInt32BE(value, index * 4))
  return buffer
}

const cstring = (text: string): Buffer => Buffer.from(`${text}\0`, "utf8")

const errorResponse = (code: string, text: string): Buffer =>
  message(
    "E",
    Buffer.concat([
      cstring("SERROR"),
      cstring("VERROR"),
      cstring(`C${code}`),
      cstring(`M${text}`),
      Buffer.of(0),
    ]),
  )

const querySync = (text: string): Buffer =>
  Buffer.concat([message("S", Buffer.alloc(0)), message("Q", cstring(text))])

/** One backend message as PGlite wrote it. */
interface BackendFrame {
  readonly type: string
  readonly bytes: Buffer
}

const framesOf = (output: Uint8Array): BackendFrame[] => {
  const buffer = Buffer.from(output.buffer, output.byteOffset, output.byteLength)
  const frames: BackendFrame[] = []
  for (let offset = 0; offset + 5 <= buffer.length;) {
    const length = buffer.readInt32BE(offset + 1)
    frames.push({
      type: String.fromCharCode(buffer[offset]!),
      bytes: buffer.subarray(offset, offset + 1 + length),
    })
    offset += 1 + length
  }
  return frames
}

/** The channel and payload of a NotificationResponse (`A`): int32 pid, channel\0, payload\0. */
const notificationChannel = (frame: BackendFrame): string => {
  const start = 9
  const end = frame.bytes.indexOf(0, start)
  return frame.bytes.subarray(start, end).toString("utf8")
}

/** `LISTEN x` / `UNLISTEN x` / `UNLISTEN *` in a statement text, with the channel as Postgres names it. */
const LISTEN_STATEMENT = /^\s*(UNLISTEN|LISTEN)\s+(\*|"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)\s*$/i

const listenChanges = (text: string): { listen: boolean; channel: string }[] =>
  text.split(";").flatMap((statement) => {
    const match = LISTEN_STATEMENT.exec(statement)
    if (match === null) return []
    const name = match[2]!
    const channel = name.startsWith('"')
      ? name.slice(1, -1).replaceAll('""', '"')
      : name.toLowerCase()
    return [{ listen: match[1]!.toUpperCase() === "LISTEN", channel }]
  })

/** The statement text of a Query (`Q`) or Parse (`P`) frontend message, else undefined. */
const statementText = (type: string, body: Buffer): string | undefined => {
  if (type === "Q") return body.subarray(0, body.indexOf(0)).toString("utf8")
  if (type === "P") {
    const nameEnd = body.indexOf(0)
    return body.subarray(nameEnd + 1, body.indexOf(0, nameEnd + 1)).toString("utf8")
  }
  return undefined
}

class Connection {
  /** Bytes received and not yet framed. */
  buffer: Buffer = Buffer.alloc(0)
  started = false
  closed = false
  /** Complete frontend messages waiting for the session. */
  readonly pending: Buffer[] = []
  readonly channels = new Set<string>()
  constructor(
    readonly id: number,
    readonly socket: Socket,
  ) {}
  send(bytes: Buffer) {
    if (!this.closed && bytes.length > 0) this.socket.write(bytes)
  }
}

/**
 * Serves `pglite` to other processes until `close()`.
 *
 * @example
 * const pglite = await PGlite.create()
 * const server = await servePglite(pglite)
 * spawn("node", ["bin/akter.js", "run", "app.ts"], { env: { ...process.env, DATABASE_URL: server.url } })
 */
export const servePglite = async (
  pglite: PGlite,
  options: { readonly port?: number } = {},
): Promise<PgliteServer> => {
  await pglite.waitReady
  const settings = new Map<string, string>()
  for (const name of REPORTED_SETTINGS) {
    const { rows } = await pglite.query<{ value: string }>("SELECT current_setting($1) AS value", [
      name,
    ])
    settings.set(name, rows[0]?.value ?? "")
  }
  const greeting = Buffer.concat([
    message("R", int32(0)),
    ...[...settings].map(([name, value]) =>
      message("S", Buffer.concat([cstring(name), cstring(value)])),
    ),
  ])

  const open = new Set<Connection>()
  /** Connections with messages waiting, in arrival order. */
  const queue: Connection[] = []
  /** The connection the session is lent to; undefined while the session is idle. */
  let holder: Connection | undefined
  /** Releases PGlite's own lock, held while a connection holds the session. */
  let releaseLock: (() => void) | undefined
  let pumping = false
  let accepted = 0
  let failure: unknown

  /** Keeps in-process users of `pglite` (its query API) out while a connection holds the session. */
  const takeLock = () =>
    new Promise<void>((locked) => {
      void pglite.runExclusive(
        () =>
          new Promise<void>((release) => {
            releaseLock = release
            locked()
          }),
      )
    })

  const giveBack = () => {
    holder = undefined
    releaseLock?.()
    releaseLock = undefined
  }

  const routeNotification = (frame: BackendFrame) => {
    const channel = notificationChannel(frame)
    for (const connection of open)
      if (connection.channels.has(channel)) connection.send(frame.bytes)
  }

  /** Runs messages on the session; the ReadyForQuery status of the output, if it has one. */
  const execute = async (input: Buffer, answer: Connection | undefined) => {
    const frames = framesOf(await pglite.execProtocolRaw(input))
    const reply = frames.filter((frame) => frame.type !== "A")
    answer?.send(Buffer.concat(reply.map((frame) => frame.bytes)))
    for (const frame of frames) if (frame.type === "A") routeNotification(frame)
    const ready = reply.findLast((frame) => frame.type === "Z")
    return ready === undefined ? undefined : String.fromCharCode(ready.bytes[5]!)
  }

  const trackListens = (connection: Connection, input: Buffer[]) => {
    for (const frame of input) {
      const text = statementText(String.fromCharCode(frame[0]!), frame.subarray(5))
      if (text === undefined || !/LISTEN/i.test(text)) continue
      for (const change of listenChanges(text)) {
        if (change.channel === "*") connection.channels.clear()
        else if (change.listen) connection.channels.add(change.channel)
        else connection.channels.delete(change.channel)
      }
    }
  }

  /** Lends the session to one connection at a time until nobody has work the session can take. */
  const pump = async () => {
    if (pumping) return
    pumping = true
    try {
      for (;;) {
        if (holder !== undefined && holder.closed) {
          // Ends whatever the dead connection left open: a half-sent extended query, a transaction.
          await execute(querySync("ROLLBACK"), undefined)
          giveBack()
          continue
        }
        const connection = holder ?? queue.shift()
        if (connection === undefined) return
        if (connection.closed || connection.pending.length === 0) {
          if (connection === holder) return
          continue
        }
        if (holder === undefined) {
          await takeLock()
          holder = connection
        }
        const input = connection.pending.splice(0)
        trackListens(connection, input)
        const status = await execute(Buffer.concat(input), connection)
        if (status === "I") giveBack()
      }
    } catch (error) {
      // PGlite itself failed: nothing can be trusted any more, so every connection is closed.
      failure = error
      for (const connection of open) connection.socket.destroy()
      giveBack()
    } finally {
      pumping = false
    }
  }

  const enqueue = (connection: Connection) => {
    if (connection !== holder && !queue.includes(connection)) queue.push(connection)
    void pump()
  }

  const startup = (connection: Connection): boolean => {
    const { buffer } = connection
    if (buffer.length < 8) return false
    const length = buffer.readInt32BE(0)
    if (length < 8 || length > MAX_STARTUP_BYTES) {
      connection.socket.end(errorResponse("08P01", "invalid startup packet length"))
      return false
    }
    if (buffer.length < length) return false
    const code = buffer.readInt32BE(4)
    connection.buffer = buffer.subarray(length)
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      connection.socket.write("N")
      return true
    }
    if (code === CANCEL_REQUEST) {
      connection.socket.end()
      return false
    }
    if (code >> 16 !== PROTOCOL_3 >> 16) {
      connection.socket.end(
        errorResponse("0A000", `unsupported frontend protocol ${code >> 16}.${code & 0xffff}`),
      )
      return false
    }
    connection.started = true
    connection.send(
      Buffer.concat([
        greeting,
        message("K", int32(connection.id, 0x616b7472)),
        message("Z", Buffer.from("I")),
      ]),
    )
    return true
  }

  const receive = (connection: Connection, chunk: Buffer) => {
    connection.buffer =
      connection.buffer.length === 0 ? chunk : Buffer.concat([connection.buffer, chunk])
    while (!connection.started) if (!startup(connection)) return
    let queued = false
    for (;;) {
      const { buffer } = connection
      if (buffer.length < 5) break
      const length = buffer.readInt32BE(1)
      if (buffer.length < 1 + length) break
      const frame = buffer.subarray(0, 1 + length)
      connection.buffer = buffer.subarray(1 + length)
      if (frame[0] === 0x58 /* X: Terminate */) {
        connection.socket.end()
        break
      }
      connection.pending.push(Buffer.from(frame))
      queued = true
    }
    if (queued) enqueue(connection)
  }

  const server: Server = createServer((socket) => {
    accepted += 1
    if (failure !== undefined) {
      socket.end(errorResponse("58000", `the embedded database failed: ${String(failure)}`))
      return
    }
    socket.setNoDelay(true)
    const connection = new Connection(accepted, socket)
    open.add(connection)
    socket.on("data", (chunk: Buffer) => receive(connection, chunk))
    socket.on("error", () => socket.destroy())
    socket.on("close", () => {
      connection.closed = true
      connection.pending.length = 0
      open.delete(connection)
      if (connection === holder) void pump()
    })
  })

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve())
  })
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0

  return {
    // Every connection shares PGlite's one session, so akter must not prepare statements on it.
    url: `postgres://postgres@127.0.0.1:${port}/postgres?${UNPREPARED_PARAMETER}=unprepared`,
    port,
    get connections() {
      return accepted
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const connection of open) connection.socket.destroy()
      await closed
      while (pumping || holder !== undefined) {
        await pump()
        await new Promise((resolve) => setTimeout(resolve, 1))
      }
    },
  }
}

export interface ServedDataDirectory extends PgliteServer {
  readonly dataDir: string
}

/**
 * Opens the PGlite database in `dataDir` (created if new), locks the directory for this process
 * (recording the URL, so a process that tries to open the directory is told where to connect), and
 * serves it on 127.0.0.1 at `port` (default: an ephemeral one). `close()` stops serving, closes the
 * database and gives the directory up. What `akter dev` runs; a tool serving the same database
 * (a studio, say) calls it the same way.
 *
 * @example
 * const served = await serveDataDirectory({ dataDir: ".akter/pglite", port: 54329 })
 * const akter = await createAkter({ databaseUrl: served.url })
 */
export const serveDataDirectory = async (options: {
  readonly dataDir: string
  readonly port?: number
}): Promise<ServedDataDirectory> => {
  const [{ PGlite }, { mkdirSync }, { lockPgliteDirectory }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("node:fs"),
    import("./pgliteLock.js"),
  ])
  mkdirSync(options.dataDir, { recursive: true })
  const lock = lockPgliteDirectory(options.dataDir)
  let pglite: PGlite | undefined
  try {
    pglite = await PGlite.create(options.dataDir)
    const server = await servePglite(
      pglite,
      options.port === undefined ? {} : { port: options.port },
    )
    lock.setUrl(server.url)
    const opened = pglite
    return {
      dataDir: options.dataDir,
      url: server.url,
      port: server.port,
      get connections() {
        return server.connections
      },
      close: async () => {
        try {
          await server.close()
          await opened.close()
        } finally {
          lock.release()
        }
      },
    }
  } catch (error) {
    await pglite?.close().catch(() => {})
    lock.release()
    throw error
  }
}
