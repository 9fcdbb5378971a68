/**
 * Opens akter's database: Postgres from a connection string, or PGlite (embedded Postgres) in a
 * data directory or in memory. Both go through node-postgres' Pool — PGlite through its own
 * node-postgres adapter, with a pool of one connection because PGlite is a single session — so
 * every query, transaction and type parser is the same code on both backends.
 */
import { mkdirSync } from "node:fs"
import { PGlite } from "@electric-sql/pglite"
import { createPgConfig } from "@electric-sql/pglite/node-postgres"
import { Kysely, PostgresDialect } from "kysely"
import pg from "pg"
import type { Database, Db } from "./database.js"

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

/**
 * Sends every parameterized statement as a named prepared statement: Postgres parses and plans a
 * statement shape once per connection rather than on every call (akter's writes are large CTE
 * statements, whose planning was a large share of the server's time per step). The first use of a
 * shape on a connection costs no extra round trip. A shape's name is the order in which this
 * process first sent it, the same on every connection of the pool.
 */
const prepareStatements = (pool: pg.Pool) => {
  const names = new Map<string, string>()
  const nameOf = (shape: string) => {
    let name = names.get(shape)
    if (name === undefined) {
      name = `akter_${names.size + 1}`
      names.set(shape, name)
    }
    return name
  }
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
      const [text, values] = args
      const prepared =
        args.length === 2 && typeof text === "string" && Array.isArray(values) && values.length > 0
      const shape = prepared ? shapeOf(text) : undefined
      const forwarded = shape === undefined ? args : [{ name: nameOf(shape), text: shape, values }]
      return query(...forwarded)
    }
  })
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

const openPostgres = (given: string, poolSize: number, tenant: string | undefined): Storage => {
  const { url, prepare } = connectionOf(given)
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types,
    ...(tenant === undefined ? {} : { options: tenantOption(tenant) }),
  })
  const counters: StatementCounters = { statements: 0, commits: 0 }
  if (prepare) prepareStatements(pool)
  countStatements(pool, counters)
  // A connection that dies while idle (a restarted server) must not crash the process.
  pool.on("error", () => {})
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  return {
    backend: "postgres",
    db,
    counters,
    listen: async (channel, onPayload) => {
      const client = new pg.Client({ connectionString: url, types })
      client.on("error", () => {})
      await client.connect()
      client.on("notification", (message) => {
        if (message.channel === channel) onPayload(message.payload ?? "")
      })
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
      return async () => {
        await client.end().catch(() => {})
      }
    },
    close: () => db.destroy(),
  }
}

const openPglite = async (dataDir: string): Promise<Storage> => {
  if (dataDir !== "memory") mkdirSync(dataDir, { recursive: true })
  const pglite = dataDir === "memory" ? await PGlite.create() : await PGlite.create(dataDir)
  const pool = new pg.Pool({ ...createPgConfig(pglite), max: 1, types } as pg.PoolConfig)
  const counters: StatementCounters = { statements: 0, commits: 0 }
  countStatements(pool, counters)
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  return {
    backend: "pglite",
    db,
    counters,
    listen: async () => async () => {},
    close: async () => {
      await db.destroy()
      await pglite.close()
    },
  }
}

export const openStorage = async (options: StorageOptions = {}): Promise<Storage> =>
  options.databaseUrl === undefined
    ? openPglite(options.dataDir ?? ".akter/pglite")
    : openPostgres(options.databaseUrl, options.poolSize ?? 10, options.tenant)
