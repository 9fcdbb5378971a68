/**
 * What one pass over an execution knows: the recorded steps it replays from, the markers, the
 * event cursor, the compensations registered so far, and which steps are parked. Parking is how a
 * step that must wait (a sleep not yet due, a wait with no event, a retry backing off) tells the
 * pass; the pass ends only when every running branch is parked and none is working, so a parking
 * branch lets its siblings finish their current step first.
 */
import { NO_MIGRATIONS, type RecordedMigrations } from "../compatibility/executionVerdict.js"
import type { Effect } from "effect"
import type { Activation } from "../owners/fence.js"
import type { OwnerPlacement } from "../owners/routing.js"
import type { Caller } from "../model/caller.js"
import type { InterruptCause } from "../model/exit.js"
import type { WorkflowRegistration } from "../model/registration.js"
import type { ExecutionRow } from "./executionStore.js"
import type { PassWriter } from "./passWriter.js"
import type { StepRow } from "./stepStore.js"
import type { HandedEvent } from "../events/eventLog.js"
import { timeoutDelay } from "../storage/clock.js"

export interface Parked {
  /** When the step can make progress on its own; `null`: only an event can wake it. */
  readonly dueAtMs: number | null
  /** Set for waits: the suspend records how far they scanned, and checks for events beyond. */
  readonly scanned?: number
  readonly event?: string
  readonly attempt: number
}

/** How long all branches must stay parked before the pass ends (lets a sibling start its next step). */
const QUIESCENCE_MS = 2

/**
 * A step due sooner than this waits inside the pass: suspending, re-claiming and replaying would
 * cost more than the wait.
 */
const WAIT_IN_PASS_MS = 20

export class PassState {
  readonly recorded = new Map<string, StepRow[]>()
  readonly markers = new Map<string, number>()
  readonly parked = new Map<string, Parked>()
  readonly compensations: Array<Effect.Effect<unknown, unknown>> = []
  /** Recorded data this pass reads through a migration, as the runner's verdict decided. */
  migrations: RecordedMigrations = NO_MIGRATIONS
  readonly caller: Caller
  /** The W3C trace context of the start, when a traced start recorded one. */
  readonly traceparent: unknown
  cursor: number
  /**
   * The pokes of the execution's timer this pass has answered: its suspend keeps the timer due if
   * a poke came since. A claim that resumes a pass waiting in memory raises it (engine/pass.ts);
   * a suspend that deletes the timer sets it to 0, as a poke then creates the row counting from 0.
   */
  pokesSeen: number
  /**
   * The last event an emit of this process handed to the pass with its poke: a wait whose cursor
   * is at or past the event of its name before it reads it from here, not from the log.
   */
  handed: HandedEvent | undefined = undefined
  /**
   * When the execution is interrupted if still open; null: it has no deadline. A start this pass
   * records replaces its estimate with the recorded one.
   */
  deadlineAtMs: number | null
  interrupting: boolean
  /** Why the execution is being interrupted, once it is: the recorded result names it. */
  interruptCause: InterruptCause | undefined
  compensating = false
  working = 0
  private progress = 0
  private quiescenceTimer: ReturnType<typeof setTimeout> | undefined
  private wakers = new Set<() => void>()
  /**
   * While held (a pass waiting in memory for its runner's go, engine/pass.ts), steps whose due time
   * passes stay parked; their wakers run when the hold is released.
   */
  private holding = false
  private dueWhileHeld = new Set<() => void>()
  /** Called once when every branch is parked; the pass then suspends. */
  onQuiescent: () => void = () => {}

  constructor(
    readonly execution: ExecutionRow,
    readonly owner: OwnerPlacement,
    readonly registration: WorkflowRegistration,
    readonly activation: Activation,
    readonly writer: PassWriter,
    /** The runner's estimate of the database clock. */
    readonly now: () => number,
    steps: readonly StepRow[],
  ) {
    this.cursor = execution.event_cursor
    this.pokesSeen = Number(execution.pokes)
    this.deadlineAtMs = execution.deadline_at_ms
    // A flag without a cause was asked for before deadlines existed (migration 0010): a request.
    this.interruptCause = execution.interrupt
      ? (execution.interrupted_by ?? "request")
      : this.deadlinePassed()
        ? "deadline"
        : undefined
    this.interrupting = this.interruptCause !== undefined
    // The trace context a traced start recorded is the pass span's parent, not part of the caller.
    const { traceparent, ...caller } = JSON.parse(execution.caller) as Caller & {
      readonly traceparent?: unknown
    }
    this.caller = caller
    this.traceparent = traceparent
    for (const row of steps) {
      if (row.kind === "version") {
        this.markers.set(row.step, row.version ?? 0)
        continue
      }
      const rows = this.recorded.get(row.step)
      if (rows === undefined) this.recorded.set(row.step, [row])
      else rows.push(row)
    }
  }

