/**
 * Opt-in row-level security: a second line of defence under the client's tenant checks. Applications
 * connect as a role that does not own akter's tables, with the setting `akter.tenant` naming their
 * tenant; Postgres then shows and accepts only that tenant's rows of every table that holds tenant
 * data, whatever the SQL. Runners serve every tenant and keep connecting as the owner, which row
 * security does not restrict.
 *
 * What it protects against: a bug in akter or in the application that would read or write another
 * tenant's rows. What it does not: a role that may run arbitrary SQL can change its own
 * `akter.tenant`, so row security here is not a sandbox for untrusted SQL.
 */
import { sql } from "kysely"
import type { Db } from "./database.js"

/** The setting a connection names its tenant in, e.g. `options=-c akter.tenant=acme` in its URL. */
export const TENANT_SETTING = "akter.tenant"

/** Tables with a tenant column, each restricted to the connection's tenant. */
const TENANT_TABLES = ["owners", "events", "executions", "outbox", "receipts"] as const

export interface TenantIsolationOptions {
  /** An existing role that does not own akter's tables: the one applications connect as. */
  readonly role: string
}

/**
 * Enables row-level security on akter's tables and grants `role` what a client needs. Idempotent:
 * policies are replaced, grants repeated. The invariant its transaction keeps: no moment exists in
 * which the role holds a grant on a table whose policy is not yet in place.
 *
 * @example
 * await enableTenantIsolation(internalsOf(ownerAkter).storage.db, { role: "shop_app" })
 * const acme = await createAkter({
 *   databaseUrl: "postgres://shop_app@db/shop?options=-c%20akter.tenant%3Dacme",
 *   migrate: false,
 * })
 */
export const enableTenantIsolation = async (
  db: Db,
  options: TenantIsolationOptions,
): Promise<void> => {
  const role = sql.id(options.role)
  await db.transaction().execute(async (tx) => {
    for (const table of TENANT_TABLES) {
      const name = sql.table(`akter.${table}`)
      await sql`ALTER TABLE ${name} ENABLE ROW LEVEL SECURITY`.execute(tx)
      await sql`DROP POLICY IF EXISTS akter_tenant ON ${name}`.execute(tx)
      await sql`CREATE POLICY akter_tenant ON ${name}
        USING (tenant = current_setting('akter.tenant', true))
        WITH CHECK (tenant = current_setting('akter.tenant', true))`.execute(tx)
    }
    // Steps carry no tenant column: a step is visible exactly when its execution is, and the
    // execution's own policy decides that.
    await sql`ALTER TABLE akter.steps ENABLE ROW LEVEL SECURITY`.execute(tx)
    await sql`DROP POLICY IF EXISTS akter_tenant ON akter.steps`.execute(tx)
    await sql`CREATE POLICY akter_tenant ON akter.steps
      USING (EXISTS (SELECT 1 FROM akter.executions e
        WHERE e.routing_key = steps.routing_key AND e.execution_id = steps.execution_id))
      WITH CHECK (EXISTS (SELECT 1 FROM akter.executions e
        WHERE e.routing_key = steps.routing_key AND e.execution_id = steps.execution_id))`.execute(
      tx,
    )
    // What a client writes: starts, emits, interrupts and their receipts. Manifests are shared by
    // all tenants and hold no tenant data; starts record theirs.
    await sql`GRANT USAGE ON SCHEMA akter TO ${role}`.execute(tx)
    await sql`GRANT SELECT, INSERT, UPDATE
      ON akter.owners, akter.executions, akter.outbox, akter.receipts TO ${role}`.execute(tx)
    await sql`GRANT SELECT, INSERT ON akter.events, akter.steps, akter.manifests TO ${role}`.execute(
      tx,
    )
  })
}
