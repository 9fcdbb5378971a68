/**
 * Tenant isolation. Equal keys across tenants and owner types are separate executions, with their
 * own event logs and receipts; an id of another tenant is refused before attach, so its result,
 * status and interrupt are out of reach. On Postgres, the opt-in row-level security mode restricts a
 * non-owner role to the tenant its connection names, whatever SQL it runs.
 */
import { randomBytes } from "node:crypto"
import { Effect, Exit } from "effect"
import pg from "pg"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  countExecutions,
  createAkter,
  InvalidQuery,
  listExecutions,
  makeEffectOwnerClient,
  makeOwnerClient,
  startRunner,
  type Runner,
} from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { ForeignTenant } from "../../runtime/errors.js"
import { decodeExecutionId } from "../../runtime/model/executionId.js"
import { FINISHED_CHANNEL } from "../../runtime/outbox/notifications.js"
import { enableTenantIsolation, TENANT_SETTING } from "../../runtime/storage/tenantIsolation.js"
import { runUntilIdle, testAkter, type TestAkter } from "../../runtime/testing/index.js"
import {
  createPostgresDatabase,
  databaseUrl,
  describeEachBackend,
  describePostgres,
  openTestAkter,
} from "../support/backends.js"
import { makeVault, tableCounts, type Vault } from "../hostile/vaultWorkflows.js"
import { createCliProject } from "../cli/cliProject.js"
import { waitUntil } from "../support/waitUntil.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const entryOf = (note: string) => ({ name: "n", note, tags: [note] })