  get routingKey(): string {
    return this.owner.routingKey
  }

  /** Whether the execution's deadline has passed, by the runner's clock. */
  deadlinePassed(): boolean {
    return this.deadlineAtMs !== null && this.now() >= this.deadlineAtMs
  }

  get executionId(): string {
    return this.execution.execution_id
  }

  /** The step's rows, attempts ascending. */
  rowsOf(step: string): StepRow[] {
    let rows = this.recorded.get(step)
    if (rows === undefined) {
      rows = []
      this.recorded.set(step, rows)
    }
    return rows
  }

  /** Replaces or appends the in-memory copy of a row after a write. */
  remember(row: StepRow): void {
    const rows = this.rowsOf(row.step)
    const index = rows.findIndex((existing) => existing.attempt === row.attempt)
    if (index === -1) {
      rows.push(row)
      rows.sort((a, b) => a.attempt - b.attempt)
    } else rows[index] = row
  }

  beginWork(): void {
    this.working += 1
    this.progress += 1
  }

  endWork(): void {
    this.working -= 1
    this.progress += 1
    this.checkQuiescence()
  }

  /**
   * Marks `step` parked until `wake()`; resolves the returned promise on wake. The caller re-checks
   * its condition after every wake and parks again if it still cannot progress.
   */
  park(step: string, parked: Parked, signal: AbortSignal): Promise<void> {
    this.parked.set(step, parked)
    this.progress += 1
    return new Promise<void>((resolve) => {
      // A due step wakes itself while a sibling keeps the pass alive (a sleep beside a long activity).
      const dueTimer =
        parked.dueAtMs === null
          ? undefined
          : setTimeout(
              () => {
                if (this.holding) this.dueWhileHeld.add(waker)
                else waker()
              },
              timeoutDelay(parked.dueAtMs - this.now()),
            )
      const waker = () => {
        if (dueTimer !== undefined) clearTimeout(dueTimer)
        this.wakers.delete(waker)
        this.dueWhileHeld.delete(waker)
        this.parked.delete(step)
        resolve()
      }
      this.wakers.add(waker)
      signal.addEventListener("abort", waker, { once: true })
      this.checkQuiescence()
    })
  }

  /** Parked steps stay parked past their due times until `release`. */
  hold(): void {
    this.holding = true
  }

  /** Ends a hold: the steps whose due times passed meanwhile wake now. */
  release(): void {
    this.holding = false
    for (const waker of [...this.dueWhileHeld]) waker()
  }

  /** Wakes every parked step to re-check (an event arrived, a due time passed, an interrupt). */
  wake(): void {
    for (const waker of [...this.wakers]) waker()
  }

  /** The earliest due time among parked steps. */
  earliestDue(): number | null {
    let earliest: number | null = null
    for (const parked of this.parked.values()) {
      if (parked.dueAtMs !== null && (earliest === null || parked.dueAtMs < earliest)) {
        earliest = parked.dueAtMs
      }
    }
    return earliest
  }

  stopQuiescenceCheck(): void {
    if (this.quiescenceTimer !== undefined) clearTimeout(this.quiescenceTimer)
    this.quiescenceTimer = undefined
  }

  private checkQuiescence(): void {
    if (
      this.holding ||
      this.working > 0 ||
      this.parked.size === 0 ||
      this.quiescenceTimer !== undefined
    )
      return
    const due = this.earliestDue()
    if (due !== null && due - this.now() < WAIT_IN_PASS_MS) return
    const seen = this.progress
    this.quiescenceTimer = setTimeout(() => {
      this.quiescenceTimer = undefined
      if (this.working > 0 || this.parked.size === 0) return
      if (this.progress !== seen) {
        this.checkQuiescence()
        return
      }
      this.onQuiescent()
    }, QUIESCENCE_MS)
  }
}
