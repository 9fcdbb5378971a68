/**
 * A runner: registers implemented workflows and serves the buckets it holds. This module composes
 * its parts — what it serves (servedWorkflows.ts), its bucket leases (leases.ts), when it claims due
 * work (claimLoop.ts), the soon-due timers it fires from memory (localTimers.ts), the passes it runs
 * (livePasses.ts), the timers it hands back (timerHandBack.ts), the relay of staged starts (startRelay.ts), the starts of its own process it
 * takes (localStartAcceptor.ts), lease-release signals (leaseReleaseSignals.ts), retention sweeps
 * (retentionSweeps.ts), the upkeep of its tables (tableUpkeep.ts), the ticks of its workflows' schedules (scheduleTicker.ts) — wires them to the process's wake-ups and to LISTEN/NOTIFY, and drains them
 * in order. Live passes are only a cache of the replay: everything needed to continue is in the
 * database.
 */
import { randomUUID } from "node:crypto"
import { internalsOf, type Akter } from "../akter.js"
import type { WorkflowImplementation } from "../engine/workflowApi.js"
import type { PassServices } from "../engine/pass.js"
import {
  claimedSnapshotColumn,
  readExecutionSnapshots,
  readExecutionStates,
  snapshotFromJson,
  type ExecutionSnapshot,
} from "../engine/executionStore.js"
import { stepBatchStatement, submitClaim } from "../engine/stepBatch.js"
import { StatementBatcher } from "../storage/statementBatcher.js"
import type { OwnerRegistration } from "../model/registration.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { claimDueTimers, type ClaimedRow } from "../outbox/outboxStore.js"
import { WAKE_CHANNEL, wakeIsFor } from "../outbox/notifications.js"
import { estimatedNow, localTimeWhenDue, wallTimeWhenEstimated } from "../storage/clock.js"
import { acceptManifests } from "./acceptManifests.js"
import { ClaimLoop } from "./claimLoop.js"
import { DatabaseHealth } from "./databaseHealth.js"
import { announceLeasesReleased, hearLeaseReleases } from "./leaseReleaseSignals.js"
import { LeaseKeeper, type LeaseChange } from "./leases.js"
import { EVENT_WAIT_MS, LivePasses, type PassesEnded } from "./livePasses.js"
import { LocalTimers } from "./localTimers.js"
import { acceptLocalStarts } from "./localStartAcceptor.js"
import {
  checkRetentionSchedule,
  scheduleRetentionSweeps,
  type RetentionSchedule,
} from "./retentionSweeps.js"
import { scheduleTableUpkeep } from "./tableUpkeep.js"
import { startScheduleTicker } from "./scheduleTicker.js"
import { servedWorkflows, workflowKeyOf } from "./servedWorkflows.js"
import { relayClaimedStart } from "./startRelay.js"
import { TimerHandBack } from "./timerHandBack.js"

export { FAST_POLL_MS } from "./claimLoop.js"

export interface RunnerOptions {
  readonly akter: Akter
  readonly workflows: readonly WorkflowImplementation[]
  /** Owner types this runner may start workflows of from `start` steps, beyond those it implements. */
  readonly registrations?: readonly OwnerRegistration[] | undefined
  /** Passes running at once (default 64). */
  readonly concurrency?: number | undefined
  /**
   * Fallback poll interval (default 1000 ms). While notifications do not reach the runner (a
   * connection pooler in transaction mode without `listenUrl`), it polls every 200 ms instead.
   */
  readonly pollMs?: number | undefined
  /** How far ahead a claim re-arms a timer: the time a dead runner's work waits (default 30 s). */
  readonly recoveryMs?: number | undefined
  /** How long an activity attempt's idempotency key stays valid (default 1 day). */
  readonly idempotencyWindowMs?: number | undefined
  /**
   * How long a bucket lease lasts without renewal: bounds the takeover after a crash (default 30 s;
   * shorter leases take over faster but are lost by a runner whose heartbeats a busy machine delays).
   */
  readonly leaseMs?: number | undefined
  /** How often leases are renewed and rebalanced (default a sixth of the lease). */
  readonly heartbeatMs?: number | undefined
  /**
   * The retention sweep this runner runs now and then (any runner may; they take turns): finished
   * executions, events below every open cursor, old receipts and unused manifests go after
   * `keepMs` (default 7 days), checked every `everyMs` (default 10 minutes), spending at most
   * `dutyCycle` of a sweep's time deleting (default 0.2). `false`: never.
   */
  readonly retention?: false | RetentionSchedule | undefined
}

