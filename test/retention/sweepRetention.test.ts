/**
 * Retention, driven by the test clock: finished executions go after the keep period (default 7
 * days) and open ones stay; events go only at or below every open cursor and pending wait of their
 * owner; receipts go after the keep period; manifests stay while an open execution uses them, and
 * the one accepted last per workflow always stays. Two sweeps at once never both do one batch.
 */
import { sql } from "kysely"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { makeOwnerClient, startRunner, type Runner } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { acceptManifests } from "../../runtime/runner/acceptManifests.js"
import { DEFAULT_KEEP_MS, sweepRetention } from "../../runtime/retention/sweepRetention.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { encodeExecutionId } from "../../runtime/model/executionId.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import { encodeJson } from "../../runtime/storage/codec.js"
import { testAkter } from "../../runtime/testing/index.js"
import {
  createPostgresDatabase,
  describeEachBackend,
  describePostgres,
  openTestAkter,
} from "../support/backends.js"
import { makeVault, VAULT_YAML, type Vault } from "../hostile/vaultWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const DAY_MS = 24 * 60 * 60 * 1000

describeEachBackend("retention", (backend) => {
  /** A fresh database with a runner of the vault workflows, for one test. */
  const withVault = async (
    test: (env: {
      akter: TestAkter
      vault: Vault
      client: AnyClient
      runner: Runner
    }) => Promise<void>,
  ) => {
    const vault = await makeVault()
    const akter = await openTestAkter(backend)
    const runner = await startRunner({ akter, workflows: vault.workflows, pollMs: 20 })
    try {
      await test({ akter, vault, client: makeOwnerClient<AnyClient>(akter, vault.vault), runner })
    } finally {
      await runner.close()
      await akter.close()
    }
  }

  const sweep = (akter: TestAkter, keepMs?: number) =>
    sweepRetention(internalsOf(akter), keepMs === undefined ? {} : { keepMs })

  const executionIds = async (akter: TestAkter) =>
    (
      await internalsOf(akter)
        .storage.db.selectFrom("akter.executions")
        .select("execution_id")
        .orderBy("execution_id")
        .execute()
    ).map((row) => row.execution_id)

  const eventSequences = async (akter: TestAkter, ownerId: string) =>
    (
      await internalsOf(akter)
        .storage.db.selectFrom("akter.events")
        .select("sequence")
        .where("owner_id", "=", ownerId)
        .orderBy("sequence")
        .execute()
    ).map((row) => row.sequence)

  it("keeps finished executions for 7 days by default, then deletes them; open ones stay", async () => {
    expect(DEFAULT_KEEP_MS).toBe(7 * DAY_MS)
    await withVault(async ({ akter, client, runner }) => {
      const entry = { name: "n", note: "", tags: [] }
      const done = await client.store.start("o-1", { name: "done", amount: 1, entry })
      const open = await client.listen.start("o-1", { name: "open" })
      await runUntilIdle(akter, runner)
      expect((await done.status()).status).toBe("finished")
      const nothing = { executions: 0, events: 0, receipts: 0, manifests: 0, skipped: false }
      expect(await sweep(akter)).toEqual(nothing)
      akter.advance(7 * DAY_MS - 60_000)
      expect(await sweep(akter)).toEqual(nothing)
      akter.advance(2 * 60_000)
      expect(await sweep(akter)).toEqual({ ...nothing, executions: 1 })
      expect(await executionIds(akter)).toEqual([open.executionId])
      expect(await client.store.attach(done.executionId).status()).toEqual({ status: "unknown" })
      expect(await open.status()).toEqual({ status: "suspended", interrupting: false })
      expect(await sweep(akter)).toEqual(nothing)
    })
  })

  it("applies a configured keep period", async () => {
    await withVault(async ({ akter, client, runner }) => {
      const entry = { name: "n", note: "", tags: [] }
      await client.store.start("o-1", { name: "a", amount: 1, entry })
      await runUntilIdle(akter, runner)
      akter.advance("59 minutes")
      expect((await sweep(akter, 60 * 60_000)).executions).toBe(0)
      akter.advance("2 minutes")
      expect((await sweep(akter, 60 * 60_000)).executions).toBe(1)
      expect(await executionIds(akter)).toEqual([])
    })
  })

  it("prunes events only at or below every open cursor and pending wait of their owner", async () => {
    await withVault(async ({ akter, client, runner }) => {
      // Owner "busy": the first listener takes event 1 and finishes; the second starts with its
      // cursor at 1 and waits; events 2 and 3 come after.
      const first = await client.listen.start("busy", { name: "first" })
      await runUntilIdle(akter, runner)
      await client.emit("busy", "Said", { text: "one" })
      expect(await first.result({ timeout: "5 seconds" })).toEqual({
        _tag: "Success",
        value: { text: "one" },
      })
      const second = await client.listen.start("busy", { name: "second" })
      await runUntilIdle(akter, runner)
      await client.emit("busy", "Deposit", { amount: 2, memo: "two" })
      await client.emit("busy", "Deposit", { amount: 3, memo: "three" })
      // Owner "idle": events and no open execution at all.
      await client.emit("idle", "Deposit", { amount: 1, memo: "a" })
      await client.emit("idle", "Deposit", { amount: 2, memo: "b" })
      await runUntilIdle(akter, runner)

      expect((await sweep(akter)).events).toBe(0)
      akter.advance(8 * DAY_MS)
      const report = await sweep(akter)
      expect([report.executions, report.events]).toEqual([1, 3])
      expect(await eventSequences(akter, "busy")).toEqual([2, 3])
      expect(await eventSequences(akter, "idle")).toEqual([])

      await client.emit("busy", "Said", { text: "four" })
      expect(await second.result({ timeout: "5 seconds" })).toEqual({
        _tag: "Success",
        value: { text: "four" },
      })
      // Events 2 and 3 are old and now no open execution can read them; event 4 is new.
      expect((await sweep(akter)).events).toBe(2)
      expect(await eventSequences(akter, "busy")).toEqual([4])
      akter.advance(8 * DAY_MS)
      expect((await sweep(akter)).events).toBe(1)
      expect(await eventSequences(akter, "busy")).toEqual([])
      // The log goes on from where it was: numbering never restarts.
      expect(await client.emit("busy", "Said", { text: "five" })).toEqual({ sequence: 5 })
    })
  })

  it("prunes receipts after the keep period; a retry after that is applied anew", async () => {
    await withVault(async ({ akter, client }) => {
      const early = await client.emit("o-1", "Said", { text: "a" }, { commandId: "c-early" })
      expect(await client.emit("o-1", "Said", { text: "a" }, { commandId: "c-early" })).toEqual(
        early,
      )
      akter.advance(5 * DAY_MS)
      await client.emit("o-1", "Said", { text: "b" }, { commandId: "c-late" })
      akter.advance(3 * DAY_MS)
      expect((await sweep(akter)).receipts).toBe(1)
      const { rows } = await sql<{ command_id: string }>`
        SELECT command_id FROM akter.receipts ORDER BY command_id`.execute(
        internalsOf(akter).storage.db,
      )
      expect(rows.map((row) => row.command_id)).toEqual(["c-late"])
      const retried = await client.emit("o-1", "Said", { text: "a" }, { commandId: "c-early" })
      expect(retried.sequence).toBe(3)
    })
  })

  it("keeps manifests an open execution uses and the one accepted last; deletes the others", async () => {
    const v2Yaml = VAULT_YAML.replace(
      "    input: { name: string }\n",
      "    input: { name: string, note?: string }\n",
    )
    const v3Yaml = VAULT_YAML.replace(
      "    input: { name: string }\n",
      "    input: { name: string, mood?: string }\n",
    )
    const [v1, v2, v3] = await Promise.all([makeVault(), makeVault(v2Yaml), makeVault(v3Yaml)])
    const hashOf = (vault: Vault) => vault.vault.workflows["listen"]!.hashes.compatibility
    expect(new Set([hashOf(v1), hashOf(v2), hashOf(v3)]).size).toBe(3)
    const akter = await openTestAkter(backend)
    try {
      const internals = internalsOf(akter)
      const listenHashes = async () =>
        (
          await internals.storage.db
            .selectFrom("akter.manifests")
            .select("manifest_hash")
            .where("workflow", "=", "listen")
            .execute()
        )
          .map((row) => row.manifest_hash)
          .sort()
      // v1: an execution starts under it and stays open. v2: a start, then it finishes. v3: the
      // deployment accepted last.
      const open = await makeOwnerClient<AnyClient>(akter, v1.vault).listen.start("o-1", {
        name: "open",
      })
      const finishing = await makeOwnerClient<AnyClient>(akter, v2.vault).listen.start("o-2", {
        name: "finishing",
      })
      await acceptManifests(internals, [v2.vault.workflows["listen"]!])
      await acceptManifests(internals, [v3.vault.workflows["listen"]!])
      expect(await listenHashes()).toEqual([hashOf(v1), hashOf(v2), hashOf(v3)].sort())

      akter.advance(8 * DAY_MS)
      expect((await sweep(akter)).manifests).toBe(0)
      const runner = await startRunner({ akter, workflows: v3.workflows, pollMs: 20 })
      try {
        await makeOwnerClient<AnyClient>(akter, v3.vault).emit("o-2", "Said", { text: "bye" })
        expect((await finishing.result({ timeout: "5 seconds" }))._tag).toBe("Success")
        await runUntilIdle(akter, runner)
      } finally {
        await runner.close()
      }
      expect(await open.status()).toEqual({ status: "suspended", interrupting: false })
      const { rows } = await sql<{ manifest_hash: string }>`
        SELECT manifest_hash FROM akter.executions WHERE status <> 'finished'`.execute(
        internals.storage.db,
      )
      expect(rows.map((row) => row.manifest_hash)).toEqual([hashOf(v1)])
      // v2 is now used by no open execution, was not accepted last, and was accepted 8 days ago.
      const report = await sweep(akter)
      expect(report.manifests).toBe(1)
      expect(await listenHashes()).toEqual([hashOf(v1), hashOf(v3)].sort())
      expect((await sweep(akter)).manifests).toBe(0)
    } finally {
      await akter.close()
    }
  })

  it("lets one of two concurrent sweeps do each batch: no row is deleted twice, none is missed", async () => {
    const vault = await makeVault()
    const first = await openTestAkter(backend)
    try {
      const client = makeOwnerClient<AnyClient>(first, vault.vault)
      const runner = await startRunner({ akter: first, workflows: vault.workflows, pollMs: 20 })
      try {
        const entry = { name: "n", note: "", tags: [] }
        for (let index = 0; index < 30; index += 1) {
          await client.store.start(`o-${index}`, { name: `k-${index}`, amount: 1, entry })
        }
        await runUntilIdle(first, runner)
      } finally {
        await runner.close()
      }
      first.advance(8 * DAY_MS)
      const internals = internalsOf(first)
      // On Postgres the two sweeps run on separate connections, as two runners' would.
      // Unpaced, so that the two sweeps' batches overlap rather than take turns between waits.
      const reports = await Promise.all([
        sweepRetention(internals, { batchSize: 2, dutyCycle: 1 }),
        sweepRetention(internals, { batchSize: 2, dutyCycle: 1 }),
      ])
      expect(reports[0]!.executions + reports[1]!.executions).toBe(30)
      expect(await executionIds(first)).toEqual([])
      if (backend === "postgres") expect(reports.some((report) => report.skipped)).toBe(true)
    } finally {
      await first.close()
    }
  })

  it("refuses a keep period or batch size that is not a count, or a duty cycle outside (0, 1]", async () => {
    await withVault(async ({ akter }) => {
      await expect(sweepRetention(internalsOf(akter), { keepMs: -1 })).rejects.toThrow(
        "retention keepMs must be a non-negative integer of ms, got -1",
      )
      await expect(sweepRetention(internalsOf(akter), { batchSize: 0 })).rejects.toThrow(
        "retention batchSize must be a positive integer, got 0",
      )
      await expect(sweepRetention(internalsOf(akter), { dutyCycle: 0 })).rejects.toThrow(
        "retention dutyCycle must be above 0 and at most 1, got 0",
      )
    })
  })
})

