/**
 * A runner's schedule ticker: for every schedule of a workflow the runner implements, a timer set
 * for its next tick on the runtime's clock (never a poll). When it fires, the runner claims the
 * schedule's row (scheduleStore.ts), so one runner at a time decides which due ticks to start
 * (catch-up policy) and whether each may start now (overlap policy), starts them through the
 * client's idempotent start — each tick's command id, hence its execution key, derived from the
 * schedule and the tick time — and records the new cursor. A runner that dies mid-tick leaves the
 * cursor where it was; whoever decides next starts the same keys, which attach instead of starting
 * twice. Moving the test clock re-arms the timers without a statement.
 */
import type { Akter, AkterInternals } from "../akter.js"
import { makeOwnerClient } from "../client/ownerClient.js"
import { readStatus, resolveExecution } from "../client/executionResults.js"
import type { Execution } from "../client/clientApi.js"
import { faultPoint } from "../faults.js"
import { defaultCaller } from "../model/caller.js"
import type { OwnerRegistration } from "../model/registration.js"
import {
  nextTickAfter,
  scheduleCommandId,
  ticksBetween,
  ticksToStart,
  timingOf,
  type CanonicalSchedule,
} from "../model/schedule.js"
import type { Logger } from "../log.js"
import {
  claimSchedule,
  declareSchedules,
  recordTicks,
  type DeclaredSchedule,
  type ScheduleRow,
} from "../schedules/scheduleStore.js"
import { estimatedNow, timeoutDelay } from "../storage/clock.js"
import type { DatabaseHealth } from "./databaseHealth.js"

/** The soonest a timer looks again at a schedule another runner is deciding. */
const MIN_RETRY_MS = 50

type WorkflowClient = {
  start(
    ownerId: string,
    input: unknown,
    options: { commandId: string },
  ): Promise<Execution<unknown, unknown>>
}

interface TickedSchedule {
  readonly declared: DeclaredSchedule
  readonly schedule: CanonicalSchedule
  readonly owner: OwnerRegistration
  readonly client: WorkflowClient
  /** When to look next, on the database's clock; undefined while a look is under way. */
  dueAt: number | undefined
  timer: ReturnType<typeof setTimeout> | undefined
  ticking: boolean
  /** A look was asked for while one was under way: another follows it (`wantedAgain`: for a queued tick). */
  tickAgain: boolean
  wantedAgain: boolean
  /** Stops listening for the finish a queued tick waits for. */
  stopWaiting: (() => void) | undefined
}

export interface ScheduleTickerOptions {
  readonly akter: Akter
  readonly internals: AkterInternals
  readonly log: Logger
  readonly health: DatabaseHealth
  readonly runnerId: string
  /**
   * How long a claim lets one runner decide a schedule's ticks before another may: the runner's
   * lease length, so a successor takes a dead runner's schedules when it takes its buckets.
   */
  readonly claimMs: number
  /** The owner types of the workflows this runner implements, and which workflows those are. */
  readonly owners: readonly OwnerRegistration[]
  readonly implements: (owner: string, workflow: string) => boolean
  /** Tracks work until it settles, so a drain waits for it. */
  readonly track: (work: Promise<void>) => void
}

/**
 * Declares the schedules of the implemented workflows and arms their timers; returns the function
 * that stops them (a tick under way finishes; the drain waits for it through `track`).
 */
