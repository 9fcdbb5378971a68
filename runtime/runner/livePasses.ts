/**
 * The passes a runner runs: at most one live pass per execution (a claim that arrives while it runs
 * makes it replay once more if it suspends), each writing under the runner's activation of the
 * owner — one per lease of its bucket, whose first write advances the owner's generation, so
 * whoever served the owner before can commit nothing more. A lost lease abandons the bucket's
 * passes; a pass that ends without doing its work hands its timer back (timerHandBack.ts). A pass
 * waiting in memory for its timer (engine/pass.ts `Residency`) stays live but holds no slot, and so
 * does one that only writes its suspend or its result (`releaseSlot`).
 */
import type { AkterInternals } from "../akter.js"
import type { ExecutionSnapshot, UnstartedExecution } from "../engine/executionStore.js"
import type { HandedEvent } from "../events/eventLog.js"
import { runPass, type PassControl, type PassOutcome, type PassServices } from "../engine/pass.js"
import type { Logger } from "../log.js"
import { markWanted } from "../outbox/outboxStore.js"
import { Activation } from "../owners/fence.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { localNow } from "../storage/clock.js"
import { isConnectionMessage } from "../storage/connectionErrors.js"
import type { DatabaseHealth } from "./databaseHealth.js"
import type { ClaimedTimer, TimerHandBack } from "./timerHandBack.js"

/**
 * At most this many passes wait in memory for their timers at once; further suspends end their
 * passes, and their timers are claimed as any other.
 */
export const WAITING_PASS_LIMIT = 2_000

/**
 * Of those, at most this many wait for an event alone (no timer), each for at most
 * `EVENT_WAIT_MS`: an event may be long coming, and a waiting pass holds some 25 KB, so only the
 * answers that come soon (a reply, a confirmation) are worth the memory.
 */
export const EVENT_WAITING_LIMIT = 256
export const EVENT_WAIT_MS = 2_000

/** Why a runner abandons the live passes of a bucket whose lease it lost. */
const LEASE_LOST = "bucket lease lost"

const ownerKeyOf = (owner: OwnerPlacement) =>
  JSON.stringify([owner.tenant, owner.ownerType, owner.ownerId])

interface LivePass {
  control: PassControl | undefined
  /** A claim arrived while the pass ran: replay once more if it suspends. */
  rerun: boolean
  readonly bucket: number
  readonly owner: OwnerPlacement
}

/** How an execution's passes here ended. */
export interface PassesEnded {
  readonly owner: OwnerPlacement
  readonly executionId: string
  /** The owner's bucket is another runner's (see `LivePasses.run`). */
  readonly guest: boolean
  /** The local time (`localNow()`) its timer is due, if its last pass suspended on one. */
  readonly dueAt: number | undefined
  /** Due work should be claimed now (a folded start was refused). */
  readonly claimNow: boolean
}

export interface LivePassesOptions {
  readonly internals: AkterInternals
  readonly log: Logger
  readonly services: PassServices
  /** The manifests this runner runs: an execution that wants another one is marked for others. */
  readonly manifests: readonly string[]
  readonly health: DatabaseHealth
  readonly handBack: TimerHandBack
  /** Whether the runner still leases the bucket. */
  readonly holds: (bucket: number) => boolean
  /** Told when an execution's passes here ended. */
  readonly ended: (ended: PassesEnded) => void
  /** Told when a live pass gave its slot up (it waits in memory, or only writes what it did). */
  readonly slotFreed: () => void
}

export class LivePasses {
  private readonly live = new Map<string, LivePass>()
  private readonly activations = new Map<
    string,
    { readonly bucket: number; readonly activation: Activation }
  >()
  /**
   * Live passes waiting in memory for their timers: they hold no slot. Those waiting for an event
   * only have a timeout, after which they end (they keep memory, and an event may be long coming).
   */
  private readonly waiting = new Map<string, ReturnType<typeof setTimeout> | undefined>()
  /**
   * Live passes that run none of the workflow's code until they end or wait in memory: each writes
   * its suspend or its result. They hold no slot.
   */
  private readonly writingOnly = new Set<string>()
  /** Passes waiting for an event alone: those with a time limit. */
  private eventWaiting = 0
  private draining = false

  constructor(private readonly options: LivePassesOptions) {}

  /** Executions with a pass running or writing (a pass waiting in memory is neither). */
  get size(): number {
    return this.live.size - this.waiting.size
  }