describeEachBackend("tenant isolation", (backend) => {
  let vault: Vault
  let akter: TestAkter
  let runner: Runner
  let acme: AnyClient
  let globex: AnyClient

  beforeAll(async () => {
    vault = await makeVault()
    akter = await openTestAkter(backend)
    runner = await startRunner({ akter, workflows: vault.workflows, pollMs: 20 })
    acme = makeOwnerClient<AnyClient>(akter, vault.vault, { tenant: "acme" })
    globex = makeOwnerClient<AnyClient>(akter, vault.vault, { tenant: "globex" })
  })

  afterAll(async () => {
    await runner?.close()
    await akter?.close()
  })

  const db = () => internalsOf(akter).storage.db

  it("makes equal keys of different tenants and owner types separate executions", async () => {
    const ledger = makeOwnerClient<AnyClient>(akter, vault.ledger, { tenant: "acme" })
    const runs = {
      acme: await acme.store.start("o-1", { name: "same", amount: 1, entry: entryOf("acme") }),
      globex: await globex.store.start("o-1", {
        name: "same",
        amount: 2,
        entry: entryOf("globex"),
      }),
      otherOwner: await acme.store.start("o-2", { name: "same", amount: 3, entry: entryOf("o-2") }),
      ledger: await ledger.store.start("o-1", { name: "same" }),
    }
    const ids = Object.values(runs).map((run) => run.executionId)
    expect(new Set(ids).size).toBe(4)
    expect(ids.map((id) => decodeExecutionId(id))).toEqual([
      { tenant: "acme", ownerType: "Vault", ownerId: "o-1", workflow: "store", key: "same" },
      { tenant: "globex", ownerType: "Vault", ownerId: "o-1", workflow: "store", key: "same" },
      { tenant: "acme", ownerType: "Vault", ownerId: "o-2", workflow: "store", key: "same" },
      { tenant: "acme", ownerType: "Ledger", ownerId: "o-1", workflow: "store", key: "same" },
    ])
    const rows = await db()
      .selectFrom("akter.executions")
      .select(["tenant", "owner_type", "owner_id", "execution_key"])
      .where("execution_id", "in", ids)
      .orderBy("tenant")
      .orderBy("owner_type")
      .orderBy("owner_id")
      .execute()
    expect(rows).toEqual([
      { tenant: "acme", owner_type: "Ledger", owner_id: "o-1", execution_key: "same" },
      { tenant: "acme", owner_type: "Vault", owner_id: "o-1", execution_key: "same" },
      { tenant: "acme", owner_type: "Vault", owner_id: "o-2", execution_key: "same" },
      { tenant: "globex", owner_type: "Vault", owner_id: "o-1", execution_key: "same" },
    ])
    await runUntilIdle(akter, runner)
    expect(await runs.acme.result()).toEqual({
      _tag: "Success",
      value: { name: "same", entry: entryOf("acme") },
    })
    expect(await runs.globex.result()).toEqual({
      _tag: "Success",
      value: { name: "same", entry: entryOf("globex") },
    })
  })

  it("refuses another tenant's id before attach, so its result, status and interrupt are out of reach", async () => {
    const run = await acme.listen.start("o-3", { name: "secret" })
    await runUntilIdle(akter, runner)
    const refused = (() => {
      try {
        return globex.listen.attach(run.executionId)
      } catch (error) {
        return error
      }
    })()
    expect(refused).toBeInstanceOf(ForeignTenant)
    expect((refused as ForeignTenant).message).toBe(
      `execution ${run.executionId} belongs to another tenant`,
    )
    const effects = makeEffectOwnerClient<AnyClient>(akter, vault.vault, { tenant: "globex" })
    const exit = await Effect.runPromiseExit(effects.listen.attach(run.executionId))
    expect(Exit.isFailure(exit) && exit.cause.reasons[0]?._tag).toBe("Fail")
    expect(
      Exit.isFailure(exit) &&
        (exit.cause.reasons[0] as unknown as { error: { _tag: string } }).error._tag,
    ).toBe("ForeignTenant")
    const row = await db()
      .selectFrom("akter.executions")
      .select(["status", "interrupt"])
      .where("execution_id", "=", run.executionId)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ status: "suspended", interrupt: false })
    expect(await acme.listen.attach(run.executionId).status()).toEqual({
      status: "suspended",
      interrupting: false,
    })
  })

  it("keeps each tenant's event log and receipts its own, even with equal owner and command ids", async () => {
    const waiting = await globex.listen.start("o-4", { name: "w" })
    await runUntilIdle(akter, runner)
    const fromAcme = await acme.emit("o-4", "Said", { text: "acme" }, { commandId: "cmd" })
    await runUntilIdle(akter, runner)
    expect(await waiting.status()).toEqual({ status: "suspended", interrupting: false })
    const fromGlobex = await globex.emit("o-4", "Said", { text: "globex" }, { commandId: "cmd" })
    expect([fromAcme.sequence, fromGlobex.sequence]).toEqual([1, 1])
    expect(await waiting.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { text: "globex" },
    })
    const receipts = await db()
      .selectFrom("akter.receipts")
      .select(["tenant", "outcome"])
      .where("command_id", "=", "cmd")
      .orderBy("tenant")
      .execute()
    expect(receipts).toEqual([
      { tenant: "acme", outcome: "1" },
      { tenant: "globex", outcome: "1" },
    ])
  })
})

