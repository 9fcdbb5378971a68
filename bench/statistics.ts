/**
 * The few statistics the benchmarks report: percentiles of latency samples, and the median with
 * its spread over repetitions, so every figure says how noisy it was.
 */

/** The `p`-th percentile (0–100) of `samples`, nearest-rank; NaN for no samples. */
export const percentile = (samples: readonly number[], p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!
}

export const median = (samples: readonly number[]): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** A figure over repetitions: its median and the range the repetitions spanned. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly runs: number
}

export const spreadOf = (values: readonly number[]): Spread => {
  const finite = values.filter((value) => Number.isFinite(value))
  return {
    median: median(finite),
    min: finite.length === 0 ? Number.NaN : Math.min(...finite),
    max: finite.length === 0 ? Number.NaN : Math.max(...finite),
    runs: finite.length,
  }
}

/** How far the repetitions spread around the median, in percent of it: (max − min) / median. */
export const relativeRange = (spread: Spread): number =>
  spread.median === 0 ? 0 : ((spread.max - spread.min) / Math.abs(spread.median)) * 100
