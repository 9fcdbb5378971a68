/**
 * Applies `migrations/NNNN_name.sql` in order. One transaction under an advisory lock, so runners
 * starting together migrate once; each applied migration's SHA-256 is recorded, and a migration
 * edited after it was applied — or one the database has but this code does not — stops everything
 * before any SQL runs.
 */
import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { sql } from "kysely"
import { MIGRATIONS_DIR } from "../packageFiles.js"
import type { Db } from "./database.js"

/** An arbitrary constant: the advisory lock key all akter migrators agree on. */
const MIGRATION_LOCK = 4_242_001

export interface Migration {
  readonly name: string
  readonly checksum: string
  readonly sql: string
}

export class MigrationError extends Error {
  constructor(message: string) {
    super(message)
    this.name = "MigrationError"
  }
}

export const readMigrations = (dir: string = MIGRATIONS_DIR): Migration[] =>
  readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => {
      const text = readFileSync(`${dir}/${file}`, "utf8")
      return {
        name: file.replace(/\.sql$/, ""),
        checksum: createHash("sha256").update(text).digest("hex"),
        sql: text,
      }
    })

export interface MigrationReport {
  readonly applied: readonly string[]
  readonly alreadyApplied: readonly string[]
}

/**
 * Brings the database to the latest schema. Refuses (changing nothing) when an applied migration
 * was edited or is unknown to this code.
 */
export const migrate = async (
  db: Db,
  migrations: readonly Migration[] = readMigrations(),
): Promise<MigrationReport> =>
  db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(tx)
    await sql`CREATE SCHEMA IF NOT EXISTS akter`.execute(tx)
    await sql`CREATE TABLE IF NOT EXISTS akter.migrations (
      name text PRIMARY KEY,
      checksum text NOT NULL,
      applied_at_ms bigint NOT NULL
    )`.execute(tx)
    const applied = await tx.selectFrom("akter.migrations").select(["name", "checksum"]).execute()
    const known = new Map(migrations.map((m) => [m.name, m]))
    for (const row of applied) {
      const migration = known.get(row.name)
      if (migration === undefined) {
        throw new MigrationError(
          `the database has migration ${row.name}, which this version of akter does not know; upgrade akter`,
        )
      }
      if (migration.checksum !== row.checksum) {
        throw new MigrationError(
          `migration ${row.name} was edited after it was applied (checksum ${row.checksum.slice(0, 12)}… recorded, ${migration.checksum.slice(0, 12)}… on disk); released migrations must never change: restore it and add a new migration`,
        )
      }
    }
    const done = new Set(applied.map((row) => row.name))
    const pending = migrations.filter((m) => !done.has(m.name))
    for (const migration of pending) {
      await sql.raw(migration.sql).execute(tx)
      await tx
        .insertInto("akter.migrations")
        .values({
          name: migration.name,
          checksum: migration.checksum,
          applied_at_ms: Date.now(),
        })
        .execute()
    }
    return { applied: pending.map((m) => m.name), alreadyApplied: [...done].sort() }
  })