describePostgres("retention racing a start", () => {
  it("waits for a start in flight under an unused manifest instead of deleting it from under it", async () => {
    const v2Yaml = VAULT_YAML.replace(
      "    input: { name: string }\n",
      "    input: { name: string, note?: string }\n",
    )
    const [v1, v2] = await Promise.all([makeVault(), makeVault(v2Yaml)])
    const v1Hash = v1.vault.workflows["listen"]!.hashes.compatibility
    const database = await createPostgresDatabase()
    const akter = await testAkter({ databaseUrl: database.url })
    const starter = new pg.Client({ connectionString: database.url })
    try {
      const internals = internalsOf(akter)
      // v1 was started under once and that execution finished; v2 was accepted after it.
      const runner = await startRunner({ akter, workflows: v1.workflows, pollMs: 20 })
      try {
        const client = makeOwnerClient<AnyClient>(akter, v1.vault)
        const done = await client.listen.start("o-1", { name: "done" })
        await runUntilIdle(akter, runner)
        await client.emit("o-1", "Said", { text: "bye" })
        expect((await done.result({ timeout: "5 seconds" }))._tag).toBe("Success")
      } finally {
        await runner.close()
      }
      await acceptManifests(internals, [v2.vault.workflows["listen"]!])
      akter.advance(8 * DAY_MS)

      // A start under v1 is in flight: its execution row is written, not yet committed, and v1's
      // manifest row already existed, so the start only read it.
      const owner = placeOwner({ tenant: "default", ownerType: "Vault", ownerId: "o-2" })
      const executionId = encodeExecutionId({
        tenant: "default",
        ownerType: "Vault",
        ownerId: "o-2",
        workflow: "listen",
        key: "late",
      })
      await starter.connect()
      await starter.query("BEGIN")
      await starter.query(
        `INSERT INTO akter.owners (routing_key, tenant, owner_type, owner_id, created_at_ms)
         VALUES ($1, 'default', 'Vault', 'o-2', 0)`,
        [owner.routingKey],
      )
      await starter.query(
        `INSERT INTO akter.executions (routing_key, execution_id, bucket, tenant, owner_type,
           owner_id, workflow, execution_key, manifest_hash, input, caller, event_cursor, status,
           started_at_ms)
         VALUES ($1, $2, $3, 'default', 'Vault', 'o-2', 'listen', 'late', $4, $5,
           '{"tenant":"default"}', 0, 'running', 0)`,
        [owner.routingKey, executionId, owner.bucket, v1Hash, encodeJson({ name: "late" })],
      )
      const started = performance.now()
      const sweeping = sweepRetention(internals)
      await new Promise((resolve) => setTimeout(resolve, 400))
      await starter.query("COMMIT")
      const report = await sweeping
      expect(performance.now() - started).toBeGreaterThanOrEqual(400)
      expect(report.manifests).toBe(0)
      const { rows } = await sql<{ manifest_hash: string }>`
        SELECT manifest_hash FROM akter.manifests
        WHERE workflow = 'listen' AND manifest_hash = ${v1Hash}`.execute(internals.storage.db)
      expect(rows).toHaveLength(1)
    } finally {
      await starter.end().catch(() => {})
      await akter.close()
      await database.drop()
    }
  })
})

