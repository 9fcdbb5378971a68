/**
 * The pure tick arithmetic: the ticks due in a window for an interval (counted, aligned to the
 * epoch) and for a cron expression (walked), keeping the newest 1,000 and counting the rest; and
 * which of the due ticks each catch-up policy starts. Expected values are worked out by hand.
 */
import { describe, expect, it } from "vitest"
import {
  MAX_CATCH_UP_TICKS,
  ticksBetween,
  ticksToStart,
  type CanonicalSchedule,
} from "../../runtime/model/schedule.js"

const base: CanonicalSchedule = {
  workflow: "w",
  cron: null,
  timeZone: "UTC",
  everyMs: null,
  ownerId: "o",
  input: null,
  overlap: "skip",
  catchUp: "latest",
}
const at = (iso: string) => Date.parse(iso)

describe("schedule ticks", () => {
  it("an interval's due ticks fall on its multiples, the window's ends included", () => {
    const every = { ...base, everyMs: 60_000 }
    expect(ticksBetween(every, 60_000, 180_000)).toEqual({
      ticks: [60_000, 120_000, 180_000],
      dropped: 0,
    })
    expect(ticksBetween(every, 60_001, 179_999)).toEqual({ ticks: [120_000], dropped: 0 })
    expect(ticksBetween(every, 60_001, 119_999)).toEqual({ ticks: [], dropped: 0 })
  })

  it("a one-second interval after thirty days down keeps the newest 1,000 ticks and counts the rest", () => {
    const from = at("2028-01-01T00:00:00.000Z")
    const now = from + 30 * 86_400_000
    const { ticks, dropped } = ticksBetween({ ...base, everyMs: 1000 }, from, now)
    expect(ticks).toHaveLength(MAX_CATCH_UP_TICKS)
    expect(ticks.at(-1)).toBe(now)
    expect(ticks[0]).toBe(now - 999_000)
    expect(dropped).toBe(30 * 86_400 + 1 - 1000)
  })

  it("a cron expression's due ticks are walked, and trimmed to the newest 1,000", () => {
    const hourly = { ...base, cron: "0 * * * *" }
    expect(
      ticksBetween(hourly, at("2028-01-01T00:30:00.000Z"), at("2028-01-01T03:00:00.000Z")).ticks,
    ).toEqual([
      at("2028-01-01T01:00:00.000Z"),
      at("2028-01-01T02:00:00.000Z"),
      at("2028-01-01T03:00:00.000Z"),
    ])
    const minutely = { ...base, cron: "* * * * *" }
    const { ticks, dropped } = ticksBetween(
      minutely,
      at("2028-01-01T00:00:00.000Z"),
      at("2028-01-02T00:00:00.000Z"),
    )
    expect(ticks).toHaveLength(MAX_CATCH_UP_TICKS)
    expect(ticks.at(-1)).toBe(at("2028-01-02T00:00:00.000Z"))
    expect(dropped).toBe(24 * 60 + 1 - 1000)
  })

  it("catch-up policies keep all, the newest, or only a newest that is at most a minute late", () => {
    const due = [1_000_000, 2_000_000, 3_000_000]
    expect(ticksToStart(due, 3_030_000, "all")).toEqual(due)
    expect(ticksToStart(due, 3_030_000, "latest")).toEqual([3_000_000])
    expect(ticksToStart(due, 3_030_000, "none")).toEqual([3_000_000])
    expect(ticksToStart(due, 3_061_000, "none")).toEqual([])
    expect(ticksToStart([], 3_061_000, "all")).toEqual([])
  })
})
