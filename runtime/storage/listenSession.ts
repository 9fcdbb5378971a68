/**
 * The one LISTEN connection of a Postgres handle, kept alive by a supervisor: when the connection
 * dies (a restarted server, a dropped network), it reconnects with backoff, subscribes every channel
 * again, tells its listeners so they can catch up on what they missed, and checks that a
 * notification really arrives — a self-addressed NOTIFY sent through the pool, which a connection
 * pooler in transaction mode silently drops. Whether notifications work is a state its users read
 * (and are told of), so that a process without them polls faster instead of degrading in silence.
 */
import { randomUUID } from "node:crypto"
import pg from "pg"
import { timeoutDelay } from "./clock.js"
import type { NotificationStatus } from "./notificationStatus.js"

/** The channel of the self-addressed round trip. */
export const PROBE_CHANNEL = "akter_probe"
/** How long a self-addressed notification may take before notifications count as unavailable. */
export const PROBE_TIMEOUT_MS = 2000
/** The first pause before reconnecting; each next one doubles, up to `LAST_RECONNECT_MS`. */
const FIRST_RECONNECT_MS = 50
/** Short, so the session is back within about a second of the server. */
const LAST_RECONNECT_MS = 1000

type Subscriber = (payload: string) => void

export interface ListenSessionOptions {
  /** A new, unconnected client of the listen connection's server. */
  readonly makeClient: () => pg.Client
  /** Sends `NOTIFY channel, payload` the way the handle's writers do (through its pool). */
  readonly notify: (channel: string, payload: string) => Promise<unknown>
  /** Told when the session is lost and when it is back (with how long it was away). */
  readonly onSessionChange?: (change: { lost: unknown } | { backAfterMs: number }) => void
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, timeoutDelay(ms)))

export class ListenSession {
  private readonly channels = new Map<string, Set<Subscriber>>()
  private readonly restoredListeners = new Set<() => void>()
  private readonly statusListeners = new Set<(status: NotificationStatus) => void>()
  private client: pg.Client | undefined
  private supervisor: Promise<void> | undefined
  /** Resolved once the first connection attempt subscribed or failed. */
  private firstAttempt: Promise<void> | undefined
  private settleFirstAttempt: (() => void) | undefined
  private closed = false
  private probes = new Map<string, () => void>()
  private current: NotificationStatus = { state: "unknown" }

  constructor(private readonly options: ListenSessionOptions) {}

  get status(): NotificationStatus {
    return this.current
  }

  /**
   * Subscribes to `channel`. Resolves once the subscription is live or the first connection
   * attempt failed (then it is live as soon as the supervisor reconnects); never rejects.
   */
  async listen(channel: string, onPayload: Subscriber): Promise<() => Promise<void>> {
    let subscribers = this.channels.get(channel)
    const fresh = subscribers === undefined
    if (subscribers === undefined) {
      subscribers = new Set()
      this.channels.set(channel, subscribers)
    }
    subscribers.add(onPayload)
    this.start()
    if (fresh && this.client !== undefined) {
      // A failure here means the connection died: the supervisor subscribes again on reconnect.
      await this.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {})
    }
    await this.firstAttempt
    return async () => {
      subscribers.delete(onPayload)
      if (subscribers.size > 0) return
      this.channels.delete(channel)
      await this.client?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {})
    }
  }

  /** Called after every reconnect, once every channel is subscribed again: time to catch up. */
  onRestored(listener: () => void): () => void {
    this.restoredListeners.add(listener)
    return () => this.restoredListeners.delete(listener)
  }

  /** Called whenever the notification state changes. */
  onStatus(listener: (status: NotificationStatus) => void): () => void {
    this.statusListeners.add(listener)
    return () => this.statusListeners.delete(listener)
  }

  async close(): Promise<void> {
    this.closed = true
    const client = this.client
    this.client = undefined
    await client?.end().catch(() => {})
    this.settleFirstAttempt?.()
    await this.supervisor
  }

  private setStatus(status: NotificationStatus) {
    if (status.state === this.current.state && status.reason === this.current.reason) return
    this.current = status
    for (const listener of this.statusListeners) listener(status)
  }

  private start() {
    if (this.supervisor !== undefined || this.closed) return
    this.firstAttempt = new Promise<void>((resolve) => (this.settleFirstAttempt = resolve))
    this.supervisor = this.supervise()
  }

  /** Connects, subscribes, waits for the connection to end, and starts over until closed. */
  private async supervise(): Promise<void> {
    let delay = FIRST_RECONNECT_MS
    let lostAt: number | undefined
    let connectedBefore = false
    while (!this.closed) {
      const client = this.options.makeClient()
      const ended = new Promise<unknown>((resolve) => {
        client.on("error", resolve)
        client.once("end", () => resolve(new Error("listen connection ended")))
      })
      let cause: unknown
      try {
        await client.connect()
        client.on("notification", (message) => this.dispatch(message.channel, message.payload))
        for (const channel of [PROBE_CHANNEL, ...this.channels.keys()]) {
          await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
        }
        if (this.closed) {
          await client.end().catch(() => {})
          break
        }
        this.client = client
        delay = FIRST_RECONNECT_MS
        this.settleFirstAttempt?.()
        if (connectedBefore) {
          if (lostAt !== undefined) {
            this.options.onSessionChange?.({ backAfterMs: Date.now() - lostAt })
          }
          for (const listener of this.restoredListeners) listener()
        }
        connectedBefore = true
        lostAt = undefined
        void this.roundTrip()
        cause = await ended
      } catch (error) {
        cause = error
      }
      this.client = undefined
      client.removeAllListeners("notification")
      await client.end().catch(() => {})
      this.settleFirstAttempt?.()
      if (this.closed) break
      if (lostAt === undefined) {
        lostAt = Date.now()
        this.options.onSessionChange?.({ lost: cause })
      }
      await sleep(delay)
      delay = Math.min(delay * 2, LAST_RECONNECT_MS)
    }
  }

  private dispatch(channel: string, payload: string | undefined) {
    if (channel === PROBE_CHANNEL) {
      this.probes.get(payload ?? "")?.()
      return
    }
    for (const subscriber of this.channels.get(channel) ?? []) subscriber(payload ?? "")
  }

  /** Sends a notification to itself and sets the state by whether it arrives in time. */
  private async roundTrip(): Promise<void> {
    const token = randomUUID()
    const arrived = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), PROBE_TIMEOUT_MS)
      this.probes.set(token, () => {
        clearTimeout(timer)
        resolve(true)
      })
    })
    try {
      await this.options.notify(PROBE_CHANNEL, token)
    } catch {
      // The database went away again: the next reconnect tries anew.
      this.probes.delete(token)
      return
    }
    const ok = await arrived
    this.probes.delete(token)
    if (this.closed || this.client === undefined) return
    this.setStatus(
      ok
        ? { state: "working" }
        : {
            state: "unavailable",
            reason: `a self-addressed NOTIFY did not arrive within ${PROBE_TIMEOUT_MS} ms (a connection pooler in transaction mode drops notifications)`,
          },
    )
  }
}
