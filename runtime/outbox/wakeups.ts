/**
 * How work is noticed without waiting for a poll. A commit that makes a timer due now notifies its
 * bucket: in this process through an in-memory bus, and on Postgres also through NOTIFY, which
 * wakes runners in other processes. A finished execution is announced the same way to callers
 * awaiting its result. Polling remains the fallback for every path (and the only cross-process path
 * on PGlite, where there are no other processes).
 */

import type { HandedEvent } from "../events/eventLog.js"

type Listener<A> = (value: A) => void

/** A timer an emit of this process poked, how many pokes its row counts since, and the event. */
export interface PokedTimer {
  readonly executionId: string
  readonly pokes: number
  readonly event?: HandedEvent
}

/** A runner of this process, as an emit here sees it. */
export interface PokeTaker {
  /** Whether it serves the bucket (leases it and is not draining): its polls find what is due there. */
  serves(bucket: number): boolean
  /** Answers a poke of the timer when a pass of it is live here; true when it did. */
  take(bucket: number, poked: PokedTimer): boolean
}

/**
 * Told when an execution's result is known in this process: the encoded result when a pass here
 * recorded it, nothing when it finished elsewhere (or a pass here ended without finishing it) and
 * the listener has to read it.
 */
type FinishedListener = (result?: Buffer) => void

/**
 * How long a start of this process counts as fresh: a caller awaiting its result within this time
 * waits for the finish's notification without reading first.
 */
export const FRESH_START_MS = 10_000

/**
 * The most bytes of announced results kept for fresh starts whose callers have not asked yet (a
 * start whose caller never asks keeps its result until its entry expires); past it, such a caller
 * reads the result instead.
 */
export const FRESH_RESULTS_MAX_BYTES = 1 << 20

interface FreshStart {
  readonly at: number
  finished: boolean
  /** The result its finish announced, kept for the caller that has not asked yet. */
  result?: Buffer
}

/** What a caller about to wait learns of its fresh start (`takeFreshStart`). */
export interface FreshStartState {
  /** Unfinished as far as this process heard: wait for the notification without reading first. */
  readonly waiting: boolean
  /** Its finish was announced, with this result, before the caller asked. */
  readonly result?: Buffer
}

export class Wakeups {
  private readonly bucketListeners = new Set<Listener<number>>()
  private readonly leaseListeners = new Set<() => void>()
  private readonly pokeTakers = new Set<PokeTaker>()
  private readonly finishedListeners = new Map<string, Set<FinishedListener>>()
  private readonly passesHere = new Map<string, number>()
  /**
   * Starts this process committed, marked awaited, while its LISTEN session heard finishes: their
   * local start time, and whether a finish of theirs was announced since (with its result, if it
   * came along). Oldest first.
   */
  private readonly freshStarts = new Map<string, FreshStart>()
  /** The bytes of the results `freshStarts` keeps. */
  private freshResultBytes = 0

  onBucket(listener: Listener<number>): () => void {
    this.bucketListeners.add(listener)
    return () => this.bucketListeners.delete(listener)
  }

  wakeBucket(bucket: number): void {
    for (const listener of this.bucketListeners) listener(bucket)
  }

  takePokes(taker: PokeTaker): () => void {
    this.pokeTakers.add(taker)
    return () => this.pokeTakers.delete(taker)
  }

  /**
   * Whether a runner of this process serves the bucket: a commit making work due there then needs
   * no NOTIFY, since no runner elsewhere holds the bucket (one that takes it over looks up its due
   * times), only this process's wake-up.
   */
  servedHere(bucket: number): boolean {
    for (const taker of this.pokeTakers) if (taker.serves(bucket)) return true
    return false
  }

  /**
   * An emit of this process committed pokes of these timers: a runner here whose pass of one is
   * live (it leases the bucket) answers it at once, without claiming the timer; the row stays due
   * until that pass's next write, so a runner that dies first loses nothing. True when every one
   * was taken here (the bucket's poll is then not needed).
   */
  takePoked(bucket: number, poked: readonly PokedTimer[]): boolean {
    let all = poked.length > 0
    for (const timer of poked) {
      let taken = false
      for (const taker of this.pokeTakers) {
        if (taker.take(bucket, timer)) {
          taken = true
          break
        }
      }
      all &&= taken
    }
    return all
  }

