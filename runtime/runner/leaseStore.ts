/**
 * Every statement on `akter.runners` and `akter.leases`. A lease gives one runner the right to
 * serve a bucket until `expires_at_ms`; `epoch` grows with every change of holder. Leases decide
 * who serves what; the owners' generation fence decides who may write, so a lease lost in a pause
 * costs time, never a wrong write.
 */
import { sql } from "kysely"
import type { Queryable } from "../storage/database.js"
import { nowMs, type DatabaseClock } from "../storage/clock.js"

/** Registers the runner, or refreshes its heartbeat; returns how many runners are alive. */
export const heartbeat = async (
  db: Queryable,
  clock: DatabaseClock,
  runnerId: string,
  leaseMs: number,
  info: string,
): Promise<{ readonly alive: number; readonly now: number }> => {
  const { rows } = await sql<{ alive: number; now: number }>`
    WITH now AS (SELECT ${nowMs(clock)} AS ms),
    me AS (
      INSERT INTO akter.runners (runner_id, started_at_ms, heartbeat_at_ms, info)
      SELECT ${runnerId}, ms, ms, ${info}::jsonb FROM now
      ON CONFLICT (runner_id) DO UPDATE SET heartbeat_at_ms = EXCLUDED.heartbeat_at_ms
      RETURNING runner_id)
    SELECT (SELECT count(*) FROM akter.runners, now
            WHERE heartbeat_at_ms > now.ms - ${leaseMs}::bigint AND runner_id <> ${runnerId})::int + 1
             AS alive,
           (SELECT ms FROM now) AS now`.execute(db)
  return rows[0]!
}

/**
 * Extends the leases this runner still holds. A lease that already expired is not renewed: another
 * runner may have taken it, and this one must treat it as lost.
 */
export const renewLeases = async (
  db: Queryable,
  clock: DatabaseClock,
  runnerId: string,
  leaseMs: number,
): Promise<number[]> => {
  const { rows } = await sql<{ bucket: number }>`
    UPDATE akter.leases SET expires_at_ms = ${nowMs(clock)} + ${leaseMs}::bigint
    WHERE runner_id = ${runnerId} AND expires_at_ms > ${nowMs(clock)}
    RETURNING bucket`.execute(db)
  return rows.map((row) => row.bucket).sort((a, b) => a - b)
}

/**
 * Takes up to `count` buckets whose lease lapsed (or was released), advancing each one's epoch.
 * `SKIP LOCKED`: two runners acquiring at once take different buckets.
 */
export const acquireLeases = async (
  db: Queryable,
  clock: DatabaseClock,
  runnerId: string,
  leaseMs: number,
  count: number,
): Promise<number[]> => {
  if (count <= 0) return []
  const { rows } = await sql<{ bucket: number }>`
    WITH free AS (
      SELECT bucket FROM akter.leases
      WHERE expires_at_ms <= ${nowMs(clock)}
      ORDER BY bucket
      LIMIT ${count}
      FOR UPDATE SKIP LOCKED)
    UPDATE akter.leases l
    SET runner_id = ${runnerId}, epoch = l.epoch + 1,
      expires_at_ms = ${nowMs(clock)} + ${leaseMs}::bigint
    FROM free WHERE l.bucket = free.bucket
    RETURNING l.bucket`.execute(db)
  return rows.map((row) => row.bucket).sort((a, b) => a - b)
}

/** Gives buckets back at once, so another runner takes them on its next heartbeat. */
export const releaseLeases = async (
  db: Queryable,
  runnerId: string,
  buckets: readonly number[],
): Promise<void> => {
  if (buckets.length === 0) return
  await db
    .updateTable("akter.leases")
    .set({ runner_id: null, expires_at_ms: 0 })
    .where("runner_id", "=", runnerId)
    .where("bucket", "in", buckets)
    .execute()
}

export const forgetRunner = async (db: Queryable, runnerId: string): Promise<void> => {
  await db.deleteFrom("akter.runners").where("runner_id", "=", runnerId).execute()
}

/** Drops runner rows that have not beaten for a long time, so the table does not grow forever. */
export const forgetDeadRunners = async (
  db: Queryable,
  clock: DatabaseClock,
  olderThanMs: number,
): Promise<void> => {
  await sql`
    DELETE FROM akter.runners WHERE heartbeat_at_ms < ${nowMs(clock)} - ${olderThanMs}::bigint
  `.execute(db)
}
