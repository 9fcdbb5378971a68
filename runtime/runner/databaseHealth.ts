/**
 * A runner's view of whether its database answers: it logs one line when the database is lost
 * (a connection-class failure, or a heartbeat with no answer for longer than the heartbeat
 * interval) and one when it is back, with how long it was away, and tells the runner so it can pick
 * up what failed meanwhile. Everything in between stays quiet: the outage was said once.
 */
import type { Logger } from "../log.js"
import { isConnectionError } from "../storage/connectionErrors.js"

export class DatabaseHealth {
  private lostAt: number | undefined
  private readonly backListeners = new Set<(downMs: number) => void>()

  constructor(private readonly log: Logger) {}

  /** Whether the database is currently counted as lost. */
  get lost(): boolean {
    return this.lostAt !== undefined
  }

  /** Called once each time the database is back, with how long it was lost. */
  onBack(listener: (downMs: number) => void): () => void {
    this.backListeners.add(listener)
    return () => this.backListeners.delete(listener)
  }

  /**
   * A statement failed: true when the failure was connection-class (then the first one of an
   * outage is logged, and the caller should stay quiet about it).
   */
  failed(error: unknown): boolean {
    if (!isConnectionError(error)) return false
    this.markLost(error)
    return true
  }

  /** The database did not answer in time (a paused server or a dead network). */
  silent(waitedMs: number): void {
    this.markLost(new Error(`no answer for ${waitedMs} ms`))
  }

  /** A statement succeeded: if the database was lost, it is back. */
  answered(): void {
    if (this.lostAt === undefined) return
    const downMs = Date.now() - this.lostAt
    this.lostAt = undefined
    this.log.info("database back", { downMs })
    for (const listener of this.backListeners) listener(downMs)
  }

  private markLost(cause: unknown) {
    if (this.lostAt !== undefined) return
    this.lostAt = Date.now()
    this.log.warn("database lost; retrying until it is back", {
      error: cause instanceof Error ? cause.message : String(cause),
    })
  }
}
