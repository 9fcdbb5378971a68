/**
 * Retention: the database must not grow forever. A sweep deletes finished executions whose keep
 * period (default 7 days) has passed, events no open execution can still read, receipts older than
 * the keep period, and manifests no open execution uses — keeping, per workflow, the one accepted
 * last, which runners compare their own against.
 *
 * Any runner may sweep at any time: every batch is one short transaction that first takes a
 * transaction-level advisory lock with `pg_try_advisory_xact_lock`, so while one runner sweeps
 * another gives up at once instead of repeating its work, and rows are chosen `FOR UPDATE SKIP
 * LOCKED`, so a sweep never waits on a row a pass or a client is writing. Times are the database
 * clock's (`akter.now_ms` with the handle's offset), so `testAkter().advance` drives it.
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { nowMs } from "../storage/clock.js"
import type { Tx } from "../storage/database.js"

/** How long finished executions and receipts are kept: 7 days. */
export const DEFAULT_KEEP_MS = 7 * 24 * 60 * 60 * 1000

/** Rows deleted per transaction, so a sweep holds its locks briefly. */
export const DEFAULT_BATCH_SIZE = 500

/** An arbitrary constant: the advisory lock key all sweeping runners agree on. */
const RETENTION_LOCK = 4_242_003

/** How long the manifest phase waits for in-flight execution writes before leaving it for later. */
const MANIFEST_LOCK_TIMEOUT = "2s"

/** SQLSTATE of a lock that `lock_timeout` gave up on. */
const LOCK_NOT_AVAILABLE = "55P03"

export interface RetentionOptions {
  /** Keep period of finished executions, events and receipts, in ms (default 7 days). */
  readonly keepMs?: number
  /** Rows per batch (default 500). */
  readonly batchSize?: number
}

export interface RetentionReport {
  readonly executions: number
  readonly events: number
  readonly receipts: number
  readonly manifests: number
  /** Another sweep held the lock, so this one stopped where it was; the next sweep goes on. */
  readonly skipped: boolean
}

type Batch = (tx: Tx, cutoffMs: number, limit: number) => Promise<number>

/**
 * Deletes finished executions that finished before the cutoff, and any timer left with them (a
 * finish deletes its steps and timer; the cascade and this cover rows a crash could leave).
 */
const deleteFinishedExecutions: Batch = async (tx, cutoffMs, limit) => {
  const { rows } = await sql<{ n: number }>`
    WITH doomed AS (
      SELECT routing_key, execution_id FROM akter.executions
      WHERE status = 'finished' AND finished_at_ms < ${cutoffMs}::bigint
      ORDER BY finished_at_ms
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED),
    timers AS (
      DELETE FROM akter.outbox o USING doomed
      WHERE o.routing_key = doomed.routing_key AND o.kind = 'timer' AND o.id = doomed.execution_id),
    deleted AS (
      DELETE FROM akter.executions e USING doomed
      WHERE e.routing_key = doomed.routing_key AND e.execution_id = doomed.execution_id
      RETURNING 1)
    SELECT count(*)::int AS n FROM deleted`.execute(tx)
  return rows[0]!.n
}

/**
 * Deletes events emitted before the cutoff that no open execution of their owner can still read:
 * a wait reads the events after its registration (`wait_after`), and a wait not yet registered
 * reads those after its execution's cursor, so an event at or below every open execution's cursor
 * and every pending wait's registration is never read again. A settled wait recorded the payload
 * it matched, so replays do not need the event either. Executions that start later set their cursor
 * at the owner's last sequence, past every existing event.
 */
const pruneEvents: Batch = async (tx, cutoffMs, limit) => {
  const { rows } = await sql<{ n: number }>`
    WITH doomed AS (
      SELECT ev.routing_key, ev.tenant, ev.owner_type, ev.owner_id, ev.sequence
      FROM akter.events ev
      WHERE ev.emitted_at_ms < ${cutoffMs}::bigint
        AND NOT EXISTS (
          SELECT 1 FROM akter.executions e
          WHERE e.routing_key = ev.routing_key AND e.tenant = ev.tenant
            AND e.owner_type = ev.owner_type AND e.owner_id = ev.owner_id
            AND e.status <> 'finished' AND e.event_cursor < ev.sequence)
        AND NOT EXISTS (
          SELECT 1 FROM akter.steps s
          JOIN akter.executions e
            ON e.routing_key = s.routing_key AND e.execution_id = s.execution_id
          WHERE s.routing_key = ev.routing_key AND s.kind = 'wait' AND s.exit IS NULL
            AND e.tenant = ev.tenant AND e.owner_type = ev.owner_type
            AND e.owner_id = ev.owner_id AND s.wait_after < ev.sequence)
      ORDER BY ev.emitted_at_ms
      LIMIT ${limit}
      FOR UPDATE OF ev SKIP LOCKED),
    deleted AS (
      DELETE FROM akter.events ev USING doomed
      WHERE ev.routing_key = doomed.routing_key AND ev.tenant = doomed.tenant
        AND ev.owner_type = doomed.owner_type AND ev.owner_id = doomed.owner_id
        AND ev.sequence = doomed.sequence
      RETURNING 1)
    SELECT count(*)::int AS n FROM deleted`.execute(tx)
  return rows[0]!.n
}

/**
 * Deletes receipts created before the cutoff. A client retrying a command after that long applies
 * it anew: the keep period is also the window in which retries are recognized.
 */