describePostgres("retention pacing", () => {
  /** Every delete statement on `akter.executions` takes at least this long (a trigger sleeps). */
  const SLOW_MS = 50
  const BATCH = 5
  const FULL_BATCHES = 4

  const executionIds = async (akter: TestAkter) =>
    (
      await internalsOf(akter)
        .storage.db.selectFrom("akter.executions")
        .select("execution_id")
        .execute()
    ).map((row) => row.execution_id)

  /**
   * A handle whose executions batches each take at least SLOW_MS, and a function that leaves
   * FULL_BATCHES × BATCH finished executions past the default keep period.
   */
  const withSlowDeletes = async (
    test: (akter: TestAkter, finishBatches: () => Promise<void>) => Promise<void>,
  ) => {
    const vault = await makeVault()
    const akter = await openTestAkter("postgres")
    const runner = await startRunner({ akter, workflows: vault.workflows, pollMs: 20 })
    let started = 0
    try {
      const { db } = internalsOf(akter).storage
      await sql`CREATE FUNCTION public.slow_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep(${sql.lit(SLOW_MS / 1000)}); RETURN NULL; END $$`.execute(db)
      await sql`CREATE TRIGGER slow_delete BEFORE DELETE ON akter.executions
        FOR EACH STATEMENT EXECUTE FUNCTION public.slow_delete()`.execute(db)
      const client = makeOwnerClient<AnyClient>(akter, vault.vault)
      const entry = { name: "n", note: "", tags: [] }
      await test(akter, async () => {
        for (let index = 0; index < FULL_BATCHES * BATCH; index += 1, started += 1) {
          await client.store.start(`o-${started}`, { name: `k-${started}`, amount: 1, entry })
        }
        await runUntilIdle(akter, runner)
        akter.advance(8 * DAY_MS)
      })
    } finally {
      await runner.close()
      await akter.close()
    }
  }

  it("spends at most its duty cycle of a sweep's time in batches, waiting after each", async () => {
    await withSlowDeletes(async (akter, finishBatches) => {
      // Four full batches and the short one that ends the phase, each followed by another batch,
      // so each is followed by a wait of at least 9 × SLOW_MS at a duty cycle of 0.1.
      const pacedLowerBoundMs = ((FULL_BATCHES + 1) * SLOW_MS) / 0.1
      await finishBatches()
      let startedAt = performance.now()
      const unpaced = await sweepRetention(internalsOf(akter), { batchSize: BATCH, dutyCycle: 1 })
      const unpacedMs = performance.now() - startedAt
      expect(unpaced.executions).toBe(FULL_BATCHES * BATCH)
      expect(unpacedMs).toBeGreaterThanOrEqual((FULL_BATCHES + 1) * SLOW_MS)
      expect(unpacedMs).toBeLessThan(pacedLowerBoundMs)

      await finishBatches()
      startedAt = performance.now()
      const paced = await sweepRetention(internalsOf(akter), { batchSize: BATCH, dutyCycle: 0.1 })
      expect(performance.now() - startedAt).toBeGreaterThanOrEqual(pacedLowerBoundMs)
      expect(paced).toEqual({
        executions: FULL_BATCHES * BATCH,
        events: 0,
        receipts: 0,
        manifests: 0,
        skipped: false,
      })
      expect(await executionIds(akter)).toEqual([])
    })
  })

  it("stops between batches when its signal aborts, keeping what it deleted; the next sweep goes on", async () => {
    await withSlowDeletes(async (akter, finishBatches) => {
      await finishBatches()
      const stopping = new AbortController()
      const sweeping = sweepRetention(internalsOf(akter), {
        batchSize: BATCH,
        dutyCycle: 0.01,
        signal: stopping.signal,
      })
      // The first batch takes at least SLOW_MS, then the sweep waits about 99 times as long.
      await new Promise((resolve) => setTimeout(resolve, 10 * SLOW_MS))
      const startedAt = performance.now()
      stopping.abort()
      const stopped = await sweeping
      expect(performance.now() - startedAt).toBeLessThan(20 * SLOW_MS)
      expect(stopped).toEqual({
        executions: BATCH,
        events: 0,
        receipts: 0,
        manifests: 0,
        skipped: true,
      })
      expect(await executionIds(akter)).toHaveLength((FULL_BATCHES - 1) * BATCH)
      const next = await sweepRetention(internalsOf(akter), { batchSize: BATCH, dutyCycle: 1 })
      expect(next).toMatchObject({ executions: (FULL_BATCHES - 1) * BATCH, skipped: false })
      expect(await executionIds(akter)).toEqual([])
    })
  })
})
