/**
 * Time is the database's: every timestamp akter writes comes from `akter.now_ms(offset)`, so runners
 * on different machines agree. The offset is the runtime's controllable clock — zero in production,
 * advanced by `akter/testing` — and is passed with every statement rather than stored anywhere.
 */
import { sql, type RawBuilder } from "kysely"
import type { Queryable } from "./database.js"

export interface DatabaseClock {
  /** Added to the database's clock in every statement; only tests move it. */
  offsetMs: number
  /**
   * Database time minus local time (`localNow()`), to a fraction of a millisecond, measured at
   * open: lets a runner estimate `now` without a query.
   */
  skewMs: number
  /**
   * How far `skewMs` may be off: half the round trip of the reading it came from. Something
   * done from memory at a due time of the database's clock waits this much longer, so it is never
   * early.
   */
  skewErrorMs: number
}

export const makeClock = (): DatabaseClock => ({
  offsetMs: 0,
  skewMs: 0,
  skewErrorMs: 0,
})

/** How long one window of `localNow`'s anchor readings lasts. */
const ANCHOR_WINDOW_MS = 1_000
/** The wall clock minus the monotonic clock: the most of this window's readings and the last's. */
let anchorThisWindow = Number.NEGATIVE_INFINITY
let anchorLastWindow = Number.NEGATIVE_INFINITY
let windowStartedAt = Number.NEGATIVE_INFINITY

/**
 * This process's wall clock in epoch milliseconds, to a fraction of one (`Date.now()` has whole
 * ones, which would cost up to a millisecond of margin at each reading). The monotonic clock gives
 * the fraction; it drifts from the wall clock the database's follows (a few milliseconds an hour
 * here), so its anchor is re-read at every call: `Date.now() - performance.now()` is the true
 * anchor less the fraction `Date.now()` dropped, so the most of the readings of the last second or
 * two is the anchor to a fraction of a millisecond (ahead of it by at most two seconds' drift,
 * some hundredths of a millisecond), and follows the drift.
 */
export const localNow = (): number => {
  const monotonic = performance.now()
  const reading = Date.now() - monotonic
  if (monotonic - windowStartedAt >= ANCHOR_WINDOW_MS) {
    anchorLastWindow = anchorThisWindow
    anchorThisWindow = reading
    windowStartedAt = monotonic
  } else if (reading > anchorThisWindow) anchorThisWindow = reading
  return monotonic + Math.max(anchorThisWindow, anchorLastWindow)
}

/** Readings of the database's clock at open; the one with the shortest round trip is kept. */
const SKEW_READINGS = 3

/** The database's `now` in epoch milliseconds, as an SQL expression. */
export const nowMs = (clock: DatabaseClock): RawBuilder<number> =>
  sql<number>`akter.now_ms(${clock.offsetMs}::bigint)`

/**
 * Measures the skew between this process and the database: of a few readings, the one with the
 * shortest round trip, whose midpoint is the tightest estimate.
 */
export const measureSkew = async (db: Queryable, clock: DatabaseClock): Promise<void> => {
  let best: { skewMs: number; roundTripMs: number } | undefined
  for (let reading = 0; reading < SKEW_READINGS; reading++) {
    const before = localNow()
    // The database's clock to the microsecond (`akter.now_ms` rounds to whole milliseconds).
    const { rows } = await sql<{
      now: number
    }>`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now`.execute(db)
    const after = localNow()
    const roundTripMs = after - before
    if (best === undefined || roundTripMs < best.roundTripMs) {
      best = { skewMs: Number(rows[0]!.now) - (before + after) / 2, roundTripMs }
    }
  }
  clock.skewMs = best!.skewMs
  clock.skewErrorMs = best!.roundTripMs / 2
}

/**
 * The local time (`localNow()`) by which the database's clock surely reads `dueAtMs` (offset
 * included): the estimate, plus how far it may be off. `akter.now_ms` rounds, so it reads `dueAtMs`
 * half a millisecond sooner still.
 */
export const localTimeWhenDue = (clock: DatabaseClock, dueAtMs: number): number =>
  dueAtMs - clock.offsetMs - clock.skewMs + clock.skewErrorMs

/** The local estimate of the database's `now` (offset included), good to a few milliseconds. */
export const estimatedNow = (clock: DatabaseClock): number =>
  Date.now() + Math.round(clock.skewMs) + clock.offsetMs

/**
 * The wall-clock millisecond (`Date.now()`) from which `estimatedNow` reads `dueAtMs`: what a pass
 * compares its due times with, so a pass resumed then goes on at once rather than parking for
 * the rest of a millisecond.
 */
export const wallTimeWhenEstimated = (clock: DatabaseClock, dueAtMs: number): number =>
  dueAtMs - Math.round(clock.skewMs) - clock.offsetMs

/** The longest delay `setTimeout` honours; Node fires a longer one at once (a warning, then 1 ms). */
export const MAX_TIMEOUT_MS = 2_147_483_647

/**
 * A `setTimeout` delay for something due `ms` from now: never negative, and cut to the longest
 * delay Node takes, so a 30-day sleep wakes its waiter after 24.8 days to look again rather than
 * at once, over and over.
 */
export const timeoutDelay = (ms: number): number => Math.min(MAX_TIMEOUT_MS, Math.max(0, ms))