  /**
   * The slots taken: passes that run the workflow's code. A pass waiting in memory takes none, nor
   * does one that only writes its suspend or its result, so a timer due meanwhile need not wait
   * for that write's round trip.
   */
  get slotsTaken(): number {
    return this.live.size - this.waiting.size - this.writingOnly.size
  }

  /**
   * The execution's pass runs no more of the workflow's code until it ends or resumes: its body
   * is parked while its suspend is written, or it has ended and its result is being written.
   */
  releaseSlot(executionId: string): void {
    if (!this.live.has(executionId) || this.waiting.has(executionId)) return
    if (this.writingOnly.has(executionId)) return
    this.writingOnly.add(executionId)
    this.options.slotFreed()
  }

  /** Whether one more pass may wait in memory. */
  mayWait(forEventOnly: boolean): boolean {
    if (this.draining || this.waiting.size >= WAITING_PASS_LIMIT) return false
    return !forEventOnly || this.eventWaiting < EVENT_WAITING_LIMIT
  }

  /** Executions with a live pass, running or waiting. */
  has(executionId: string): boolean {
    return this.live.has(executionId)
  }

  /**
   * The execution's pass waits in memory for its timer: its slot is free. Given `endAfterMs` (a
   * pass waiting for an event, with no timer), it ends after that long if nothing resumed it.
   */
  waits(executionId: string, endAfterMs?: number): void {
    const entry = this.live.get(executionId)
    if (entry === undefined) return
    // A pass that gave its slot up while it wrote its suspend has been told of already.
    const heldSlot = !this.waiting.has(executionId) && !this.writingOnly.has(executionId)
    this.stopsWaiting(executionId)
    this.writingOnly.delete(executionId)
    const timeout =
      endAfterMs === undefined
        ? undefined
        : setTimeout(() => entry.control?.abandon("waited in memory long enough"), endAfterMs)
    if (timeout !== undefined) this.eventWaiting += 1
    this.waiting.set(executionId, timeout)
    if (heldSlot) this.options.slotFreed()
  }

  /** The execution's waiting pass runs again (resumed), or ends (dismissed): it takes its slot. */
  stopsWaiting(executionId: string): void {
    if (!this.waiting.has(executionId)) return
    const timeout = this.waiting.get(executionId)
    if (timeout !== undefined) {
      clearTimeout(timeout)
      this.eventWaiting -= 1
    }
    this.waiting.delete(executionId)
  }

  /**
   * A claim of an execution whose pass runs here, or an emit here that poked it (`event`), its row
   * poked `pokes` times: a pass waiting in memory resumes for it; a running one is woken and, if it
   * suspends, replays once more. False when no pass of it runs here.
   */
  rerun(executionId: string, pokes: number, event?: HandedEvent): boolean {
    const existing = this.live.get(executionId)
    if (existing === undefined) return false
    if (this.waiting.has(executionId) && existing.control?.claimed(pokes, event) === true) {
      this.stopsWaiting(executionId)
      return true
    }
    existing.rerun = true
    existing.control?.wake()
    return true
  }

  /** The leases of these buckets were lost: their activations are forgotten, their passes abandoned. */
  leasesLost(buckets: readonly number[]): void {
    const lost = new Set(buckets)
    for (const [key, entry] of this.activations)
      if (lost.has(entry.bucket)) this.activations.delete(key)
    for (const run of this.live.values()) if (lost.has(run.bucket)) run.control?.abandon(LEASE_LOST)
  }

  /** Stops every live pass without recording anything; their timers, for the caller to hand back. */
  drain(): ClaimedTimer[] {
    this.draining = true
    // A waiting pass's suspend is written, its timer armed when it is due: nothing to hand back.
    const abandoned = [...this.live.entries()]
      .filter(([executionId]) => !this.waiting.has(executionId))
      .map(([executionId, run]) => ({ routingKey: run.owner.routingKey, executionId }))
    for (const run of this.live.values()) run.control?.abandon("runner draining")
    return abandoned
  }

  /**
   * The runner's activation of an owner, one per lease of its bucket. Its first write advances the
   * owner's generation, so whoever served the owner before can commit nothing more.
   */
  private activationOf(owner: OwnerPlacement): Activation {
    const key = ownerKeyOf(owner)
    let entry = this.activations.get(key)
    if (entry === undefined) {
      entry = { bucket: owner.bucket, activation: new Activation(owner) }
      this.activations.set(key, entry)
    }
    return entry.activation
  }

