/**
 * What a test reads of the bucket leases: who holds which bucket right now, and an owner id that
 * lands in a chosen runner's buckets (so a test knows which process serves an execution).
 */
import { sql } from "kysely"
import { DEFAULT_TENANT } from "../../runtime/model/caller.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import type { Queryable } from "../../runtime/storage/database.js"

export interface LeaseRow {
  readonly bucket: number
  readonly runnerId: string | null
  readonly epoch: number
  readonly expiresAtMs: number
}

export const readLeases = async (db: Queryable): Promise<LeaseRow[]> => {
  const { rows } = await sql<{
    bucket: number
    runner_id: string | null
    epoch: number
    expires_at_ms: number
  }>`SELECT bucket, runner_id, epoch, expires_at_ms FROM akter.leases ORDER BY bucket`.execute(db)
  return rows.map((row) => ({
    bucket: row.bucket,
    runnerId: row.runner_id,
    epoch: row.epoch,
    expiresAtMs: row.expires_at_ms,
  }))
}

/** The database's clock now, in epoch milliseconds (no test offset). */
export const databaseNow = async (db: Queryable): Promise<number> => {
  const { rows } = await sql<{ now: number }>`SELECT akter.now_ms(0) AS now`.execute(db)
  return rows[0]!.now
}

/** Buckets per runner whose lease has not expired, by the database's clock. */
export const leaseHolders = async (db: Queryable): Promise<Map<string, number[]>> => {
  const now = await databaseNow(db)
  const holders = new Map<string, number[]>()
  for (const lease of await readLeases(db)) {
    if (lease.runnerId === null || lease.expiresAtMs <= now) continue
    const buckets = holders.get(lease.runnerId)
    if (buckets === undefined) holders.set(lease.runnerId, [lease.bucket])
    else buckets.push(lease.bucket)
  }
  return holders
}

/**
 * The first owner id `${prefix}-N` whose bucket is among `buckets`.
 *
 * @example
 * const ownerId = ownerIdInBuckets("order", new Set(holders.get(runnerId)), "Multi")
 */
export const ownerIdInBuckets = (
  prefix: string,
  buckets: ReadonlySet<number>,
  ownerType: string,
  tenant: string = DEFAULT_TENANT,
): string => {
  if (buckets.size === 0) throw new Error("no buckets to place an owner in")
  for (let n = 0; ; n += 1) {
    const ownerId = `${prefix}-${n}`
    if (buckets.has(placeOwner({ tenant, ownerType, ownerId }).bucket)) return ownerId
  }
}
