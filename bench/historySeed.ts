/**
 * Bulk history for the benchmarks that need a big database (the studio's, `studio.ts`, and shape h,
 * `historyTrial.ts`): with `generate_series`, finished executions (10% failed, 2% interrupted, 1%
 * defect) of five workflows of two owner types, `Order` and `User`, spread over owners placed as
 * the runtime places them, each finished execution with one event of its owner, and open
 * executions after them. Rows are written as the engine leaves them: a finish deletes its
 * execution's steps and timer, so finished executions have none. Seeding can be done in rounds
 * (`seedHistory` from the count already there), so a trial can measure between rounds.
 */
import { sql } from "kysely"
import { placeOwner } from "../runtime/owners/routing.js"
import type { Db } from "../runtime/storage/database.js"

/** Finished executions per owner, so owners (and their events) grow with the history. */
const EXECUTIONS_PER_OWNER = 50
/** The studio's page filters name owners up to this many, so there are at least as many. */
const MIN_OWNERS = 20_000
/** Rows per insert statement: big enough to be quick, small enough to report progress. */
const BATCH = 100_000

export interface HistorySeed {
  /** Finished executions in the database after this round (those before are kept). */
  readonly finished: number
  /** Finished executions already seeded by earlier rounds. */
  readonly from?: number
  /**
   * The finished executions the last round will reach: owners (one per 50, at least 20,000) are
   * fixed by it, so every round spreads its executions and events over the same owners.
   */
  readonly planned?: number
  /** Open executions (a quarter running, the rest suspended), seeded after the finished ones. */
  readonly open?: number
  /**
   * Each open execution gets its timer due this far ahead, as a sleep leaves it (default: none, as a
   * wait with no timeout leaves it).
   */
  readonly openTimersInMs?: number
  /** Whether each finished execution gets an event of its owner (default true). */
  readonly events?: boolean
  /** When the newest finished execution (of the planned count) finished: the rest go back 100 ms each (default a day ago). */
  readonly newestFinishedAtMs?: number
  readonly onProgress?: (finished: number) => void
}

export const ownersFor = (finished: number) =>
  Math.max(MIN_OWNERS, Math.ceil(finished / EXECUTIONS_PER_OWNER))

/**
 * The owners of `count` finished executions, created once (owners grow only): a table
 * `public.akter_bench_owner (o, rk, bucket)` maps owner number to routing key and bucket, and the
 * same rows go into `akter.owners`. Owner `o` is `Order` when even, `User` when odd.
 */
const ensureOwners = async (db: Db, count: number) => {
  await sql`CREATE TABLE IF NOT EXISTS public.akter_bench_owner (o int PRIMARY KEY, rk bigint, bucket int)`.execute(
    db,
  )
  const { rows } = await sql<{
    n: number
  }>`SELECT count(*)::int AS n FROM public.akter_bench_owner`.execute(db)
  const have = rows[0]!.n
  for (let first = have + 1; first <= count; first += BATCH) {
    const numbers = Array.from({ length: Math.min(BATCH, count - first + 1) }, (_, i) => first + i)
    // Placed as the runtime places them (placeOwner), so an owner filter's routing key finds them.
    const owners = numbers.map((o) =>
      placeOwner({
        tenant: "default",
        ownerType: o % 2 === 0 ? "Order" : "User",
        ownerId: `o-${o}`,
      }),
    )
    await sql`INSERT INTO public.akter_bench_owner
      SELECT * FROM unnest(${numbers}::int[], ${owners.map((owner) => owner.routingKey)}::bigint[],
        ${owners.map((owner) => owner.bucket)}::int[])`.execute(db)
    await sql`INSERT INTO akter.owners (routing_key, tenant, owner_type, owner_id, created_at_ms)
      SELECT rk, 'default', CASE WHEN o % 2 = 0 THEN 'Order' ELSE 'User' END, 'o-' || o, 1700000000000
      FROM public.akter_bench_owner WHERE o >= ${first}`.execute(db)
  }
}

/**
 * Executions `from`..`to` (inclusive). Execution n belongs to owner `1 + n % owners`; a finished
 * one finished `(newest - n) × 100 ms` before the newest; its event is the owner's
 * `1 + floor((n - 1) / owners)`-th.
 */
const insertExecutions = (
  db: Db,
  range: {
    from: number
    to: number
    owners: number
    open: boolean
    newestMs: number
    lastN: number
  },
) => {
  const { from, to, owners, open, newestMs, lastN } = range
  return sql`
    INSERT INTO akter.executions (routing_key, execution_id, bucket, tenant, owner_type, owner_id,
      workflow, execution_key, manifest_hash, input, caller, event_cursor, status, result,
      outcome, started_at_ms, finished_at_ms)
    SELECT b.rk, 'ak1.bench-' || n, b.bucket, 'default',
      CASE WHEN o % 2 = 0 THEN 'Order' ELSE 'User' END, 'o-' || o,
      CASE WHEN o % 2 = 0 THEN (ARRAY['fulfill', 'refund', 'ship'])[1 + (n / 7) % 3]
        ELSE (ARRAY['signUp', 'verify'])[1 + (n / 7) % 2] END,
      'k-' || n, 'akter1:sha256:bench',
      '\\x00'::bytea || convert_to('{"customerId":"c-' || (n % 5000) || '","total":' || (n % 997) || '}', 'UTF8'),
      '{"tenant":"default"}', 0,
      ${open ? sql`CASE WHEN n % 4 = 0 THEN 'running' ELSE 'suspended' END` : sql`'finished'`},
      ${open ? sql`NULL` : sql`'\\x00'::bytea || convert_to(CASE WHEN n % 100 < 10 THEN '{"_tag":"Failure","error":{"_tag":"OutOfStock"}}' WHEN n % 100 < 12 THEN '{"_tag":"Interrupt"}' WHEN n % 100 < 13 THEN '{"_tag":"Die","message":"bug"}' ELSE '{"_tag":"Success","value":null}' END, 'UTF8')`},
      ${open ? sql`NULL` : sql`CASE WHEN n % 100 < 10 THEN 'failed' WHEN n % 100 < 12 THEN 'interrupted' WHEN n % 100 < 13 THEN 'defect' ELSE 'succeeded' END`},
      ${open ? sql`${Date.now()}::bigint - (n - ${from}) * 1000` : sql`${newestMs}::bigint - (${lastN} - n) * 100 - 500`},
      ${open ? sql`NULL` : sql`${newestMs}::bigint - (${lastN} - n) * 100`}
    FROM generate_series(${from}::int, ${to}::int) AS n,
      LATERAL (SELECT 1 + n % ${owners}::int AS o) AS owner
      JOIN public.akter_bench_owner b USING (o)`.execute(db)
}

