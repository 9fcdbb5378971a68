/**
 * Databases the benchmarks create for themselves on the `DATABASE_URL` server: every trial gets a
 * fresh one (so repetitions are real repetitions, and akter and its peer never share tables), and
 * it is dropped when the trial ends. Only loopback servers are accepted.
 */
import { randomBytes } from "node:crypto"
import pg from "pg"

export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test"

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"])

export const checkLoopback = (databaseUrl: string) => {
  const host = new URL(databaseUrl).hostname
  if (!LOOPBACK.has(host)) throw new Error(`refusing a non-loopback DATABASE_URL: ${databaseUrl}`)
}

export interface BenchDatabase {
  readonly name: string
  readonly url: string
  drop(): Promise<void>
}

const withAdmin = async <A>(serverUrl: string, work: (client: pg.Client) => Promise<A>) => {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** Creates an empty database named `<prefix>_<random>` on the server of `serverUrl`. */
export const createBenchDatabase = async (
  serverUrl: string,
  prefix: string,
): Promise<BenchDatabase> => {
  checkLoopback(serverUrl)
  const name = `${prefix}_${randomBytes(4).toString("hex")}`
  await withAdmin(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`))
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: async () => {
      await withAdmin(serverUrl, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      )
    },
  }
}
