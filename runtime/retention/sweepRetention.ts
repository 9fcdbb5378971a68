/**
 * Retention: the database must not grow forever. A sweep deletes finished executions whose keep
 * period (default 7 days) has passed, events no open execution can still read, receipts older than
 * the keep period, and manifests no open execution uses — keeping, per workflow, the one accepted
 * last, which runners compare their own against.
 *
 * Each phase's statements belong to the store of the table they delete from; this module only
 * orders the phases, batches them and holds the sweep lock.
 *
 * Any runner may sweep at any time: every batch is one short transaction that first takes a
 * transaction-level advisory lock with `pg_try_advisory_xact_lock`, so while one runner sweeps
 * another gives up at once instead of repeating its work, and rows are chosen `FOR UPDATE SKIP
 * LOCKED`, so a sweep never waits on a row a pass or a client is writing. Times are the database
 * clock's (`akter.now_ms` with the handle's offset), so `testAkter().advance` drives it.
 *
 * A sweep is paced so that it yields to the workload sharing the database: after each batch it
 * waits in proportion to how long that batch took, so it spends at most `dutyCycle` of its time in
 * batches. A steady sweep deletes only what expired since the last one, and finishes long before
 * the next; catching up a large backlog takes `1 / dutyCycle` times as long as it would back to back.
 */
import { setTimeout as sleep } from "node:timers/promises"
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { pruneExpiredReceipts } from "../client/receiptStore.js"
import {
  deleteExpiredExecutionsPart,
  expiredExecutionsPart,
  holdOffExecutionWrites,
} from "../engine/executionStore.js"
import { pruneUnreadableEvents } from "../events/eventLog.js"
import { deleteTimersOfPart } from "../outbox/outboxStore.js"
import { nowMs } from "../storage/clock.js"
import type { Tx } from "../storage/database.js"
import { countUnusedManifests, pruneUnusedManifests } from "../storage/manifestStore.js"
import { composeStatement, countOf } from "../storage/statementParts.js"

/** How long finished executions and receipts are kept: 7 days. */
export const DEFAULT_KEEP_MS = 7 * 24 * 60 * 60 * 1000

/** Rows deleted per transaction, so a sweep holds its locks briefly. */
export const DEFAULT_BATCH_SIZE = 500

/**
 * The share of its time a sweep spends in batches: after a batch of d ms it waits 4 d ms, so on a
 * busy database (where batches take longer) it waits longer.
 */
export const DEFAULT_DUTY_CYCLE = 0.2

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
  /**
   * The share of its time the sweep spends in batches, above 0 and at most 1 (default 0.2): after
   * each batch it waits `(1 - dutyCycle) / dutyCycle` times as long as the batch took. 1: batches
   * back to back.
   */
  readonly dutyCycle?: number
  /** Stops the sweep between batches (or during a wait); what it deleted so far stays deleted. */
  readonly signal?: AbortSignal
}

export interface RetentionReport {
  readonly executions: number
  readonly events: number
  readonly receipts: number
  readonly manifests: number
  /**
   * The sweep stopped before it was done — another sweep held the lock, or `signal` aborted it —
   * and the next sweep goes on from where it stopped.
   */
  readonly skipped: boolean
}

type Batch = (tx: Tx, cutoffMs: number, limit: number) => Promise<number>

/**
 * Deletes finished executions that finished before the cutoff, and any timer left with them (a
 * finish deletes its steps and timer; the cascade and this cover rows a crash could leave): one
 * statement of the executions' and the outbox's parts.
 */
const deleteFinishedExecutions: Batch = async (tx, cutoffMs, limit) => {
  const expired = expiredExecutionsPart(cutoffMs, limit)
  const deleted = deleteExpiredExecutionsPart(expired.name)
  const { rows } = await composeStatement(
    [expired, deleteTimersOfPart(expired.name), deleted],
    sql`${countOf(deleted.name)} AS n`,
  ).execute(tx)
  return rows[0]!["n"] as number
}