  /** Runners in this process hear at once when another one gave its buckets back. */
  onLeasesReleased(listener: () => void): () => void {
    this.leaseListeners.add(listener)
    return () => this.leaseListeners.delete(listener)
  }

  leasesReleased(): void {
    for (const listener of this.leaseListeners) listener()
  }

  onFinished(executionId: string, listener: FinishedListener): () => void {
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

  /**
   * `result`: the encoded result a pass of this process just committed, or that the finish's
   * notification carried (outbox/notifications.ts `FINISHED_CHANNEL`); without one, callers read it.
   */
  announceFinished(executionId: string, result?: Buffer): void {
    const fresh = this.freshStarts.get(executionId)
    if (fresh !== undefined) {
      fresh.finished = true
      // Kept for its caller, who may not have asked yet (a start returns before it is awaited).
      if (
        result !== undefined &&
        fresh.result === undefined &&
        this.freshResultBytes + result.length <= FRESH_RESULTS_MAX_BYTES
      ) {
        fresh.result = result
        this.freshResultBytes += result.length
      }
    }
    for (const listener of this.finishedListeners.get(executionId) ?? []) listener(result)
  }

  /**
   * Notifications may have been missed (the LISTEN session was away): every caller awaiting a
   * result reads the database again, and no start counts as fresh any more.
   */
  rereadAwaited(): void {
    this.freshStarts.clear()
    this.freshResultBytes = 0
    for (const listeners of [...this.finishedListeners.values()]) {
      for (const listener of [...listeners]) listener()
    }
  }

  /**
   * A start of this process committed the execution, marked awaited (its finish notifies), while
   * this process's LISTEN session heard finishes: its finish cannot pass unheard, so for
   * `FRESH_START_MS` a caller awaiting it need not read before the notification.
   */
  startedFresh(executionId: string): void {
    const now = Date.now()
    for (const [id, fresh] of this.freshStarts) {
      if (now - fresh.at < FRESH_START_MS) break
      this.forgetFresh(id)
    }
    // Re-inserted, not overwritten: the map stays oldest first, and a kept result is uncounted.
    this.forgetFresh(executionId)
    this.freshStarts.set(executionId, { at: now, finished: false })
  }

  /**
   * What a caller about to wait for the execution's result knows without reading: whether it may
   * wait for the notification first (a fresh start of this process whose finish was not announced
   * yet), or the result a finish announced before it asked. Asked once, after the caller's listener
   * is registered (a finish announced after this is heard by it).
   */
  takeFreshStart(executionId: string): FreshStartState {
    const fresh = this.forgetFresh(executionId)
    if (fresh === undefined || Date.now() - fresh.at >= FRESH_START_MS) return { waiting: false }
    if (!fresh.finished) return { waiting: true }
    return fresh.result === undefined
      ? { waiting: false }
      : { waiting: false, result: fresh.result }
  }

  private forgetFresh(executionId: string): FreshStart | undefined {
    const fresh = this.freshStarts.get(executionId)
    if (fresh === undefined) return undefined
    this.freshStarts.delete(executionId)
    this.freshResultBytes -= fresh.result?.length ?? 0
    return fresh
  }

  /**
   * A pass of this process runs the execution: until `passEnded`, a caller awaiting its result
   * waits to be told here instead of reading the database.
   */
  passStarted(executionId: string): void {
    this.passesHere.set(executionId, (this.passesHere.get(executionId) ?? 0) + 1)
  }

  /**
   * The pass ended: `result` is the result it recorded, handed to callers awaiting it; without
   * one, they read the database from now on (the pass may have left the execution unfinished).
   */
  passEnded(executionId: string, result?: Buffer): void {
    const count = (this.passesHere.get(executionId) ?? 0) - 1
    if (count > 0) this.passesHere.set(executionId, count)
    else this.passesHere.delete(executionId)
    this.announceFinished(executionId, result)
  }

  /** Whether a pass of this process runs the execution and will announce its finish here. */
  passRunsHere(executionId: string): boolean {
    return this.passesHere.has(executionId)
  }

  get awaitingResults(): number {
    return this.finishedListeners.size
  }
}