describePostgres("row-level security", () => {
  const role = `akter_client_${randomBytes(4).toString("hex")}`
  let vault: Vault
  let owner: TestAkter
  let runner: Runner
  let database: { url: string; drop: () => Promise<void> }

  /** The database's URL as `role`, its connections naming `tenant` (or none). */
  const urlAs = (tenant: string | undefined) => {
    const url = new URL(database.url)
    url.username = role
    if (tenant !== undefined) url.searchParams.set("options", `-c ${TENANT_SETTING}=${tenant}`)
    return url.toString()
  }

  /** Runs statements on one connection as the role, naming `tenant`. */
  const asRole = async <A>(tenant: string | undefined, run: (client: pg.Client) => Promise<A>) => {
    const client = new pg.Client({ connectionString: urlAs(tenant) })
    await client.connect()
    try {
      return await run(client)
    } finally {
      await client.end()
    }
  }

  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }

  beforeAll(async () => {
    vault = await makeVault()
    database = await createPostgresDatabase()
    await admin(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOBYPASSRLS`)
    // Switched on where the tables' owner opens the database; applying it twice changes nothing.
    owner = await testAkter({ databaseUrl: database.url, tenantIsolation: { role } })
    await enableTenantIsolation(internalsOf(owner).storage.db, { role })
    runner = await startRunner({ akter: owner, workflows: vault.workflows, pollMs: 20 })
    const acme = makeOwnerClient<AnyClient>(owner, vault.vault, { tenant: "acme" })
    const globex = makeOwnerClient<AnyClient>(owner, vault.vault, { tenant: "globex" })
    await acme.listen.start("o-1", { name: "a" })
    await globex.listen.start("o-1", { name: "g" })
    await acme.emit("o-1", "Deposit", { amount: 1, memo: "acme" }, { commandId: "c" })
    await globex.emit("o-1", "Deposit", { amount: 2, memo: "globex" }, { commandId: "c" })
    await runUntilIdle(owner, runner)
  })

  afterAll(async () => {
    await runner?.close()
    await owner?.close()
    await database?.drop()
    await admin(`DROP ROLE IF EXISTS ${role}`)
  })

  it("shows a connection only its tenant's rows of every table, and none without a tenant", async () => {
    const visible = (tenant: string | undefined) =>
      asRole(tenant, async (client) => {
        const counts: Record<string, string[]> = {}
        for (const table of ["owners", "events", "executions", "outbox", "receipts"]) {
          const { rows } = await client.query(`SELECT tenant FROM akter.${table} ORDER BY tenant`)
          counts[table] = rows.map((row: { tenant: string }) => row.tenant)
        }
        const steps = await client.query(
          "SELECT e.tenant FROM akter.steps s JOIN akter.executions e USING (routing_key, execution_id)",
        )
        const allSteps = await client.query("SELECT count(*)::int AS n FROM akter.steps")
        counts["steps"] = steps.rows.map((row: { tenant: string }) => row.tenant)
        expect(allSteps.rows[0].n).toBe(counts["steps"].length)
        return counts
      })
    // One pending wait per tenant, as the owner sees them.
    const allSteps = await internalsOf(owner)
      .storage.db.selectFrom("akter.steps")
      .selectAll()
      .execute()
    expect(allSteps.length).toBe(2)
    expect(await visible("acme")).toEqual({
      owners: ["acme"],
      events: ["acme"],
      executions: ["acme"],
      outbox: [],
      receipts: ["acme"],
      steps: ["acme"],
    })
    expect(await visible(undefined)).toEqual({
      owners: [],
      events: [],
      executions: [],
      outbox: [],
      receipts: [],
      steps: [],
    })
  })

  it("refuses a connection's writes to another tenant's rows, and deletes altogether", async () => {
    await asRole("acme", async (client) => {
      const updated = await client.query(
        "UPDATE akter.executions SET interrupt = true WHERE tenant = 'globex'",
      )
      expect(updated.rowCount).toBe(0)
      const forged = await client
        .query(
          "INSERT INTO akter.receipts (routing_key, tenant, owner_type, owner_id, command_id, kind, outcome, created_at_ms) VALUES (1, 'globex', 'Vault', 'o-1', 'forged', 'emit', '', 0)",
        )
        .catch((error: Error) => error)
      expect(String(forged)).toContain(
        'new row violates row-level security policy for table "receipts"',
      )
      const deleted = await client.query("DELETE FROM akter.events").catch((error: Error) => error)
      expect(String(deleted)).toContain("permission denied for table events")
      const leases = await client.query("SELECT * FROM akter.leases").catch((error: Error) => error)
      expect(String(leases)).toContain("permission denied for table leases")
    })
    const rows = await internalsOf(owner)
      .storage.db.selectFrom("akter.executions")
      .select(["tenant", "interrupt"])
      .orderBy("tenant")
      .execute()
    expect(rows).toEqual([
      { tenant: "acme", interrupt: false },
      { tenant: "globex", interrupt: false },
    ])
  })

  it("restricts a handle made with the tenant option, and refuses a client or runner of another tenant on it", async () => {
    const acmeHandle = await createAkter({ databaseUrl: urlAs(undefined), tenant: "acme" })
    try {
      const acme = makeOwnerClient<AnyClient>(acmeHandle, vault.vault, { tenant: "acme" })
      const run = await acme.store.start("o-3", { name: "t", amount: 1, entry: entryOf("y") })
      await runUntilIdle(owner, runner)
      expect(await run.result({ timeout: "5 seconds" })).toEqual({
        _tag: "Success",
        value: { name: "t", entry: entryOf("y") },
      })
      expect(() =>
        makeOwnerClient<AnyClient>(acmeHandle, vault.vault, { tenant: "globex" }),
      ).toThrow('this handle is restricted to tenant "acme"')
      await expect(startRunner({ akter: acmeHandle, workflows: [] })).rejects.toThrow(
        "a runner serves every tenant",
      )
      const rows = await sql<{
        tenant: string
      }>`SELECT DISTINCT tenant FROM akter.executions`.execute(internalsOf(acmeHandle).storage.db)
      expect(rows.rows).toEqual([{ tenant: "acme" }])
    } finally {
      await acmeHandle.close()
    }
  })

  it("announces no result in a finish's notification while rows are tenant-restricted: its caller reads it", async () => {
    // Every LISTEN session hears every notification, whatever its tenant: a result in one would
    // reach other tenants' processes. Heard here as the tables' owner, as any session would.
    const heard: string[] = []
    const listener = new pg.Client({ connectionString: database.url })
    await listener.connect()
    listener.on("notification", (message) => {
      if (message.channel === FINISHED_CHANNEL) heard.push(message.payload ?? "")
    })
    await listener.query(`LISTEN ${FINISHED_CHANNEL}`)
    const acmeHandle = await createAkter({ databaseUrl: urlAs(undefined), tenant: "acme" })
    try {
      const acme = makeOwnerClient<AnyClient>(acmeHandle, vault.vault, { tenant: "acme" })
      const run = await acme.store.start("o-4", { name: "n", amount: 1, entry: entryOf("z") })
      const counters = internalsOf(acmeHandle).storage.counters
      const before = counters.statements
      expect(await run.result({ timeout: "5 seconds" })).toEqual({
        _tag: "Success",
        value: { name: "n", entry: entryOf("z") },
      })
      expect(counters.statements - before).toBeGreaterThanOrEqual(1)
      await waitUntil("its finish notifies", () => heard.includes(run.executionId), {
        timeoutMs: 5000,
      })
      expect(heard.filter((payload) => payload.startsWith(run.executionId))).toEqual([
        run.executionId,
      ])
    } finally {
      await acmeHandle.close()
      await listener.end()
    }
  })

  it("lists and counts only the handle's tenant's executions, and refuses a query for another", async () => {
    const acmeHandle = await createAkter({ databaseUrl: urlAs(undefined), tenant: "acme" })
    try {
      const everything = await listExecutions(owner)
      const acme = everything.executions.filter((execution) => execution.tenant === "acme")
      expect(acme.length).toBeGreaterThan(0)
      expect(everything.executions.length).toBeGreaterThan(acme.length)
      const listed = await listExecutions(acmeHandle)
      expect(listed.executions.map((execution) => execution.executionId)).toEqual(
        acme.map((execution) => execution.executionId),
      )
      expect((await countExecutions(acmeHandle)).total).toBe(acme.length)
      const refused = await listExecutions(acmeHandle, { tenant: "globex" }).catch(
        (error: unknown) => error,
      )
      expect(refused).toBeInstanceOf(InvalidQuery)
      expect((refused as InvalidQuery).message).toBe(
        'invalid execution query: tenant this handle is restricted to tenant "acme" (row-level-security mode)',
      )
    } finally {
      await acmeHandle.close()
    }
  })

  it("lets an akter client connected as the role work for its tenant, and the database refuse another", async () => {
    const acmeHandle = await createAkter({ databaseUrl: urlAs("acme"), migrate: false })
    try {
      const acme = makeOwnerClient<AnyClient>(acmeHandle, vault.vault, { tenant: "acme" })
      const run = await acme.store.start("o-2", { name: "k", amount: 1, entry: entryOf("x") })
      await acme.emit("o-2", "Said", { text: "hi" }, { commandId: "c-2" })
      await runUntilIdle(owner, runner)
      expect(await run.result({ timeout: "5 seconds" })).toEqual({
        _tag: "Success",
        value: { name: "k", entry: entryOf("x") },
      })
      const listening = await acme.listen.start("o-2", { name: "l" })
      await runUntilIdle(owner, runner)
      await listening.interrupt()
      await runUntilIdle(owner, runner)
      expect(await listening.result({ timeout: "5 seconds" })).toEqual({
        _tag: "Interrupted",
        cause: "request",
      })

      const before = await tableCounts(owner)
      const forged = makeOwnerClient<AnyClient>(acmeHandle, vault.vault, { tenant: "globex" })
      const refused = await forged.store
        .start("o-2", { name: "k", amount: 1, entry: entryOf("x") })
        .catch((error: Error) => error)
      expect(String(refused)).toContain("row-level security policy")
      const emitted = await forged.emit("o-2", "Said", { text: "x" }).catch((error: Error) => error)
      expect(String(emitted)).toContain("row-level security policy")
      expect(await tableCounts(owner)).toEqual(before)
    } finally {
      await acmeHandle.close()
    }
  })
})

describePostgres("switching tenant isolation on from the CLI", () => {
  const role = `akter_cli_${randomBytes(4).toString("hex")}`
  let database: { url: string; drop: () => Promise<void> }

  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      await client.query(statement)
    } finally {
      await client.end()
    }
  }

  beforeAll(async () => {
    database = await createPostgresDatabase()
    await admin(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOBYPASSRLS`)
  })

  afterAll(async () => {
    await database?.drop()
    await admin(`DROP ROLE IF EXISTS ${role}`)
  })

  it(
    "akter migrate --tenant-isolation ROLE migrates, then restricts ROLE to its connection's tenant",
    { timeout: 240_000 },
    async () => {
      const project = createCliProject()
      try {
        const migrated = await project.akter([
          "migrate",
          "--database-url",
          database.url,
          "--tenant-isolation",
          role,
          "--format",
          "json",
        ])
        expect(migrated.code, migrated.stderr).toBe(0)
        expect(JSON.parse(migrated.stdout)).toMatchObject({ tenantIsolation: { role } })
        const policies = new pg.Client({ connectionString: database.url })
        await policies.connect()
        try {
          const { rows } = await policies.query(
            "SELECT tablename FROM pg_policies WHERE schemaname = 'akter' AND policyname = 'akter_tenant' ORDER BY tablename",
          )
          expect(rows.map((row: { tablename: string }) => row.tablename)).toEqual([
            "events",
            "executions",
            "outbox",
            "owners",
            "receipts",
            "steps",
          ])
        } finally {
          await policies.end()
        }
        const asRole = new URL(database.url)
        asRole.username = role
        asRole.searchParams.set("options", `-c ${TENANT_SETTING}=acme`)
        const client = new pg.Client({ connectionString: asRole.toString() })
        await client.connect()
        try {
          const forged = await client
            .query(
              "INSERT INTO akter.receipts (routing_key, tenant, owner_type, owner_id, command_id, kind, outcome, created_at_ms) VALUES (1, 'globex', 'Vault', 'o-1', 'forged', 'emit', '', 0)",
            )
            .catch((error: Error) => error)
          expect(String(forged)).toContain(
            'new row violates row-level security policy for table "receipts"',
          )
        } finally {
          await client.end()
        }
        const pglite = await project.akter(["migrate", "--tenant-isolation", role], {
          DATABASE_URL: undefined,
        })
        expect(pglite.code).toBe(2)
        expect(pglite.stderr).toContain(
          "--tenant-isolation needs Postgres (--database-url or $DATABASE_URL)",
        )
      } finally {
        project.remove()
      }
    },
  )
})

it("refuses tenant isolation on embedded PGlite, which has one database user", async () => {
  await expect(
    createAkter({ dataDir: "memory", tenantIsolation: { role: "app" } }),
  ).rejects.toThrow(
    "createAkter: `tenantIsolation` (row-level security) needs Postgres (`databaseUrl`); the embedded PGlite database has one user",
  )
})