/**
 * Deletes unused manifests. The candidates are counted first, so that writers of executions are
 * held off (for at most a short timeout, rather than stall them) only when there is something to
 * delete, after a deploy.
 */
const pruneManifests: Batch = async (tx, cutoffMs) => {
  if ((await countUnusedManifests(tx, cutoffMs)) === 0) return 0
  await holdOffExecutionWrites(tx, MANIFEST_LOCK_TIMEOUT)
  return pruneUnusedManifests(tx, cutoffMs)
}

/** Whether this transaction holds the sweep lock (released at its end). */
const takeSweepLock = async (tx: Tx): Promise<boolean> => {
  const { rows } = await sql<{ locked: boolean }>`
    SELECT pg_try_advisory_xact_lock(${RETENTION_LOCK}) AS locked`.execute(tx)
  return rows[0]!.locked
}

/** Waits `ms`, or less if `signal` aborts; whether the sweep may go on. */
const paused = async (ms: number, signal: AbortSignal | undefined): Promise<boolean> => {
  if (ms > 0) await sleep(ms, undefined, signal === undefined ? {} : { signal }).catch(() => {})
  return signal?.aborted !== true
}

/**
 * The options with their defaults, each checked: a `RangeError` names the first out of range.
 * `startRunner` checks its retention schedule with it before it starts, so a bad option refuses
 * the runner instead of failing every sweep later.
 */
export const checkedRetentionOptions = (options: Omit<RetentionOptions, "signal">) => {
  const keepMs = options.keepMs ?? DEFAULT_KEEP_MS
  const limit = options.batchSize ?? DEFAULT_BATCH_SIZE
  const dutyCycle = options.dutyCycle ?? DEFAULT_DUTY_CYCLE
  if (!Number.isSafeInteger(keepMs) || keepMs < 0) {
    throw new RangeError(`retention keepMs must be a non-negative integer of ms, got ${keepMs}`)
  }
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`retention batchSize must be a positive integer, got ${limit}`)
  }
  if (!(dutyCycle > 0 && dutyCycle <= 1)) {
    throw new RangeError(`retention dutyCycle must be above 0 and at most 1, got ${dutyCycle}`)
  }
  return { keepMs, limit, dutyCycle }
}

/**
 * Sweeps once: finished executions, events, receipts, then manifests (last, so executions deleted
 * in this sweep no longer hold theirs), pacing its batches by `dutyCycle`. Returns how many rows
 * each phase deleted.
 *
 * @example
 * const report = await sweepRetention(internalsOf(akter), { keepMs: 7 * 24 * 60 * 60 * 1000 })
 * if (report.skipped) log.debug("another runner is sweeping, or this one was stopped")
 */
export const sweepRetention = async (
  internals: Pick<AkterInternals, "storage" | "clock">,
  options: RetentionOptions = {},
): Promise<RetentionReport> => {
  const { keepMs, limit, dutyCycle } = checkedRetentionOptions(options)
  const { db } = internals.storage
  const { rows } = await sql<{ cutoff: number }>`
    SELECT ${nowMs(internals.clock)} - ${keepMs}::bigint AS cutoff`.execute(db)
  const cutoffMs = rows[0]!.cutoff
  const counts = { executions: 0, events: 0, receipts: 0, manifests: 0 }
  const phases: [keyof typeof counts, Batch][] = [
    ["executions", deleteFinishedExecutions],
    ["events", pruneUnreadableEvents],
    ["receipts", pruneExpiredReceipts],
    ["manifests", pruneManifests],
  ]
  let waitMs = 0
  for (const [phase, batch] of phases) {
    for (;;) {
      if (!(await paused(waitMs, options.signal))) return { ...counts, skipped: true }
      const startedAt = performance.now()
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
      waitMs = ((performance.now() - startedAt) * (1 - dutyCycle)) / dutyCycle
      counts[phase] += deleted
      if (phase === "manifests" || deleted < limit) break
    }
  }
  return { ...counts, skipped: false }
}