export interface Runner {
  readonly id: string
  /** Executions with a live pass right now. */
  readonly live: number
  /** Stops claiming and abandons live passes without recording anything; another runner resumes them. */
  drain(): Promise<void>
  /** Drains, then releases the runner's connections. */
  close(): Promise<void>
  /** Claims and runs due work now instead of at the next poll. */
  poll(): void
  /** The buckets this runner currently leases. */
  readonly buckets: readonly number[]
}

const DEFAULT_CONCURRENCY = 64
const DEFAULT_POLL_MS = 1000
const DEFAULT_RECOVERY_MS = 30_000
const DEFAULT_IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
const DEFAULT_LEASE_MS = 30_000

/**
 * Starts a runner for the given workflow implementations. It first accepts its manifests against
 * the open executions (refusing to start if it could not replay some), then serves.
 *
 * @example
 * const runner = await startRunner({ akter, workflows: [fulfill] })
 * process.on("SIGTERM", () => runner.close())
 */
export const startRunner = async (options: RunnerOptions): Promise<Runner> => {
  const internals = internalsOf(options.akter)
  if (internals.tenant !== undefined) {
    throw new Error(
      "startRunner: this handle is restricted to one tenant (row-level-security mode); a runner serves every tenant and needs a handle connected as the tables' owner",
    )
  }
  // Before anything is accepted or started: a bad option refuses the runner, changing nothing.
  if (options.retention !== undefined && options.retention !== false) {
    checkRetentionSchedule(options.retention)
  }
  const id = `runner-${randomUUID()}`
  const log = internals.log.with({ runner: id })
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
  const recoveryMs = options.recoveryMs ?? DEFAULT_RECOVERY_MS
  const health = new DatabaseHealth(log)
  const served = servedWorkflows(options.workflows, options.registrations ?? [])
  const acceptedAt = await acceptManifests(internals, served.registered, [
    ...served.owners.values(),
  ])

  let draining = false
  /** Work under way (polls, passes, relays, hand-backs): a drain waits for all of it. */
  const running = new Set<Promise<void>>()
  const hold = (work: Promise<void>) => {
    running.add(work)
    work.finally(() => running.delete(work))
  }
  /** Pieces of work tracked so far: the outbox vacuum looks only after some. */
  let worked = 0
  const track = (work: Promise<void>) => {
    worked += 1
    hold(work)
  }

  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
  const leases: LeaseKeeper = new LeaseKeeper(
    internals.storage.db,
    internals.clock,
    id,
    { leaseMs, heartbeatMs: options.heartbeatMs ?? Math.max(50, Math.floor(leaseMs / 6)) },
    log,
    async (change: LeaseChange) => {
      internals.metrics.leasesChanged(change.acquired.length, change.lost.length)
      if (change.lost.length > 0) {
        timers.leasesLost(change.lost)
        passes.leasesLost(change.lost)
      }
      if (change.acquired.length > 0) {
        claims.lookUpDueTimes()
        poll()
      }
    },
    health,
  )
  /**
   * The local time by which the database's clock surely reads `dueAtMs`: the estimate, plus how far
   * the estimate may be off, since what is kept in memory fires without the database judging it.
   */
  const localTimeOf = (dueAtMs: number) => localTimeWhenDue(internals.clock, dueAtMs)
  /** Whether a pass of this owner suspending until `dueAtMs` (null: an event) may wait in memory. */
  const mayWait = (owner: OwnerPlacement, dueAtMs: number | null) =>
    !draining &&
    passes.mayWait(dueAtMs === null) &&
    (dueAtMs === null
      ? leases.holds(owner.bucket)
      : timers.mayKeep(owner.bucket, localTimeOf(dueAtMs)))
  const services: PassServices = {
    internals,
    log,
    now: () => estimatedNow(internals.clock),
    mayWrite: (bucket) => leases.holds(bucket),
    idempotencyWindowMs: options.idempotencyWindowMs ?? DEFAULT_IDEMPOTENCY_WINDOW_MS,
    implementationOf: (owner, workflow) =>
      served.implementations.get(workflowKeyOf(owner, workflow)),
    ownerOf: (owner) => served.owners.get(owner),
    acceptedAtOf: (owner, workflow) => acceptedAt.get(workflowKeyOf(owner, workflow)) ?? -1,
    snapshots: new StatementBatcher((keys) => readExecutionSnapshots(internals.storage.db, keys)),
    executionStates: new StatementBatcher((keys) =>
      readExecutionStates(internals.storage.db, keys),
    ),
    residency: {
      mayWait,
      enter: (owner, executionId, dueAtMs, resume) => {
        const resumed = () => {
          passes.stopsWaiting(executionId)
          resume()
        }
        if (
          !mayWait(owner, dueAtMs) ||
          (dueAtMs !== null &&
            !timers.keepWaiting(
              owner,
              executionId,
              localTimeOf(dueAtMs),
              resumed,
              wallTimeWhenEstimated(internals.clock, dueAtMs),
            ))
        ) {
          return false
        }
        // Waiting for an event alone (a claim of its timer resumes it), for a short while. Its
        // slot is free (`slotFreed` below, if it had not given it up while it suspended).
        passes.waits(executionId, dueAtMs === null ? EVENT_WAIT_MS : undefined)
        return true
      },
      left: (executionId) => {
        timers.forget(executionId)
        passes.stopsWaiting(executionId)
      },
    },
    releaseSlot: (executionId) => passes.releaseSlot(executionId),
    stepBatcher: new StatementBatcher(
      stepBatchStatement(
        internals.storage.db,
        internals.clock,
        internals.storage.backend === "postgres",
      ),
    ),
  }
  const handBack = new TimerHandBack(internals, log, health)
  const passes: LivePasses = new LivePasses({
    internals,
    log,
    services,
    manifests: served.manifests,
    health,
    handBack,
    holds: (bucket) => leases.holds(bucket),
    ended: (ended) => passesEnded(ended),
    // Fired timers take a freed slot first, then the claim loop.
    slotFreed: () => {
      timers.slotFreed()
      claims.passesEnded(undefined, false)
    },
  })
  const timers: LocalTimers = new LocalTimers({
    holds: (bucket) => leases.holds(bucket),
    leaseValidUntil: () => leases.heldUntil,
    free: () => concurrency - passes.slotsTaken,
    claim: (due) =>
      claimDueTimers(
        internals.storage.db,
        internals.clock,
        due,
        leases.buckets,
        recoveryMs,
        claimedSnapshotColumn,
      ),
    dispatch: (row) => dispatch(row),
    unclaimed: (error) => {
      if (error !== undefined && !health.failed(error)) {
        log.warn("could not claim timers due here", { error: String(error) })
      }
      // The claim loop finds them by their due times, as it finds any timer.
      claims.lookUpDueTimes()
      poll()
    },
    track,
  })
  /**
   * An execution's passes here ended: its timer, if due soon, is kept in memory; the freed slot
   * goes to fired timers first, then to the claim loop.
   */
  const passesEnded = ({ owner, executionId, guest, dueAt, claimNow }: PassesEnded) => {
    const kept = !guest && dueAt !== undefined && timers.keep(owner, executionId, dueAt)
    timers.slotFreed()
    claims.passesEnded(kept ? undefined : dueAt, claimNow)
  }

  /** What the claim read for the row's pass: undefined when it read nothing, null: no execution. */
  const snapshotOfClaimed = (row: ClaimedRow): ExecutionSnapshot | null | undefined =>
    row.attached === undefined ? undefined : snapshotFromJson(row.attached)
  /** Routes a claimed row: a staged start to the relay, a timer to its execution's pass. */
  const dispatch = (row: ClaimedRow) => {
    if (row.kind === "start") {
      track(relayClaimedStart(internals, log, health, served.owners, row))
      return
    }
    const guest = !leases.holds(row.bucket)
    if (guest && !row.wanted) {
      // The lease lapsed between the claim and now: hand the timer back rather than leave it a
      // recovery interval ahead, so whoever holds the bucket next resumes it at once.
      track(handBack.dueNow([{ routingKey: row.routingKey, executionId: row.id }]))
      return
    }
    timers.forget(row.id)
    if (passes.rerun(row.id, row.pokes)) return
    const owner = {
      tenant: row.tenant,
      ownerType: row.ownerType,
      ownerId: row.ownerId,
      routingKey: row.routingKey,
      bucket: row.bucket,
    }
    track(passes.run(owner, row.id, guest, undefined, snapshotOfClaimed(row)))
  }
  const claims: ClaimLoop = new ClaimLoop({
    internals,
    log,
    health,
    leases,
    // The claim rides the next step batch the runner sends, or goes alone if none is waiting.
    claim: (buckets, limit) =>
      submitClaim(services.stepBatcher, {
        buckets,
        served: served.manifests,
        recoveryMs,
        limit,
      }),
    concurrency,
    pollMs: options.pollMs ?? DEFAULT_POLL_MS,
    running: () => passes.slotsTaken + timers.waiting,
    now: services.now,
    dispatch,
    track,
  })
  const poll = () => claims.poll()

  const stopBucketWakeups = internals.wakeups.onBucket(poll)
  /** Whether the runner may take work of the bucket now: not draining, and leasing it. */
  const serves = (bucket: number) => !draining && leases.holds(bucket)
  const stopTakingStarts = acceptLocalStarts({
    internals,
    passes,
    implementations: served.implementations,
    concurrency,
    owed: () => timers.waiting,
    recoveryMs,
    serves,
    track,
  })
  // An emit of this process hands the pokes it committed to the passes here waiting for them.
  const stopTakingPokes = internals.wakeups.takePokes({
    serves,
    take: (bucket, { executionId, pokes, event }) => {
      if (!serves(bucket) || !passes.has(executionId)) return false
      timers.forget(executionId)
      return passes.rerun(executionId, pokes, event)
    },
  })
  // A wake of another runner's bucket finds nothing here: an empty claim would only cost a statement.
  const stopListening = await internals.storage.listen(WAKE_CHANNEL, (payload) => {
    if (wakeIsFor(payload, serves)) poll()
  })
  const leaseReleases = await hearLeaseReleases(internals, () => leases.nudge())
  // Notifications sent while the LISTEN session was away were missed: one catch-up poll, looking
  // up due times again, and a heartbeat in case buckets were released meanwhile.
  const stopCatchingUp = internals.storage.onListenRestored(() => {
    claims.lookUpDueTimes()
    poll()
    leases.nudge()
  })
  const stopResuming = health.onBack(() => {
    const timers = handBack.takeRemembered()
    claims.lookUpDueTimes()
    if (timers.length > 0) track(handBack.dueNow(timers).then(poll))
    else poll()
  })
  claims.notificationsChanged(internals.storage.notifications())
  const stopWatchingNotifications = internals.storage.onNotifications((status) =>
    claims.notificationsChanged(status),
  )
  await leases.start()
  const stopSweeping =
    options.retention === false
      ? () => {}
      : scheduleRetentionSweeps(internals, log, options.retention ?? {})
  const stopUpkeep = scheduleTableUpkeep({
    internals,
    log,
    health,
    worked: () => worked,
    track: hold,
  })
  const removeGauges = internals.metrics.addRunner({
    runnersAlive: () => leases.runnersAlive,
    buckets: () => leases.buckets.length,
    passes: () => passes.size,
  })
  const stopTicking = await startScheduleTicker({
    akter: options.akter,
    internals,
    log,
    health,
    runnerId: id,
    claimMs: leaseMs,
    owners: [...new Set(served.registered.map((workflow) => workflow.owner))].map((owner) =>
      served.owners.get(owner)!,
    ),
    implements: (owner, workflow) => served.implementations.has(workflowKeyOf(owner, workflow)),
    track,
  })
  log.info("runner started", {
    workflows: [...served.implementations.keys()],
    backend: internals.storage.backend,
    buckets: leases.buckets.length,
  })
  poll()

  const drain = async () => {
    if (draining) return
    draining = true
    claims.stop()
    timers.stop()
    stopTicking()
    stopSweeping()
    stopUpkeep()
    stopBucketWakeups()
    leaseReleases.stopHearing()
    stopCatchingUp()
    stopResuming()
    stopWatchingNotifications()
    removeGauges()
    stopTakingStarts()
    stopTakingPokes()
    const abandoned = passes.drain()
    while (running.size > 0) await Promise.allSettled([...running])
    // Their claims moved their timers a recovery interval ahead; whoever takes over starts now.
    await handBack.dueNow(abandoned)
    await leases.release()
    // Other runners take the buckets now rather than at their next heartbeat.
    await announceLeasesReleased(internals, id)
    log.info("runner drained")
  }

  return {
    id,
    get live() {
      return passes.size
    },
    drain,
    close: async () => {
      await drain()
      await stopListening()
      await leaseReleases.stopListening()
    },
    poll,
    get buckets() {
      return leases.buckets
    },
  }
}