/** One event per finished execution `from`..`to`, emitted when it started; owners' sequences follow. */
const insertEvents = async (
  db: Db,
  range: { from: number; to: number; owners: number; newestMs: number; lastN: number },
) => {
  const { from, to, owners, newestMs, lastN } = range
  await sql`
    INSERT INTO akter.events (routing_key, tenant, owner_type, owner_id, sequence, name, payload,
      emitted_at_ms)
    SELECT b.rk, 'default', CASE WHEN o % 2 = 0 THEN 'Order' ELSE 'User' END, 'o-' || o,
      1 + (n - 1) / ${owners}::int, 'Paid',
      '\\x00'::bytea || convert_to('{"amount":' || (n % 997) || '}', 'UTF8'),
      ${newestMs}::bigint - (${lastN} - n) * 100 - 500
    FROM generate_series(${from}::int, ${to}::int) AS n,
      LATERAL (SELECT 1 + n % ${owners}::int AS o) AS owner
      JOIN public.akter_bench_owner b USING (o)`.execute(db)
}

/**
 * Seeds history up to `seed.finished` finished executions (and `seed.open` open ones), then
 * analyzes the tables. Invariant kept: every row refers to an owner row, each owner's events are
 * numbered 1, 2, … without gaps and `owners.event_sequence` is the last of them, and finished
 * executions carry a result, an outcome and a finish time, as the schema's checks require.
 */
export const seedHistory = async (db: Db, seed: HistorySeed): Promise<void> => {
  const from = seed.from ?? 0
  // Owners are fixed by the final count of a seeding; a later round only adds executions to them.
  const owners = ownersFor(Math.max(seed.planned ?? 0, seed.finished))
  await ensureOwners(db, owners)
  const newestMs = seed.newestFinishedAtMs ?? Date.now() - 86_400_000
  const lastN = Math.max(seed.planned ?? 0, seed.finished)
  for (let first = from + 1; first <= seed.finished; first += BATCH) {
    const last = Math.min(seed.finished, first + BATCH - 1)
    const range = { from: first, to: last, owners, newestMs, lastN }
    await insertExecutions(db, { ...range, open: false })
    if (seed.events !== false) await insertEvents(db, range)
    seed.onProgress?.(last)
  }
  if (seed.events !== false && seed.finished > from) {
    await sql`UPDATE akter.owners o SET event_sequence = e.last
      FROM (SELECT routing_key, tenant, owner_type, owner_id, max(sequence) AS last
            FROM akter.events GROUP BY 1, 2, 3, 4) e
      WHERE (o.routing_key, o.tenant, o.owner_type, o.owner_id)
        = (e.routing_key, e.tenant, e.owner_type, e.owner_id)`.execute(db)
  }
  const open = seed.open ?? 0
  if (open > 0) {
    await insertExecutions(db, {
      from: seed.finished + 1,
      to: seed.finished + open,
      owners,
      open: true,
      newestMs,
      lastN,
    })
    if (seed.openTimersInMs !== undefined) {
      await sql`INSERT INTO akter.outbox (routing_key, kind, id, bucket, tenant, owner_type, owner_id,
          due_at_ms)
        SELECT routing_key, 'timer', execution_id, bucket, tenant, owner_type, owner_id,
          ${Date.now() + seed.openTimersInMs}::bigint
        FROM akter.executions WHERE execution_id LIKE 'ak1.bench-%' AND status <> 'finished'
        ON CONFLICT DO NOTHING`.execute(db)
    }
  }
  await sql`INSERT INTO akter.manifests (owner_type, workflow, manifest_hash, manifest, accepted_at_ms)
    SELECT DISTINCT owner_type, workflow, 'akter1:sha256:bench', '{}'::jsonb, 0 FROM akter.executions
    WHERE manifest_hash = 'akter1:sha256:bench'
    ON CONFLICT DO NOTHING`.execute(db)
  // As autovacuum would have left a table that grew over months: visibility map set, statistics read.
  await sql`VACUUM (ANALYZE) akter.executions, akter.events, akter.owners, akter.outbox`.execute(db)
  // And as the checkpoints of those months would have: nothing of the seeding left to write, so a
  // measurement right after it does not share the disk with the flush of gigabytes of seeded pages.
  // (Needs a superuser or pg_checkpoint; without, the measurement carries that flush, as said.)
  await sql`CHECKPOINT`.execute(db).catch((error: unknown) => {
    process.stderr.write(
      `\nhistory seed: CHECKPOINT refused (${String(error)}); measuring anyway\n`,
    )
  })
}
