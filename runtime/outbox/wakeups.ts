/**
 * How work is noticed without waiting for a poll. A commit that makes a timer due now notifies its
 * bucket: in this process through an in-memory bus, and on Postgres also through NOTIFY, which
 * wakes runners in other processes. A finished execution is announced the same way to callers
 * awaiting its result. Polling remains the fallback for every path (and the only cross-process path
 * on PGlite, where there are no other processes).
 */

export const WAKE_CHANNEL = "akter_wake"
export const FINISHED_CHANNEL = "akter_finished"
export const LEASES_CHANNEL = "akter_leases"

type Listener<A> = (value: A) => void

export class Wakeups {
  private readonly bucketListeners = new Set<Listener<number>>()
  private readonly leaseListeners = new Set<() => void>()
  private readonly finishedListeners = new Map<string, Set<() => void>>()

  onBucket(listener: Listener<number>): () => void {
    this.bucketListeners.add(listener)
    return () => this.bucketListeners.delete(listener)
  }

  wakeBucket(bucket: number): void {
    for (const listener of this.bucketListeners) listener(bucket)
  }

  /** Runners in this process hear at once when another one gave its buckets back. */
  onLeasesReleased(listener: () => void): () => void {
    this.leaseListeners.add(listener)
    return () => this.leaseListeners.delete(listener)
  }

  leasesReleased(): void {
    for (const listener of this.leaseListeners) listener()
  }

  onFinished(executionId: string, listener: () => void): () => void {
    let listeners = this.finishedListeners.get(executionId)
    if (listeners === undefined) {
      listeners = new Set()
      this.finishedListeners.set(executionId, listeners)
    }
    listeners.add(listener)
    return () => {
      listeners.delete(listener)
      if (listeners.size === 0) this.finishedListeners.delete(executionId)
    }
  }

  announceFinished(executionId: string): void {
    for (const listener of this.finishedListeners.get(executionId) ?? []) listener()
  }

  get awaitingResults(): number {
    return this.finishedListeners.size
  }
}
