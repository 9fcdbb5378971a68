/**
 * How a client call meets a database that is away. A call that may be repeated without effect (a
 * start or emit under its command id, a status or result read, an interrupt, an attach's reads) is
 * retried with backoff while its failures are connection-class; every attempt is raced against the
 * call's deadline, so a database that hangs (a paused server, a dead network) costs the caller its
 * timeout and no more. When the retries or the time run out, the call fails with one
 * `DatabaseUnavailable` carrying the last cause — never a raw driver error.
 */
import { DatabaseUnavailable } from "../errors.js"
import { isConnectionError, isTransientConflict } from "../storage/connectionErrors.js"
import { timeoutDelay } from "../storage/clock.js"

/** The first pause before a retry; each next one doubles, up to `LAST_BACKOFF_MS`. */
const FIRST_BACKOFF_MS = 50
const LAST_BACKOFF_MS = 1000

/** The default bound on how long a client call waits for an unavailable database. */
export const DEFAULT_CALL_TIMEOUT_MS = 10_000

/** Thrown by `raceDeadline` when the time ran out first. */
class NoAnswer extends Error {
  constructor(readonly waitedMs: number) {
    super(`no answer within ${waitedMs} ms`)
  }
}

const sleep = (ms: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, timeoutDelay(Math.max(0, ms))))

/**
 * `work`'s outcome, or `NoAnswer` once `ms` have passed. A late outcome of `work` is dropped (and
 * its rejection handled): the statement may still complete on the server, which is why only
 * idempotent calls come here.
 */
export const raceDeadline = <A>(work: Promise<A>, ms: number): Promise<A> => {
  if (!Number.isFinite(ms)) return work
  work.catch(() => {})
  return new Promise<A>((resolve, reject) => {
    const timer = setTimeout(() => reject(new NoAnswer(Math.round(ms))), timeoutDelay(ms))
    work.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

export interface CallBounds {
  /** The default bound on waiting for the database (`callTimeout` of createAkter). */
  readonly callTimeoutMs: number
  /** The caller's own deadline (local epoch ms), when it is sooner. */
  readonly deadline?: number | undefined
  /**
   * The failure when the caller's deadline cut short a statement outstanding for less than
   * `SILENT_MS`, with no connection failure before it: the database was answering, the caller's
   * time was simply up (`result`'s ResultTimeout).
   */
  readonly onDeadline?: (() => Error) | undefined
}

/** A statement unanswered this long is a silent database, not a slow answer. */
export const SILENT_MS = 1000

/**
 * Runs an idempotent database call, retrying connection-class failures with backoff until the
 * deadline (the caller's, or `callTimeoutMs` from now, whichever is sooner); then fails with
 * `DatabaseUnavailable`. A statement aborted by a conflict (`isTransientConflict`) is retried
 * the same way while time is left, then its error passes through. Other failures pass through at
 * once.
 *
 * @example
 * const status = await idempotentCall("status", bounds, () => readStatus(internals, workflow, execution))
 */
export const idempotentCall = async <A>(
  operation: string,
  bounds: CallBounds,
  call: () => Promise<A>,
): Promise<A> => {
  const started = Date.now()
  const deadline = Math.min(bounds.deadline ?? Infinity, started + bounds.callTimeoutMs)
  let backoff = FIRST_BACKOFF_MS
  /** The last connection-class failure: the cause to report if a retry then only ran out of time. */
  let refused: unknown
  for (;;) {
    const sent = Date.now()
    try {
      return await raceDeadline(call(), deadline - sent)
    } catch (error) {
      if (error instanceof NoAnswer) {
        if (
          bounds.onDeadline !== undefined &&
          refused === undefined &&
          Date.now() - sent < SILENT_MS
        ) {
          throw bounds.onDeadline()
        }
        throw new DatabaseUnavailable(operation, Date.now() - started, refused ?? error)
      }
      const conflict = isTransientConflict(error)
      if (!conflict && !isConnectionError(error)) throw error
      if (!conflict) refused = error
      const left = deadline - Date.now()
      if (left <= FIRST_BACKOFF_MS) {
        if (conflict) throw error
        throw new DatabaseUnavailable(operation, Date.now() - started, error)
      }
      await sleep(Math.min(backoff, left - FIRST_BACKOFF_MS))
      backoff = Math.min(backoff * 2, LAST_BACKOFF_MS)
    }
  }
}
