/**
 * Durations in manifests: an integer and a unit, `10ms`, `1s`, `5m`, `2h`, `1d`.
 */

/** The written form; the value must also be > 0 and at most `MAX_DURATION_MS`. */
export const DURATION_FORMAT = /^[0-9]+(ms|s|m|h|d)$/

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** Ten years: longer waits are almost certainly a unit mistake. */
export const MAX_DURATION_MS = 3650 * UNIT_MS.d

export const DURATION_HINT =
  "write an integer followed by a unit: ms, s, m, h or d (e.g. 500ms, 30s, 5m, 2h, 1d), at most 3650d"

/**
 * Milliseconds of a duration, or a reason it is not one.
 *
 * @example
 * parseDuration("5m")   // { ms: 300000 }
 * parseDuration("0s")   // { problem: "a duration must be longer than zero" }
 */
export const parseDuration = (text: string): { ms: number } | { problem: string } => {
  const match = DURATION_FORMAT.exec(text)
  if (match === null) return { problem: `"${text}" is not a duration` }
  const unit = match[1] as keyof typeof UNIT_MS
  const amount = Number(text.slice(0, text.length - unit.length))
  const ms = amount * UNIT_MS[unit]
  if (ms <= 0) return { problem: "a duration must be longer than zero" }
  if (ms > MAX_DURATION_MS) return { problem: `"${text}" is longer than 3650d` }
  return { ms }
}
