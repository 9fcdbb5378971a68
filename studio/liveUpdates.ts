/**
 * Live pages without a polling storm: one hub per studio, whatever the number of open tabs. The
 * hub holds one database listener (LISTEN on the runners' wake channel, which starts, emits and
 * interrupts notify on Postgres) and, while at least one tab listens, reads one condensed
 * fingerprint per second — of the executions the open execution pages show (by primary key, in
 * one statement) and of the lists (studioQueries.ts `listingStamp`). A notification reads at
 * once. Each tab gets a server-sent `change` event, carrying nothing of what changed, only when
 * what it shows changed, and then fetches its page again.
 */
import { internalsOf, type Akter } from "../runtime/akter.js"
import { InvalidExecutionId } from "../runtime/errors.js"
import { decodeExecutionId } from "../runtime/model/executionId.js"
import { placeOwner } from "../runtime/owners/routing.js"
import { WAKE_CHANNEL } from "../runtime/outbox/notifications.js"
import { executionFingerprints, listingStamp } from "./studioQueries.js"

interface Subscriber {
  /** An execution id, or undefined for a list page. */
  readonly watch: string | undefined
  last: string | undefined
  readonly send: (event: string) => void
}

const KEEPALIVE_MS = 15_000

export class LiveHub {
  private readonly subscribers = new Set<Subscriber>()
  private timer: ReturnType<typeof setInterval> | undefined
  private keepalive: ReturnType<typeof setInterval> | undefined
  private stopListening: Promise<() => Promise<void>> | undefined
  private reading: Promise<void> | undefined
  private again = false
  private closed = false

  constructor(
    private readonly akter: Akter,
    private readonly intervalMs: number,
  ) {}

  /** How many tabs listen (the browser tests read it to prove one listener serves them all). */
  get size(): number {
    return this.subscribers.size
  }

  /** A response streaming `change` events for a page watching `watch` (an execution id, or a list). */
  subscribe(watch: string | undefined, signal: AbortSignal | undefined): Response {
    const encoder = new TextEncoder()
    let subscriber: Subscriber | undefined
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        subscriber = {
          watch,
          last: undefined,
          send: (text) => {
            try {
              controller.enqueue(encoder.encode(text))
            } catch {
              this.unsubscribe(subscriber!)
            }
          },
        }
        subscriber.send(`retry: 2000\n: connected\n\n`)
        this.subscribers.add(subscriber)
        this.start()
        signal?.addEventListener("abort", () => {
          this.unsubscribe(subscriber!)
          try {
            controller.close()
          } catch {
            // already closed
          }
        })
      },
      cancel: () => {
        if (subscriber !== undefined) this.unsubscribe(subscriber)
      },
    })
    return new Response(stream, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
      },
    })
  }

  async close(): Promise<void> {
    this.closed = true
    for (const subscriber of this.subscribers) this.unsubscribe(subscriber)
    this.stop()
    await this.reading
  }

  private unsubscribe(subscriber: Subscriber): void {
    this.subscribers.delete(subscriber)
    if (this.subscribers.size === 0) this.stop()
  }

  private start(): void {
    if (this.timer !== undefined || this.closed) return
    this.timer = setInterval(() => this.read(), this.intervalMs)
    this.keepalive = setInterval(() => {
      for (const subscriber of this.subscribers) subscriber.send(": keepalive\n\n")
    }, KEEPALIVE_MS)
    const storage = internalsOf(this.akter).storage
    this.stopListening = storage.listen(WAKE_CHANNEL, () => this.read()).catch(() => async () => {})
    this.read()
  }

  private stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    if (this.keepalive !== undefined) clearInterval(this.keepalive)
    this.timer = undefined
    this.keepalive = undefined
    const stopping = this.stopListening
    this.stopListening = undefined
    void stopping?.then((stop) => stop())
  }

  /** One read at a time; a read asked for meanwhile runs once after it. */
  private read(): void {
    if (this.reading !== undefined) {
      this.again = true
      return
    }
    this.reading = this.readOnce()
      .catch(() => {
        // The database is unreachable for a moment: the next tick reads again.
      })
      .finally(() => {
        this.reading = undefined
        if (this.again && this.timer !== undefined) {
          this.again = false
          this.read()
        }
      })
  }

  private async readOnce(): Promise<void> {
    if (this.subscribers.size === 0) return
    const db = internalsOf(this.akter).storage.db
    const watched = new Map<string, { routingKey: string; executionId: string }>()
    let lists = false
    for (const subscriber of this.subscribers) {
      if (subscriber.watch === undefined) {
        lists = true
        continue
      }
      const address = decodeExecutionId(subscriber.watch)
      if (address instanceof InvalidExecutionId) continue
      watched.set(subscriber.watch, {
        routingKey: placeOwner(address).routingKey,
        executionId: subscriber.watch,
      })
    }
    const [fingerprints, stamp] = await Promise.all([
      executionFingerprints(db, [...watched.values()]),
      lists ? listingStamp(db) : Promise.resolve(""),
    ])
    for (const subscriber of this.subscribers) {
      const now =
        subscriber.watch === undefined ? stamp : (fingerprints.get(subscriber.watch) ?? "gone")
      // The event says only that something changed: a stamp names statuses and counts of every
      // tenant, a fingerprint those of any execution id a tab asks for, and a tenant's studio
      // shows neither.
      if (subscriber.last !== undefined && subscriber.last !== now) {
        subscriber.send("event: change\ndata: changed\n\n")
      }
      subscriber.last = now
    }
  }
}
