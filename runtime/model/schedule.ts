/**
 * Schedules: a manifest's declaration that starts one of its workflows on a cron expression (read in
 * an IANA time zone) or a fixed interval, with the owner id and input each start takes. This module
 * is the pure part: the declaration, its canonical form, the tick times it implies, which of the due
 * ticks a catch-up policy keeps, and the command id (hence execution key) of a tick. Cron
 * expressions are read by croner (five fields, no seconds); intervals are aligned to the Unix epoch,
 * so every runner computes the same ticks without storing an anchor.
 */
import { Cron } from "croner"
import { hashOf } from "./hash.js"

/** What a tick does while the schedule's previous execution is still open. */
export const OVERLAP_POLICIES = ["skip", "allow", "queue"] as const
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number]

/** Which ticks that passed while no runner ticked the schedule are started. */
export const CATCH_UP_POLICIES = ["latest", "all", "none"] as const
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number]

export interface ScheduleDecl {
  readonly description?: string
  /** A workflow of the same manifest. */
  readonly workflow: string
  /** Exactly one of `cron` and `everyMs` is set. */
  readonly cron: string | null
  /** The IANA time zone the cron expression is read in (`UTC` when not written). */
  readonly timeZone: string
  readonly everyMs: number | null
  readonly ownerId: string
  /** The start input, checked against the workflow's input type; `null` when it takes none. */
  readonly input: unknown
  readonly overlap: OverlapPolicy
  readonly catchUp: CatchUpPolicy
}

/** A schedule as the lock file and the hashes see it: the declaration without its description. */
export type CanonicalSchedule = Omit<ScheduleDecl, "description">

/** Defaults of a declaration's optional fields. */
export const DEFAULT_TIME_ZONE = "UTC"
export const DEFAULT_OVERLAP: OverlapPolicy = "skip"
export const DEFAULT_CATCH_UP: CatchUpPolicy = "latest"

/** The shortest interval a schedule may declare. */
export const MIN_INTERVAL_MS = 1_000

/**
 * A due tick at most this late is on time; an older one was missed (its runners were down) and is
 * started only as the catch-up policy says.
 */
export const ON_TIME_MS = 60_000

/** The most missed ticks one catch-up (`all`) starts; older ones are dropped. */
export const MAX_CATCH_UP_TICKS = 1_000

export const canonicalSchedule = (decl: ScheduleDecl): CanonicalSchedule => ({
  workflow: decl.workflow,
  cron: decl.cron,
  timeZone: decl.timeZone,
  everyMs: decl.everyMs,
  ownerId: decl.ownerId,
  input: decl.input,
  overlap: decl.overlap,
  catchUp: decl.catchUp,
})

/**
 * The hash of what decides tick times (a schedule row's `definition`): a change restarts the
 * schedule's cursor from now.
 */
export const timingOf = (schedule: CanonicalSchedule): string =>
  hashOf({ cron: schedule.cron, timeZone: schedule.timeZone, everyMs: schedule.everyMs })

/**
 * Why a cron expression or time zone cannot be read, or undefined when both can.
 *
 * @example
 * cronProblem("61 * * * *", "UTC") // "CronPattern: Invalid value for minute: 61"
 */
export const cronProblem = (cron: string, timeZone: string): string | undefined => {
  const zone = timeZoneProblem(timeZone)
  if (zone !== undefined) return zone
  try {
    new Cron(cron, { mode: "5-part", timezone: timeZone, paused: true })
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

/** Why `timeZone` is not an IANA time zone this Node knows, or undefined. */
export const timeZoneProblem = (timeZone: string): string | undefined => {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone })
    return undefined
  } catch {
    return `"${timeZone}" is not an IANA time zone`
  }
}

/** Cron objects are built once per schedule. */
const crons = new WeakMap<CanonicalSchedule, Cron>()

const cronOf = (schedule: CanonicalSchedule & { cron: string }): Cron => {
  const known = crons.get(schedule)
  if (known !== undefined) return known
  const cron = new Cron(schedule.cron, {
    mode: "5-part",
    timezone: schedule.timeZone,
    paused: true,
  })
  crons.set(schedule, cron)
  return cron
}

