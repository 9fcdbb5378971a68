/**
 * Opens akter's database: Postgres from a connection string, or PGlite (embedded Postgres) in a
 * data directory or in memory. Both go through node-postgres' Pool — PGlite through its own
 * node-postgres adapter, with a pool of one connection because PGlite is a single session — so
 * every query, transaction and type parser is the same code on both backends.
 */
import { mkdirSync } from "node:fs"
import { Kysely, PostgresDialect } from "kysely"
import pg from "pg"
import type { Database, Db } from "./database.js"
import { lockPgliteDirectory } from "./pgliteLock.js"
import { ListenSession } from "./listenSession.js"
import type { NotificationStatus } from "./notificationStatus.js"
import { isConnectionError } from "./connectionErrors.js"

export type Backend = "postgres" | "pglite"

export interface StorageOptions {
  /** `postgres://…`; absent: PGlite. */
  readonly databaseUrl?: string
  /** PGlite data directory, or `"memory"`. Default `.akter/pglite`. */
  readonly dataDir?: string
  /** Largest number of pooled Postgres connections (default 10). */
  readonly poolSize?: number
  /** Postgres: every connection sets `akter.tenant` to this (row-level-security mode). */
  readonly tenant?: string
  /**
   * Postgres: a direct connection string for the LISTEN session when `databaseUrl` goes through a
   * connection pooler in transaction mode (which drops notifications). Default: `databaseUrl`.
   */
  readonly listenUrl?: string
}

export interface Storage {
  readonly backend: Backend
  readonly db: Db
  /** Statements sent and transactions committed since open: what bench/ reports per step. */
  readonly counters: StatementCounters
  /**
   * Subscribes to a NOTIFY channel on a dedicated connection (Postgres only; on PGlite every
   * writer lives in this process and wakes runners directly).
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>
  /**
   * Called each time the LISTEN session is back after it was lost, every channel subscribed again:
   * whatever was notified meanwhile was missed, so listeners catch up.
   */
  onListenRestored(listener: () => void): () => void
  /** Whether notifications reach this process (PGlite: always, in-process). */
  notifications(): NotificationStatus
  /** Called when `notifications()` changes. */
  onNotifications(listener: (status: NotificationStatus) => void): () => void
  close(): Promise<void>
}

export interface StatementCounters {
  /** Every statement sent, reads included. */
  statements: number
  /** Transactions that may write: each COMMIT, and each statement outside a transaction but reads. */
  commits: number
}

const INT8_OID = 20

/** bigint columns hold milliseconds, sequences and counters: numbers, not strings. */
const types = {
  getTypeParser: (oid: number, format?: "text" | "binary") =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format ?? "text"),
}

const countStatements = (pool: pg.Pool, counters: StatementCounters) => {
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    let inTransaction = false
    ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
      counters.statements += 1
      const first = args[0]
      const text = typeof first === "string" ? first : (first as { text?: string } | null)?.text
      const verb = text?.trimStart().slice(0, 8).toLowerCase() ?? ""
      if (verb.startsWith("begin")) inTransaction = true
      else if (verb.startsWith("commit")) {
        inTransaction = false
        counters.commits += 1
      } else if (verb.startsWith("rollback")) inTransaction = false
      // A read outside a transaction commits nothing worth counting (no WAL, no flush).
      else if (!inTransaction && !verb.startsWith("select")) counters.commits += 1
      return query(...args)
    }
  })
}

/** The CTE names of `statementParts.partName`, unique per process: `"settle_1234"`. */
const PART_NAME = /"([a-z_]+?)_(\d+)"/g

/**
 * The statement's text with its part names numbered from 1 in order of appearance, so that every
 * statement of one shape has one text.
 */
const shapeOf = (text: string): string => {
  const renamed = new Map<string, string>()
  return text.replace(PART_NAME, (whole, prefix: string) => {
    let name = renamed.get(whole)
    if (name === undefined) {
      name = `"${prefix}_${renamed.size + 1}"`
      renamed.set(whole, name)
    }
    return name
  })
}

/** Whether this pool's statements are sent prepared; turned off when a pooler is found. */
interface StatementMode {
  prepared: boolean
}

/**
 * A named prepared statement the server does not have, or already has under that name: what a
 * connection pooler in transaction mode makes of prepared statements (each transaction may land on
 * another server connection). Raised at Parse or Bind, before anything executes.
 */
const isPreparedStatementClash = (error: unknown) => {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return (
    (code === "42P05" || code === "26000") &&
    typeof message === "string" &&
    message.includes('prepared statement "akter_')
  )
}

/**
 * The longest statement text sent prepared. akter's statement shapes are a few kilobytes (the
 * longest about 6 KB); a longer one carries many held writes of one pass (a fan-out's start
 * steps), whose count makes each text new: prepared, every count would stay in this process and on
 * every connection of the server.
 */
