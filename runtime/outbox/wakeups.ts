/**
 * How work is noticed without waiting for a poll. A commit that makes a timer due now notifies its
 * bucket: in this process through an in-memory bus, and on Postgres also through NOTIFY, which
 * wakes runners in other processes. A finished execution is announced the same way to callers
 * awaiting its result. Polling remains the fallback for every path (and the only cross-process path
 * on PGlite, where there are no other processes).
 */

import type { OwnerPlacement } from "../owners/routing.js"

export const WAKE_CHANNEL = "akter_wake"
export const FINISHED_CHANNEL = "akter_finished"
export const LEASES_CHANNEL = "akter_leases"

type Listener<A> = (value: A) => void

/**
 * A runner of this process that can take a new execution directly, without the claim a timer
 * would cost: the start arms the timer a recovery interval ahead (as a claim would) and hands the
 * execution over after its commit.
 */
export interface StartAcceptor {
  /** The recovery interval to arm the timer with, if this runner would take the execution now. */
  readiness(bucket: number, ownerType: string, workflow: string): number | undefined
  /** Takes the execution; false if it no longer can (the start then makes the timer due). */
  accept(owner: OwnerPlacement, executionId: string, workflow: string): boolean
}

export class Wakeups {
  private readonly bucketListeners = new Set<Listener<number>>()
  private readonly leaseListeners = new Set<() => void>()
  private readonly acceptors = new Set<StartAcceptor>()
  private readonly finishedListeners = new Map<string, Set<() => void>>()

  onBucket(listener: Listener<number>): () => void {
    this.bucketListeners.add(listener)
    return () => this.bucketListeners.delete(listener)
  }

  wakeBucket(bucket: number): void {
    for (const listener of this.bucketListeners) listener(bucket)
  }

  onStart(acceptor: StartAcceptor): () => void {
    this.acceptors.add(acceptor)
    return () => this.acceptors.delete(acceptor)
  }

  /** A runner of this process ready to take a new execution of this workflow in this bucket. */
  acceptorFor(
    bucket: number,
    ownerType: string,
    workflow: string,
  ): { readonly acceptor: StartAcceptor; readonly recoveryMs: number } | undefined {
    for (const acceptor of this.acceptors) {
      const recoveryMs = acceptor.readiness(bucket, ownerType, workflow)
      if (recoveryMs !== undefined) return { acceptor, recoveryMs }
    }
    return undefined
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
