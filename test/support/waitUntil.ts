/**
 * Polling for a condition instead of sleeping a fixed time: multi-process tests run on loaded
 * machines, where any fixed delay is either too short or wastes time.
 */

export interface WaitOptions {
  /** Give up after this long (default 30 s). */
  readonly timeoutMs?: number
  /** Pause between probes (default 20 ms). */
  readonly intervalMs?: number
  /** Extra text for the failure message (e.g. the runners' output), computed only on failure. */
  readonly details?: () => string
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Probes until `probe` returns something other than `undefined` or `false`, and returns it.
 * Rejects naming `what` once the time is up.
 *
 * @example
 * const row = await waitUntil("the execution suspends", async () => {
 *   const found = await readRow()
 *   return found?.status === "suspended" ? found : undefined
 * })
 */
export const waitUntil = async <A>(
  what: string,
  probe: () => A | undefined | false | Promise<A | undefined | false>,
  options: WaitOptions = {},
): Promise<A> => {
  const timeoutMs = options.timeoutMs ?? 30_000
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) {
      const details = options.details?.() ?? ""
      throw new Error(
        `${what}: not reached within ${timeoutMs} ms${details === "" ? "" : `\n${details}`}`,
      )
    }
    await sleep(options.intervalMs ?? 20)
  }
}
