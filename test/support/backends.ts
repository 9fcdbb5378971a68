/**
 * The backends a suite runs on: PGlite always, Postgres when `DATABASE_URL` names one. Every suite
 * that needs Postgres gets a database of its own (created here, dropped after), so suites running
 * in parallel never see each other's rows. Without `DATABASE_URL` the Postgres half is reported as
 * `skipped: no DATABASE_URL`; under `CI=true` it fails instead.
 */
import { randomBytes } from "node:crypto"
import pg from "pg"
import { describe, it } from "vitest"
import type { AkterOptions } from "../../runtime/akter.js"
import { testAkter, type TestAkter } from "../../runtime/testing/index.js"

export type BackendName = "pglite" | "postgres"

export const databaseUrl = process.env["DATABASE_URL"]

const isLoopback = (url: string) => {
  const host = new URL(url).hostname
  return host === "127.0.0.1" || host === "localhost" || host === "::1" || host === "[::1]"
}

/** Creates an empty database on the `DATABASE_URL` server; returns its URL and a drop function. */
export const createPostgresDatabase = async (): Promise<{
  url: string
  drop: () => Promise<void>
}> => {
  if (databaseUrl === undefined) throw new Error("no DATABASE_URL")
  if (!isLoopback(databaseUrl))
    throw new Error(`refusing a non-loopback DATABASE_URL: ${databaseUrl}`)
  const name = `akter_test_${randomBytes(6).toString("hex")}`
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(databaseUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: databaseUrl })
      await client.connect()
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await client.end()
      }
    },
  }
}

/**
 * `AKTER_TEST_BACKENDS=pglite` runs only the PGlite half of every suite (and no Postgres-only
 * suite): `npm run mutate` sets it for the StrykerJS runs, which run a guard file once per mutant.
 * Unset, both run.
 */
const only = process.env["AKTER_TEST_BACKENDS"]?.split(",")
const selected = (backend: BackendName) => only === undefined || only.includes(backend)

/**
 * `describe` once per backend. The Postgres block, without `DATABASE_URL`, becomes one test that
 * fails under CI and is skipped with the reason otherwise.
 */
export const describeEachBackend = (
  title: string,
  suite: (backend: BackendName) => void,
  backends: readonly BackendName[] = ["pglite", "postgres"],
) => {
  for (const backend of backends.filter(selected)) {
    if (backend === "postgres" && databaseUrl === undefined) {
      describe(`${title} [postgres]`, () => {
        if (process.env["CI"] === "true") {
          it("needs DATABASE_URL under CI", () => {
            throw new Error("DATABASE_URL is not set, and CI=true: the Postgres suite must run")
          })
        } else it.skip("skipped: no DATABASE_URL", () => {})
      })
      continue
    }
    describe(`${title} [${backend}]`, () => suite(backend))
  }
}

/** `describe` that needs Postgres (multi-process suites). */
export const describePostgres = (title: string, suite: () => void) =>
  describeEachBackend(title, () => suite(), ["postgres"])

/**
 * A test handle on a fresh database of the backend: in-memory PGlite, or a Postgres database of its
 * own that `close()` drops.
 */
export const openTestAkter = async (
  backend: BackendName,
  options: AkterOptions = {},
): Promise<TestAkter> => {
  if (backend !== "postgres") return testAkter(options)
  const database = await createPostgresDatabase()
  const opened = await testAkter({ ...options, databaseUrl: database.url })
  const close = opened.close
  opened.close = async () => {
    await close()
    await database.drop()
  }
  return opened
}
