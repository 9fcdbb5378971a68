/**
 * `akter migrate`, run as the real CLI: applies every migration once to PGlite (the default
 * `.akter/pglite`, or --data-dir) and to Postgres, reports what it applied, and applies nothing the
 * second time.
 */
import { existsSync, readdirSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { afterAll, afterEach, describe, expect, it, vi } from "vitest"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import { createCliProject, type CliProject } from "./cliProject.js"

// Every test runs the real CLI, a few seconds per call on a loaded machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

const projects: CliProject[] = []
afterEach(() => {
  for (const project of projects.splice(0)) project.remove()
})

const project = () => {
  const created = createCliProject()
  projects.push(created)
  return created
}

/** The migrations the repository ships, by name, read from the folder itself. */
const MIGRATIONS = readdirSync(new URL("../../migrations/", import.meta.url))
  .filter((file) => file.endsWith(".sql"))
  .map((file) => file.replace(/\.sql$/, ""))
  .sort()

const withoutDatabaseUrl = { DATABASE_URL: undefined }

// Creating a PGlite data directory runs initdb in WebAssembly: tens of seconds on a loaded machine.
const PGLITE_TIMEOUT = { timeout: 240_000 }

describe("akter migrate on PGlite", () => {
  it("migrates the data directory once, then reports it up to date", PGLITE_TIMEOUT, async () => {
    const app = project()

    const first = await app.akter(
      ["migrate", "--data-dir", "state/db", "--format", "json"],
      withoutDatabaseUrl,
    )
    const second = await app.akter(["migrate", "--data-dir", "state/db"], withoutDatabaseUrl)

    expect(first.code).toBe(0)
    expect(JSON.parse(first.stdout)).toEqual({
      database: "PGlite in state/db",
      applied: MIGRATIONS,
      alreadyApplied: [],
    })
    expect(second.code).toBe(0)
    expect(second.stdout).toBe(
      `akter migrate: PGlite in state/db is up to date (${MIGRATIONS.length} migration${MIGRATIONS.length === 1 ? "" : "s"} applied before)\n`,
    )
  })

  it("uses .akter/pglite when given no database, as a runner does", PGLITE_TIMEOUT, async () => {
    const app = project()
    const result = await app.akter(["migrate"], withoutDatabaseUrl)
    expect(result.code).toBe(0)
    expect(result.stdout.split("\n")).toEqual([
      ...MIGRATIONS.map((name) => `applied ${name}`),
      `akter migrate: PGlite in .akter/pglite migrated (${MIGRATIONS.length} applied, 0 before)`,
      "",
    ])
    expect(existsSync(join(app.root, ".akter", "pglite"))).toBe(true)
  })

  it("refuses --data-dir together with a database URL, and prints its options with --help", async () => {
    const app = project()
    const [both, help] = await Promise.all([
      app.akter(["migrate", "--database-url", "postgres://127.0.0.1/x", "--data-dir", "d"]),
      app.akter(["migrate", "--help"]),
    ])
    expect(both.code).toBe(2)
    expect(both.stderr).toMatch(/^akter migrate: --data-dir is for PGlite; /)
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("usage: akter migrate [options]")
  })
})

describePostgres("akter migrate on Postgres", () => {
  const drops: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const drop of drops) await drop()
  })

  it("applies every migration to the database of --database-url and records them", async () => {
    const database = await createPostgresDatabase()
    drops.push(database.drop)
    const app = project()

    const result = await app.akter(["migrate", "--database-url", database.url, "--format", "json"])

    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ applied: MIGRATIONS, alreadyApplied: [] })
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    try {
      const { rows } = await client.query<{ name: string }>(
        "SELECT name FROM akter.migrations ORDER BY name",
      )
      expect(rows.map((row) => row.name)).toEqual(MIGRATIONS)
    } finally {
      await client.end()
    }
  })
})
