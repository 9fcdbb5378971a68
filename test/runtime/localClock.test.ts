/**
 * The process's sub-millisecond wall clock (storage/clock.ts `localNow`): it reads the wall clock to
 * a fraction of a millisecond, and follows the wall clock when the monotonic
 * clock that gives the fraction drifts from it — as it does by a few milliseconds an hour, which
 * made timers kept in memory fire early by the database's clock in a process that had run a while.
 * The drift is made here by moving `performance.now` against `Date.now`, both controlled.
 */
import { afterEach, expect, it, vi } from "vitest"
import { localNow } from "../../runtime/storage/clock.js"

afterEach(() => {
  vi.restoreAllMocks()
})

it("reads the wall clock to a fraction of a millisecond", () => {
  for (let reading = 0; reading < 1_000; reading++) {
    const before = Date.now()
    const now = localNow()
    const after = Date.now()
    expect(now).toBeGreaterThanOrEqual(before - 1)
    expect(now).toBeLessThan(after + 1)
  }
})

it("follows the wall clock when the monotonic clock drifts from it", () => {
  // Controlled clocks: the wall at 1,000,000.3 ms, the monotonic clock 40 ms ahead of its anchor.
  let wall = 1_000_000.3
  let monotonic = 5_000
  vi.spyOn(Date, "now").mockImplementation(() => Math.floor(wall))
  vi.spyOn(performance, "now").mockImplementation(() => monotonic)
  const advance = (wallMs: number, monotonicMs: number) => {
    wall += wallMs
    monotonic += monotonicMs
  }
  // Two windows of readings, 10 ms apart, the wall's fraction varying: the anchor settles.
  for (let step = 0; step < 250; step++) {
    advance(10.37, 10.37)
    localNow()
  }
  expect(Math.abs(localNow() - wall)).toBeLessThan(0.5)
  // The monotonic clock now runs 100 ppm fast (20 times a real one's drift here): after a minute
  // it is 6 ms ahead of the wall; the reading stays with the wall, ahead of it by at most the
  // drift of the two windows its anchor keeps (0.2 ms).
  for (let step = 0; step < 6_000; step++) {
    advance(10.37, 10.37 * 1.0001)
    localNow()
  }
  expect(monotonic - 5_000 - (wall - 1_000_000.3)).toBeGreaterThan(6)
  expect(Math.abs(localNow() - wall)).toBeLessThan(1)
  expect(localNow()).toBeLessThanOrEqual(wall + 0.25)
})