const PREPARED_TEXT_LIMIT = 16_384

/** How many texts `prepareStatements` remembers the shape and name of before it starts afresh. */
const REMEMBERED_TEXTS = 256

/**
 * Sends every parameterized statement as a named prepared statement: Postgres parses and plans a
 * statement shape once per connection rather than on every call (akter's writes are large CTE
 * statements, whose planning was a large share of the server's time per step). The first use of a
 * shape on a connection costs no extra round trip. A shape's name is the order in which this
 * process first sent it, the same on every connection of the pool. While `mode.prepared` is off,
 * statements go unnamed; a clash of names (an undetected pooler) turns it off for good, and the
 * statement is sent again unnamed when it was not inside a transaction (it never ran). A statement
 * longer than `PREPARED_TEXT_LIMIT` goes unnamed.
 */
const prepareStatements = (pool: pg.Pool, mode: StatementMode) => {
  const names = new Map<string, string>()
  const nameOf = (shape: string) => {
    let name = names.get(shape)
    if (name === undefined) {
      name = `akter_${names.size + 1}`
      names.set(shape, name)
    }
    return name
  }
  // A shaped statement (storage/shapedStatement.ts) sends one string over and over, whose hash V8
  // keeps: looking it up here reads none of its text, where renaming it scans all of it. Texts
  // made new on each call (numbered part names) churn this; it starts afresh when full.
  const remembered = new Map<string, { readonly shape: string; readonly name: string }>()
  const preparedOf = (text: string) => {
    let known = remembered.get(text)
    if (known === undefined) {
      if (remembered.size >= REMEMBERED_TEXTS) remembered.clear()
      const shape = shapeOf(text)
      known = { shape, name: nameOf(shape) }
      remembered.set(text, known)
    }
    return known
  }
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    let inTransaction = false
    ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
      const [text, values] = args
      if (typeof text === "string") {
        const verb = text.trimStart().slice(0, 8).toLowerCase()
        if (verb.startsWith("begin")) inTransaction = true
        else if (verb.startsWith("commit") || verb.startsWith("rollback")) inTransaction = false
      }
      const prepared =
        mode.prepared &&
        args.length === 2 &&
        typeof text === "string" &&
        text.length <= PREPARED_TEXT_LIMIT &&
        Array.isArray(values) &&
        values.length > 0
      if (!prepared) return query(...args)
      const { shape, name } = preparedOf(text)
      const alone = !inTransaction
      return (query({ name, text: shape, values }) as Promise<unknown>).catch((error: unknown) => {
        if (!isPreparedStatementClash(error)) throw error
        mode.prepared = false
        if (!alone) throw error
        return query(...args)
      })
    }
  })
}

/**
 * Whether the pool's connections go through a pooler in transaction (or statement) mode: one
 * client's session is not one server session. Client `a` reads its backend, then `b` opens a
 * transaction: behind such a pooler `b` is handed the server connection `a` just let go of, and
 * `a`'s next statement lands on another one. Directly on Postgres, or in session mode, `a` keeps
 * its backend and `b` has its own. A pooler that refuses the transaction (statement mode) counts too.
 */
