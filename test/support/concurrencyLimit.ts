/**
 * At most `n` multi-process scenarios at once: each costs runner processes and database
 * connections, and a small machine runs a few well rather than many badly.
 *
 * @example
 * const slot = limitConcurrency(3)
 * await Promise.all(cases.map((c) => slot(() => runScenario(c))))
 */
export const limitConcurrency = (n: number) => {
  let running = 0
  const queue: Array<() => void> = []
  return async <A>(work: () => Promise<A>): Promise<A> => {
    if (running >= n) await new Promise<void>((resolve) => queue.push(resolve))
    running += 1
    try {
      return await work()
    } finally {
      running -= 1
      queue.shift()?.()
    }
  }
}
