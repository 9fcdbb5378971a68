/**
 * The notifications other processes hear (Postgres only): their channels, and the one place a
 * `pg_notify` is written. A notification rides in the statement whose commit it announces —
 * Postgres delivers it only when that transaction commits, and never when it rolls back — so a
 * listener never hears of work that is not there.
 */
import { sql, type RawBuilder } from "kysely"
import type { Queryable } from "../storage/database.js"

/**
 * A bucket has work due now; the payload is the bucket's number, which only the runner leasing the
 * bucket polls for, or `ANY_BUCKET`.
 */
export const WAKE_CHANNEL = "akter_wake"
/**
 * The wake payload every runner polls for: the work due may be taken outside its bucket (a timer
 * wanting a manifest only some runners serve).
 */
export const ANY_BUCKET = "*"

/**
 * The wake payload of a poked timer row with columns `bucket` and `wanted` (it wants a manifest):
 * its bucket, or `ANY_BUCKET` when a runner elsewhere may be the one to take it.
 */
export const wakePayloadOfRow: RawBuilder<string> = sql<string>`CASE WHEN wanted THEN ${ANY_BUCKET}
  ELSE bucket::text END`

/** Whether a wake with this payload is for a runner serving the buckets `serves` accepts. */
export const wakeIsFor = (payload: string, serves: (bucket: number) => boolean): boolean => {
  if (payload === ANY_BUCKET) return true
  const bucket = Number(payload)
  // A payload this version does not know: poll, rather than miss work.
  return !Number.isInteger(bucket) || serves(bucket)
}
/** An execution a caller elsewhere awaits has finished; the payload is its id. */
export const FINISHED_CHANNEL = "akter_finished"
/** A runner gave its buckets back; the payload is its id. */
export const LEASES_CHANNEL = "akter_leases"

/**
 * `SELECT pg_notify(channel, payload) [FROM from] WHERE when`: one notification for each row it
 * selects. As a scalar column (`(${notification(…)}) AS notified`) it selects at most one row; as a
 * statement part it may notify once per row of `from`.
 */
export const notification = (
  channel: string,
  payload: string | RawBuilder<unknown>,
  rows: { readonly from?: RawBuilder<unknown>; readonly when: RawBuilder<boolean> },
): RawBuilder<unknown> =>
  sql`SELECT pg_notify(${channel}, ${payload})${
    rows.from === undefined ? sql`` : sql` FROM ${rows.from}`
  } WHERE ${rows.when}`

/**
 * A final-select column, `notified`, that notifies once when `when` holds (e.g. the part that
 * inserted the execution has a row), or once for the one row of `from` that passes `when`.
 */
export const notifyColumn = (
  channel: string,
  payload: string | RawBuilder<unknown>,
  rows: { readonly from?: RawBuilder<unknown>; readonly when: RawBuilder<boolean> },
): RawBuilder<unknown> => sql`(${notification(channel, payload, rows)}) AS notified`

/** A notification of its own: sent when the statement (autocommitted) commits. */
export const sendNotification = async (
  db: Queryable,
  channel: string,
  payload: string,
): Promise<void> => {
  await notification(channel, payload, { when: sql`true` }).execute(db)
}