const detectTransactionPooling = async (pool: pg.Pool): Promise<boolean> => {
  const pidOf = async (client: pg.PoolClient) =>
    Number((await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid)
  const a = await pool.connect()
  let b: pg.PoolClient | undefined
  try {
    b = await pool.connect()
    const first = await pidOf(a)
    await b.query("BEGIN")
    let other: number
    try {
      other = await pidOf(b)
    } finally {
      await b.query("ROLLBACK").catch(() => {})
    }
    const again = await pidOf(a)
    return other === first || again !== first
  } catch (error) {
    if (isConnectionError(error)) throw error
    return true
  } finally {
    a.release()
    b?.release()
  }
}

/**
 * A `DATABASE_URL` query parameter telling akter not to prepare statements: a server that runs
 * every connection in one session (runtime/storage/pgliteServer.ts serving one PGlite) would see
 * two connections prepare the same name.
 */
export const UNPREPARED_PARAMETER = "akter_statements"

/** The URL for the driver, and whether statements may be prepared on its server. */
const connectionOf = (url: string): { url: string; prepare: boolean } => {
  const parsed = new URL(url)
  if (parsed.searchParams.get(UNPREPARED_PARAMETER) !== "unprepared") return { url, prepare: true }
  parsed.searchParams.delete(UNPREPARED_PARAMETER)
  return { url: parsed.toString(), prepare: false }
}

/** A startup `options` value that sets `akter.tenant`; spaces and backslashes escaped for libpq. */
const tenantOption = (tenant: string) =>
  `-c akter.tenant=${tenant.replace(/[\\ ]/g, (c) => `\\${c}`)}`

/**
 * How long opening a connection may take before it counts as failed: a paused or unreachable
 * server accepts the socket (or not) but never answers, and a caller must not wait forever.
 */
const CONNECT_TIMEOUT_MS = 5000

/** Settings every connection of a Postgres handle shares. */
const connectionSettings = (url: string) => ({
  connectionString: url,
  types,
  connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  // The kernel notices a peer that vanished (a failed-over host) instead of waiting for ever.
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
})

/** Why notifications are off behind a transaction pooler without `listenUrl`. */
export const POOLER_WITHOUT_LISTEN_URL =
  "databaseUrl goes through a connection pooler in transaction mode, which drops notifications, and no listenUrl (AKTER_LISTEN_URL) names a direct connection"

const openPostgres = async (
  given: string,
  poolSize: number,
  tenant: string | undefined,
  listenUrl: string | undefined,
): Promise<Storage> => {
  const { url, prepare } = connectionOf(given)
  const pool = new pg.Pool({
    ...connectionSettings(url),
    max: poolSize,
    ...(tenant === undefined ? {} : { options: tenantOption(tenant) }),
  })
  const counters: StatementCounters = { statements: 0, commits: 0 }
  const mode: StatementMode = { prepared: prepare }
  let session: ListenSession | undefined
  // A clash found later (a pooler the probe missed) only turns preparing off: the LISTEN session's
  // own round trip finds out whether notifications survive the pooler.
  if (prepare) prepareStatements(pool, mode)
  countStatements(pool, counters)
  // A connection that dies must not crash the process: node-postgres emits 'error' on the client,
  // and the pool's own handler covers only idle ones. A checked-out client's error fails its
  // statement (the caller sees that), marks the client unusable, and the pool discards it on
  // release and opens a new one for the next caller.
  pool.on("connect", (client) => {
    client.on("error", () => {})
  })
  pool.on("error", () => {})
  // Only a URL that may prepare is probed: one that says `unprepared` is a server of one session
  // (pgliteServer), where the probe would find every backend the same.
  const pooled =
    prepare &&
    poolSize >= 2 &&
    (await detectTransactionPooling(pool).catch(async (error: unknown) => {
      await pool.end()
      throw error
    }))
  if (pooled) mode.prepared = false
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  if (!pooled || listenUrl !== undefined) {
    session = new ListenSession({
      makeClient: () => new pg.Client(connectionSettings(listenUrl ?? url)),
      // The way writers' NOTIFYs go (through a pooler, if any), on a connection of its own so the
      // round trip costs the pool nothing and counts as none of its statements.
      notify: async (channel, payload) => {
        const client = new pg.Client(connectionSettings(url))
        client.on("error", () => {})
        try {
          await client.connect()
          await client.query("SELECT pg_notify($1, $2)", [channel, payload])
        } finally {
          await client.end().catch(() => {})
        }
      },
    })
  }
  const noListening: NotificationStatus = {
    state: "unavailable",
    reason: POOLER_WITHOUT_LISTEN_URL,
  }
  return {
    backend: "postgres",
    db,
    counters,
    listen: async (channel, onPayload) =>
      session === undefined ? async () => {} : session.listen(channel, onPayload),
    onListenRestored: (listener) => session?.onRestored(listener) ?? (() => {}),
    notifications: () => session?.status ?? noListening,
    onNotifications: (listener) => session?.onStatus(listener) ?? (() => {}),
    close: async () => {
      await session?.close()
      await db.destroy()
    },
  }
}

const openPglite = async (dataDir: string): Promise<Storage> => {
  // Loaded only here: a process on Postgres never loads the embedded database.
  const [{ PGlite }, { createPgConfig }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("@electric-sql/pglite/node-postgres"),
  ])
  if (dataDir !== "memory") mkdirSync(dataDir, { recursive: true })
  // One process per directory: a second one is refused, naming the holder (pgliteLock.ts).
  const lock = dataDir === "memory" ? undefined : lockPgliteDirectory(dataDir)
  const pglite = await (dataDir === "memory" ? PGlite.create() : PGlite.create(dataDir)).catch(
    (error: unknown) => {
      lock?.release()
      throw error
    },
  )
  const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, types } as pg.PoolConfig)
  const counters: StatementCounters = { statements: 0, commits: 0 }
  countStatements(pool, counters)
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  return {
    backend: "pglite",
    db,
    counters,
    listen: async () => async () => {},
    onListenRestored: () => () => {},
    notifications: () => ({ state: "working" }),
    onNotifications: () => () => {},
    close: async () => {
      try {
        await db.destroy()
        await pglite.close()
      } finally {
        lock?.release()
      }
    },
  }
}

export const openStorage = async (options: StorageOptions = {}): Promise<Storage> =>
  options.databaseUrl === undefined
    ? openPglite(options.dataDir ?? ".akter/pglite")
    : openPostgres(options.databaseUrl, options.poolSize ?? 10, options.tenant, options.listenUrl)
