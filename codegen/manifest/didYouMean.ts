/**
 * Suggestions for misspelt names: the closest candidate by edit distance, when it is close enough
 * to be a plausible typo rather than a different word.
 */

/** Levenshtein distance, with the usual single-row table. */
export const editDistance = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!
      row[j] = Math.min(
        above + 1,
        row[j - 1]! + 1,
        diagonal + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1),
      )
      diagonal = above
    }
  }
  return row[b.length]!
}

/**
 * The candidate closest to `name`, if few enough letters differ: one for names of up to three
 * letters, else two or a third of the letters, whichever is more.
 * Case differences are free, so `Output` suggests `output`.
 *
 * @example
 * closestName("ouput", ["input", "output"]) // "output"
 * closestName("zzz", ["input", "output"])   // undefined
 */
export const closestName = (name: string, candidates: Iterable<string>): string | undefined => {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    if (candidate === name) continue
    const distance = editDistance(name, candidate)
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  const allowed = name.length <= 3 ? 1 : Math.max(2, Math.floor(name.length / 3))
  return best !== undefined && bestDistance <= allowed ? best : undefined
}

/** `did you mean "output"?`, or undefined when nothing is close. */
export const didYouMean = (name: string, candidates: Iterable<string>): string | undefined => {
  const closest = closestName(name, candidates)
  return closest === undefined ? undefined : `did you mean "${closest}"?`
}
