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
/**
 * An execution a caller elsewhere awaits has finished. The payload is its id, followed by a space
 * and its result in base64 when the finish could announce it (engine/executionStore.ts
 * `announcedResult`), so the caller need not read it back. Execution ids hold no space
 * (model/executionId.ts).
 */
export const FINISHED_CHANNEL = "akter_finished"

/**
 * The largest result a finish notification carries, in bytes: its base64 and the longest
 * execution id stay well inside Postgres's payload limit (under 8000 bytes).
 */
export const MAX_ANNOUNCED_RESULT_BYTES = 4096

/**
 * The finish notification's payload for a row with `execution_id` and `announced_result` (a finish's
 * `RETURNING` column, engine/executionStore.ts `announcedResult`: the result, when it may ride).
 * (Postgres's base64 breaks lines every 76 characters: they are taken out.)
 */
export const finishedPayloadOfRow: RawBuilder<string> = sql<string>`execution_id || COALESCE(' ' ||
  translate(encode(announced_result, 'base64'), chr(10), ''), '')`

/** What a finish notification says: the execution, and its result when the finish announced it. */
export interface FinishedNotice {
  readonly executionId: string
  readonly result?: Buffer
}

/** Reads a finish notification's payload (one without a result, as earlier versions send, too). */
export const parseFinishedPayload = (payload: string): FinishedNotice => {
  const space = payload.indexOf(" ")
  return space < 0
    ? { executionId: payload }
    : {
        executionId: payload.slice(0, space),
        result: Buffer.from(payload.slice(space + 1), "base64"),
      }
}
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