export const startScheduleTicker = async (options: ScheduleTickerOptions): Promise<() => void> => {
  const { internals, log } = options
  const ticked: TickedSchedule[] = []
  for (const owner of options.owners) {
    const schedules = owner.canonical.schedules ?? {}
    if (Object.keys(schedules).length === 0) continue
    const client = makeOwnerClient<Record<string, WorkflowClient>>(options.akter, owner)
    for (const [name, schedule] of Object.entries(schedules)) {
      if (!options.implements(owner.owner, schedule.workflow)) continue
      ticked.push({
        declared: { ownerType: owner.owner, schedule: name, definition: timingOf(schedule) },
        schedule,
        owner,
        client: client[schedule.workflow]!,
        dueAt: undefined,
        timer: undefined,
        ticking: false,
        tickAgain: false,
        wantedAgain: false,
        stopWaiting: undefined,
      })
    }
  }
  if (ticked.length === 0) return () => {}
  await declareSchedules(
    internals.storage.db,
    internals.clock,
    ticked.map((entry) => entry.declared),
  )
  let stopped = false

  const arm = (entry: TickedSchedule) => {
    if (entry.timer !== undefined) clearTimeout(entry.timer)
    entry.timer = undefined
    if (stopped || entry.dueAt === undefined) return
    const delay = entry.dueAt - estimatedNow(internals.clock)
    entry.timer = setTimeout(() => {
      entry.timer = undefined
      tick(entry, false)
    }, timeoutDelay(delay))
  }

  const tick = (entry: TickedSchedule, wanted: boolean) => {
    if (stopped) return
    if (entry.ticking) {
      entry.tickAgain = true
      entry.wantedAgain ||= wanted
      return
    }
    entry.ticking = true
    entry.dueAt = undefined
    options.track(
      decide(entry, wanted)
        .then(() => options.health.answered())
        .catch((error) => {
          if (!options.health.failed(error)) {
            log.error("schedule tick failed", {
              owner: entry.declared.ownerType,
              schedule: entry.declared.schedule,
              error: String(error),
            })
          }
          // Looked at again after a claim's length: by then this runner's claim has lapsed too.
          entry.dueAt ??= estimatedNow(internals.clock) + options.claimMs
        })
        .finally(() => {
          entry.ticking = false
          if (entry.tickAgain && !stopped) {
            const again = entry.wantedAgain
            entry.tickAgain = false
            entry.wantedAgain = false
            tick(entry, again)
          } else arm(entry)
        }),
    )
  }

  /** Decides the due ticks of one schedule, if this runner gets to, and sets when to look next. */
  const decide = async (entry: TickedSchedule, wanted: boolean): Promise<void> => {
    const claim = await claimSchedule(
      internals.storage.db,
      internals.clock,
      options.runnerId,
      entry.declared,
      options.claimMs,
      wanted,
    )
    if (claim === undefined) return // the row is gone (the CLI cannot delete it; a reset database)
    const { row, nowMs } = claim
    if (!claim.claimed) {
      entry.dueAt = lookAgainAt(entry, row, nowMs)
      return
    }
    const decision = await startDueTicks(entry, row, nowMs)
    const recorded = await recordTicks(
      internals.storage.db,
      internals.clock,
      options.runnerId,
      entry.declared,
      decision,
    )
    if (!recorded)
      log.warn("schedule claim lapsed before its ticks were recorded", { ...entry.declared })
    entry.dueAt = decision.nextTickMs ?? undefined
    if (decision.queuedTickMs !== null && decision.lastExecutionId !== null) {
      await waitForFinish(entry, decision.lastExecutionId)
    }
  }

  /** When a schedule this runner did not claim is worth looking at again. */
  const lookAgainAt = (
    entry: TickedSchedule,
    row: ScheduleRow,
    nowMs: number,
  ): number | undefined => {
    if (row.paused) {
      // Resumed from the CLI, which no runner hears: look at the next tick it would have had.
      return nextTickAfter(entry.schedule, nowMs) ?? undefined
    }
    const due =
      row.next_tick_ms === null ||
      row.next_tick_ms <= nowMs ||
      row.definition !== entry.declared.definition
    // Another runner is deciding it: look again at the next tick (it will have decided this one
    // by then), or when its claim lapses if that comes first (it may have died deciding).
    if (due) {
      const next = nextTickAfter(entry.schedule, nowMs) ?? row.claimed_until_ms
      return Math.max(nowMs + MIN_RETRY_MS, Math.min(next, row.claimed_until_ms))
    }
    return row.next_tick_ms ?? undefined
  }

  /** Starts what the policies say of the due ticks; returns the row's new state. */
  const startDueTicks = async (entry: TickedSchedule, row: ScheduleRow, nowMs: number) => {
    const { schedule, declared } = entry
    // A changed declaration starts afresh from now: the old cursor counted ticks of another one.
    const from = row.definition === declared.definition ? (row.next_tick_ms ?? nowMs) : nowMs
    const due = ticksBetween(schedule, from, nowMs)
    if (due.dropped > 0) {
      log.warn("schedule missed more ticks than one catch-up starts; the oldest are dropped", {
        ...declared,
        dropped: due.dropped,
      })
    }
    const candidates = [
      ...(row.queued_tick_ms === null ? [] : [row.queued_tick_ms]),
      ...ticksToStart(due.ticks, nowMs, schedule.catchUp),
    ]
    let lastExecutionId = row.last_execution_id
    let lastTickMs = row.last_tick_ms
    let queuedTickMs: number | null = null
    let lastOpen =
      candidates.length > 0 && lastExecutionId !== null && (await isOpen(entry, lastExecutionId))
    for (const tick of candidates) {
      if (lastOpen && schedule.overlap === "skip") {
        log.info("schedule tick skipped: the previous execution is still open", {
          ...declared,
          tick: new Date(tick).toISOString(),
        })
        continue
      }
      if (lastOpen && schedule.overlap === "queue") {
        queuedTickMs = tick
        continue
      }
      // Fault points: `schedule.before` (the tick decided under this runner's claim, nothing of
      // its start written) and `schedule.after` (its execution committed, the cursor not yet
      // moved). A successor decides the tick again once the claim lapses, and its start by the
      // same command id attaches.
      faultPoint("schedule.before")
      const execution = await entry.client.start(schedule.ownerId, schedule.input ?? undefined, {
        commandId: scheduleCommandId(declared.schedule, tick),
      })
      faultPoint("schedule.after")
      log.info("schedule tick started", {
        ...declared,
        tick: new Date(tick).toISOString(),
        executionId: execution.executionId,
      })
      lastExecutionId = execution.executionId
      lastTickMs = tick
      lastOpen = true
    }
    return {
      definition: declared.definition,
      nextTickMs: nextTickAfter(schedule, nowMs),
      queuedTickMs,
      lastExecutionId,
      lastTickMs,
    }
  }

  /** Whether an execution the schedule started has yet to finish. */
  const isOpen = async (entry: TickedSchedule, executionId: string): Promise<boolean> => {
    const workflow = entry.owner.workflows[entry.schedule.workflow]!
    const resolved = resolveExecution(workflow, defaultCaller, executionId)
    if (!("owner" in resolved)) return false
    const status = await readStatus(internals, workflow, resolved)
    return status.status === "running" || status.status === "suspended"
  }

  /**
   * A queued tick waits for the open execution: told of its finish by this process's passes or, on
   * Postgres, by notification (the status read below marks it awaited), it decides again at once.
   * The schedule's next tick looks again anyway, should a notification be missed.
   */
  const waitForFinish = async (entry: TickedSchedule, executionId: string) => {
    entry.stopWaiting?.()
    await internals.listenForResults().catch(() => {})
    const stop = internals.wakeups.onFinished(executionId, () => {
      stop()
      entry.stopWaiting = undefined
      tick(entry, true)
    })
    entry.stopWaiting = stop
    const workflow = entry.owner.workflows[entry.schedule.workflow]!
    const resolved = resolveExecution(workflow, defaultCaller, executionId)
    if (!("owner" in resolved)) return
    const status = await readStatus(internals, workflow, resolved, { awaiting: true })
    if (status.status === "finished" || status.status === "unknown") {
      stop()
      entry.stopWaiting = undefined
      entry.tickAgain = true
      entry.wantedAgain = true
    }
  }

  // The test clock moved (or a commit of this process woke the runners): re-arm, without a query.
  const stopHearing = internals.wakeups.onBucket(() => {
    for (const entry of ticked) if (!entry.ticking) arm(entry)
  })
  for (const entry of ticked) tick(entry, false)

  return () => {
    stopped = true
    stopHearing()
    for (const entry of ticked) {
      if (entry.timer !== undefined) clearTimeout(entry.timer)
      entry.stopWaiting?.()
    }
  }
}