  /**
   * Runs passes of the execution until one finishes, fails or suspends with no claim of it pending.
   * `guest`: the owner's bucket is another runner's (the execution wants a manifest only this runner
   * serves). `start`: a start this runner took, whose first write records it.
   */
  async run(
    owner: OwnerPlacement,
    executionId: string,
    guest = false,
    /** A start this runner took: its first pass reads nothing, and its first write starts it. */
    start?: UnstartedExecution,
    /** What the first pass replays from, read by the claim (null: the execution is gone). */
    claimedSnapshot?: ExecutionSnapshot | null,
  ): Promise<void> {
    const { internals, log, services, health, handBack } = this.options
    const entry: LivePass = { control: undefined, rerun: false, bucket: owner.bucket, owner }
    this.live.set(executionId, entry)
    internals.wakeups.passStarted(executionId)
    // A guest's activation is its own, for all its passes: the owner is in another runner's bucket.
    const guestActivation = guest ? new Activation(owner) : undefined
    let outcome: PassOutcome | undefined
    let unstarted = start
    let snapshot = claimedSnapshot
    let claimNow = false
    try {
      for (;;) {
        // A pass that runs again (a claim came while the last one suspended) takes a slot again.
        this.writingOnly.delete(executionId)
        const activation = guestActivation ?? this.activationOf(owner)
        outcome = await runPass(
          services,
          owner,
          executionId,
          activation,
          (control) => {
            entry.control = control
          },
          {
            guest,
            ...(unstarted === undefined ? {} : { start: unstarted }),
            ...(snapshot === undefined ? {} : { snapshot }),
          },
        )
        unstarted = undefined
        // A pass that runs again reads again: the claim's snapshot is behind what it wrote.
        snapshot = undefined
        if (
          outcome.kind === "incompatible" &&
          !this.options.manifests.includes(outcome.manifestHash)
        ) {
          // Leave it to a runner of the manifest it needs, wherever its bucket is.
          await markWanted(
            internals.storage.db,
            internals.clock,
            owner.routingKey,
            executionId,
            outcome.manifestHash,
          )
        }
        if (outcome.kind === "abandoned") {
          if (outcome.reason.includes("StaleGeneration")) {
            // Another runner activated the owner since: this write, and all after it, are refused.
            log.info("write refused under a stale generation", { executionId })
            this.activations.delete(ownerKeyOf(owner))
            // A start folded into the refused write committed with its timer due now (the owner
            // moved on, or a child started interrupted): claim it under a new activation.
            if (start !== undefined) claimNow = true
          } else if (outcome.reason === LEASE_LOST || outcome.reason.includes("LeaseExpired")) {
            // The runner's own guard, before the fence: its lease lapsed (a pause, a slow heartbeat).
            log.info("write withheld: the bucket's lease lapsed", { executionId })
            // Its claim moved the timer a recovery interval ahead; whoever holds the bucket now
            // (this runner, once its heartbeat takes it back) resumes it at once instead.
            await handBack.dueNow([{ routingKey: owner.routingKey, executionId }])
          } else if (isConnectionMessage(outcome.reason)) {
            // Its claim moved the timer a recovery interval ahead: once the database is back it
            // is made due at once rather than then.
            health.failed(new Error(outcome.reason))
            handBack.whenBack(owner.routingKey, executionId)
          } else log.debug("pass abandoned", { executionId, reason: outcome.reason })
        }
        // A start folded into the pass found the execution already there (a concurrent start of
        // the same key wrote it first): a claim of it while the pass ran is served now.
        const attached = outcome.kind === "abandoned" && outcome.reason.includes("StartAttached")
        if (
          (outcome.kind !== "suspended" && !attached) ||
          !entry.rerun ||
          this.draining ||
          (!guest && !this.options.holds(owner.bucket))
        ) {
          break
        }
        entry.rerun = false
      }
    } catch (error) {
      if (health.failed(error)) handBack.whenBack(owner.routingKey, executionId)
      else log.error("pass failed; its timer resumes it", { executionId, error: String(error) })
    } finally {
      // A start whose pass ended before writing it was not taken: its caller writes it. (A start
      // already told what came of it ignores this.)
      start?.settled("not-taken")
      this.live.delete(executionId)
      this.stopsWaiting(executionId)
      this.writingOnly.delete(executionId)
      // After its slot is free: a caller told of the result may start its next execution here.
      internals.wakeups.passEnded(
        executionId,
        outcome?.kind === "finished" ? outcome.result : undefined,
      )
    }
    const dueAt =
      outcome?.kind === "suspended" && outcome.dueAtMs !== null
        ? localNow() + Math.max(0, outcome.dueAtMs - services.now())
        : undefined
    this.options.ended({ owner, executionId, guest, dueAt, claimNow })
  }
}