/**
 * The first tick strictly after `afterMs` (epoch milliseconds), or null when the expression never
 * fires again.
 *
 * @example
 * nextTickAfter({ ...schedule, cron: null, everyMs: 60_000 }, 90_000) // 120_000
 */
export const nextTickAfter = (schedule: CanonicalSchedule, afterMs: number): number | null => {
  if (schedule.everyMs !== null) {
    return (Math.floor(afterMs / schedule.everyMs) + 1) * schedule.everyMs
  }
  if (schedule.cron === null) return null
  const next = cronOf({ ...schedule, cron: schedule.cron }).nextRun(new Date(afterMs))
  return next === null ? null : next.getTime()
}

/**
 * The ticks in `[fromMs, nowMs]`, oldest first: at most `MAX_CATCH_UP_TICKS` of the newest ones
 * (the older ones are counted in `dropped`).
 */
export const ticksBetween = (
  schedule: CanonicalSchedule,
  fromMs: number,
  nowMs: number,
): { readonly ticks: readonly number[]; readonly dropped: number } => {
  const first = nextTickAfter(schedule, fromMs - 1)
  if (first === null || first > nowMs) return { ticks: [], dropped: 0 }
  if (schedule.everyMs !== null) {
    // Counted, not walked: a one-second interval after a month down is millions of ticks.
    const count = Math.floor((nowMs - first) / schedule.everyMs) + 1
    const kept = Math.min(count, MAX_CATCH_UP_TICKS)
    const ticks = Array.from(
      { length: kept },
      (_, index) => first + (count - kept + index) * schedule.everyMs!,
    )
    return { ticks, dropped: count - kept }
  }
  let ticks: number[] = []
  let dropped = 0
  for (let tick: number | null = first; tick !== null && tick <= nowMs;) {
    ticks.push(tick)
    // Trimmed in halves, so keeping the newest costs amortized constant time per tick.
    if (ticks.length >= 2 * MAX_CATCH_UP_TICKS) {
      dropped += ticks.length - MAX_CATCH_UP_TICKS
      ticks = ticks.slice(-MAX_CATCH_UP_TICKS)
    }
    tick = nextTickAfter(schedule, tick)
  }
  if (ticks.length > MAX_CATCH_UP_TICKS) {
    dropped += ticks.length - MAX_CATCH_UP_TICKS
    ticks = ticks.slice(-MAX_CATCH_UP_TICKS)
  }
  return { ticks, dropped }
}

/**
 * Of the due ticks (oldest first), those the catch-up policy starts: every one (`all`), the newest
 * (`latest`), or only a newest one that is on time (`none`). A due tick with a newer one due after
 * it was missed by definition; the newest is missed when it is over `ON_TIME_MS` late.
 */
export const ticksToStart = (
  due: readonly number[],
  nowMs: number,
  policy: CatchUpPolicy,
): readonly number[] => {
  const newest = due.at(-1)
  if (newest === undefined) return []
  switch (policy) {
    case "all":
      return due
    case "latest":
      return [newest]
    case "none":
      return nowMs - newest <= ON_TIME_MS ? [newest] : []
  }
}

/** The command id of a schedule's tick, which is the execution key of the execution it starts. */
export const scheduleCommandId = (schedule: string, tickMs: number): string =>
  `schedule:${schedule}:${new Date(tickMs).toISOString()}`

const SCHEDULE_COMMAND =
  /^schedule:([A-Za-z][A-Za-z0-9]*):(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)$/

/**
 * The schedule and tick an execution key names, when a schedule's tick started it.
 *
 * @example
 * scheduledBy("schedule:nightly:2027-03-14T07:00:00.000Z") // { schedule: "nightly", tick: "2027-03-14T07:00:00.000Z" }
 */
export const scheduledBy = (
  key: string,
): { readonly schedule: string; readonly tick: string } | undefined => {
  const match = SCHEDULE_COMMAND.exec(key)
  return match === null ? undefined : { schedule: match[1]!, tick: match[2]! }
}
