/**
 * A progress line for work that is usually instant but may not be (connecting to a database across
 * a network, reading a large one): written to stderr only once a stage has taken longer than a
 * moment, so quick runs print nothing and slow ones say what they are waiting for.
 */

export interface Progress {
  /** A stage begins; its message is printed if it is still running after the delay. */
  stage(message: string): void
  /** The work is over: nothing more is printed. */
  done(): void
}

export const PROGRESS_DELAY_MS = 750

/**
 * @example
 * const progress = slowProgress("check")
 * progress.stage("connecting to postgres://db.internal/app")
 * await work()
 * progress.done()
 */
export const slowProgress = (
  command: string,
  write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  delayMs: number = PROGRESS_DELAY_MS,
): Progress => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const stop = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
  }
  return {
    stage: (message) => {
      stop()
      timer = setTimeout(() => write(`akter ${command}: ${message}…`), delayMs)
      timer.unref()
    },
    done: stop,
  }
}