const pruneReceipts: Batch = async (tx, cutoffMs, limit) => {
  const { rows } = await sql<{ n: number }>`
    WITH doomed AS (
      SELECT routing_key, tenant, owner_type, owner_id, command_id FROM akter.receipts
      WHERE created_at_ms < ${cutoffMs}::bigint
      ORDER BY created_at_ms
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED),
    deleted AS (
      DELETE FROM akter.receipts r USING doomed
      WHERE r.routing_key = doomed.routing_key AND r.tenant = doomed.tenant
        AND r.owner_type = doomed.owner_type AND r.owner_id = doomed.owner_id
        AND r.command_id = doomed.command_id
      RETURNING 1)
    SELECT count(*)::int AS n FROM deleted`.execute(tx)
  return rows[0]!.n
}

/** Manifests that are neither used by an open execution, nor accepted last, nor within the keep period. */
const unusedManifests = (cutoffMs: number) => sql`
  SELECT m.owner_type, m.workflow, m.manifest_hash FROM akter.manifests m
  WHERE m.accepted_at_ms < ${cutoffMs}::bigint
    AND m.accepted_at_ms < (
      SELECT max(latest.accepted_at_ms) FROM akter.manifests latest
      WHERE latest.owner_type = m.owner_type AND latest.workflow = m.workflow)
    AND NOT EXISTS (
      SELECT 1 FROM akter.executions e
      WHERE e.owner_type = m.owner_type AND e.workflow = m.workflow
        AND e.manifest_hash = m.manifest_hash AND e.status <> 'finished')`

/**
 * Deletes unused manifests. A start records its manifest with `ON CONFLICT DO NOTHING`, which takes
 * no lock on an existing row, so a start still in flight under a manifest could commit after the
 * delete saw no open execution. `LOCK TABLE … IN SHARE MODE` closes that window: it waits for every
 * transaction writing executions to commit and holds new ones off until this delete commits, so the
 * delete's check sees every started execution. It is taken only when there is something to delete
 * (after a deploy), and gives up after a short timeout rather than stall writers.
 */
const pruneManifests: Batch = async (tx, cutoffMs) => {
  const { rows: candidates } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM (${unusedManifests(cutoffMs)}) unused`.execute(tx)
  if (candidates[0]!.n === 0) return 0
  await sql`SELECT set_config('lock_timeout', ${MANIFEST_LOCK_TIMEOUT}, true)`.execute(tx)
  await sql`LOCK TABLE akter.executions IN SHARE MODE`.execute(tx)
  const { rows } = await sql<{ n: number }>`
    WITH deleted AS (
      DELETE FROM akter.manifests m USING (${unusedManifests(cutoffMs)}) unused
      WHERE m.owner_type = unused.owner_type AND m.workflow = unused.workflow
        AND m.manifest_hash = unused.manifest_hash
      RETURNING 1)
    SELECT count(*)::int AS n FROM deleted`.execute(tx)
  return rows[0]!.n
}

/** Whether this transaction holds the sweep lock (released at its end). */
const takeSweepLock = async (tx: Tx): Promise<boolean> => {
  const { rows } = await sql<{ locked: boolean }>`
    SELECT pg_try_advisory_xact_lock(${RETENTION_LOCK}) AS locked`.execute(tx)
  return rows[0]!.locked
}

/**
 * Sweeps once: finished executions, events, receipts, then manifests (last, so executions deleted
 * in this sweep no longer hold theirs). Returns how many rows each phase deleted.
 *
 * @example
 * const report = await sweepRetention(internalsOf(akter), { keepMs: 7 * 24 * 60 * 60 * 1000 })
 * if (report.skipped) log.debug("another runner is sweeping")
 */
export const sweepRetention = async (
  internals: Pick<AkterInternals, "storage" | "clock">,
  options: RetentionOptions = {},
): Promise<RetentionReport> => {
  const keepMs = options.keepMs ?? DEFAULT_KEEP_MS
  const limit = options.batchSize ?? DEFAULT_BATCH_SIZE
  if (!Number.isSafeInteger(keepMs) || keepMs < 0) {
    throw new RangeError(`retention keepMs must be a non-negative integer of ms, got ${keepMs}`)
  }
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`retention batchSize must be a positive integer, got ${limit}`)
  }
  const { db } = internals.storage
  const { rows } = await sql<{ cutoff: number }>`
    SELECT ${nowMs(internals.clock)} - ${keepMs}::bigint AS cutoff`.execute(db)
  const cutoffMs = rows[0]!.cutoff
  const counts = { executions: 0, events: 0, receipts: 0, manifests: 0 }
  const phases: [keyof typeof counts, Batch][] = [
    ["executions", deleteFinishedExecutions],
    ["events", pruneEvents],
    ["receipts", pruneReceipts],
    ["manifests", pruneManifests],
  ]
  for (const [phase, batch] of phases) {
    for (;;) {
      let deleted: number | undefined
      try {
        deleted = await db
          .transaction()
          .execute(async (tx) =>
            (await takeSweepLock(tx)) ? batch(tx, cutoffMs, limit) : undefined,
          )
      } catch (error) {
        // Writers kept the executions table busy past the lock timeout: manifests wait for the
        // next sweep (the transaction rolled back, so nothing of this batch was deleted).
        if (phase === "manifests" && (error as { code?: string }).code === LOCK_NOT_AVAILABLE) break
        throw error
      }
      if (deleted === undefined) return { ...counts, skipped: true }
      counts[phase] += deleted
      if (phase === "manifests" || deleted < limit) break
    }
  }
  return { ...counts, skipped: false }
}
