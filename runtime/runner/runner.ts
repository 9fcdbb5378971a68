/**
 * A runner: registers implemented workflows and serves the buckets it holds. It claims due timers
 * (`FOR UPDATE SKIP LOCKED`, re-armed a recovery interval ahead in the same statement), runs one pass
 * at a time per execution, relays staged starts, and is woken by commits in this process, by
 * LISTEN/NOTIFY on Postgres, and by polling as the fallback. Live passes are only a cache of the
 * replay: everything needed to continue is in the database.
 */
import { randomUUID } from "node:crypto"
import { internalsOf, type Akter } from "../akter.js"
import type { WorkflowImplementation } from "../engine/workflowApi.js"
import { runPass, type PassControl, type PassOutcome, type PassServices } from "../engine/pass.js"
import { readExecutionSnapshots, type UnstartedExecution } from "../engine/executionStore.js"
import { writeStepBatch } from "../engine/stepStore.js"
import { StatementBatcher } from "../storage/statementBatcher.js"
import type { OwnerRegistration, WorkflowRegistration } from "../model/registration.js"
import { Activation } from "../owners/fence.js"
import { placeOwner, type OwnerPlacement } from "../owners/routing.js"
import {
  claimDue,
  deleteClaimedPart,
  makeDueNow,
  markWanted,
  nextDue,
  type ClaimedRow,
} from "../outbox/outboxStore.js"
import { LEASES_CHANNEL, WAKE_CHANNEL } from "../outbox/wakeups.js"
import { faultPoint } from "../faults.js"
import { LeaseKeeper, type LeaseChange } from "./leases.js"
import { sql } from "kysely"
import { startParts, startSelect } from "../client/startExecution.js"
import { composeStatement } from "../storage/statementParts.js"
import { decodeJson, encodeJson } from "../storage/codec.js"
import { estimatedNow, timeoutDelay } from "../storage/clock.js"
import type { Caller } from "../model/caller.js"
import { acceptManifests } from "./acceptManifests.js"
import { sweepRetention } from "../retention/sweepRetention.js"

export interface RunnerOptions {
  readonly akter: Akter
  readonly workflows: readonly WorkflowImplementation[]
  /** Owner types this runner may start workflows of from `start` steps, beyond those it implements. */
  readonly registrations?: readonly OwnerRegistration[]
  /** Passes running at once (default 64). */
  readonly concurrency?: number
  /** Fallback poll interval (default 1000 ms). */
  readonly pollMs?: number
  /** How far ahead a claim re-arms a timer: the time a dead runner's work waits (default 30 s). */
  readonly recoveryMs?: number
  /** How long an activity attempt's idempotency key stays valid (default 1 day). */
  readonly idempotencyWindowMs?: number
  /**
   * How long a bucket lease lasts without renewal: bounds the takeover after a crash (default 30 s;
   * shorter leases take over faster but are lost by a runner whose heartbeats a busy machine delays).
   */
  readonly leaseMs?: number
  /** How often leases are renewed and rebalanced (default a sixth of the lease). */
  readonly heartbeatMs?: number
  /**
   * The retention sweep this runner runs now and then (any runner may; they take turns): finished
   * executions, events below every open cursor, old receipts and unused manifests go after
   * `keepMs` (default 7 days), checked every `everyMs` (default 10 minutes). `false`: never.
   */
  readonly retention?: false | { readonly keepMs?: number; readonly everyMs?: number }
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
/** The soonest a look-ahead schedules the next poll. */
const MIN_LOOK_AHEAD_MS = 5
const DEFAULT_RECOVERY_MS = 30_000
/** Why a runner abandons the live passes of a bucket whose lease it lost. */
const LEASE_LOST = "bucket lease lost"
const DEFAULT_IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000
const DEFAULT_LEASE_MS = 30_000
const DEFAULT_RETENTION_EVERY_MS = 10 * 60 * 1000

const ownerKeyOf = (owner: OwnerPlacement) =>
  JSON.stringify([owner.tenant, owner.ownerType, owner.ownerId])

interface LiveRun {
  control: PassControl | undefined
  /** A claim arrived while the pass ran: replay once more if it suspends. */
  rerun: boolean
}

interface StagedStart {
  readonly executionId: string
  readonly ownerType: string
  readonly ownerId: string
  readonly workflow: string
  readonly key: string
  readonly input: unknown
  readonly caller: Caller
}

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
  const id = `runner-${randomUUID()}`
  const log = internals.log.with({ runner: id })
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS
  const recoveryMs = options.recoveryMs ?? DEFAULT_RECOVERY_MS

  const implementations = new Map<string, WorkflowImplementation>()
  const owners = new Map<string, OwnerRegistration>()
  // Every owner type reachable through start steps is known, so staged starts can be relayed.
  const addOwner = (registration: OwnerRegistration) => {
    if (owners.has(registration.owner)) return
    owners.set(registration.owner, registration)
    for (const workflow of Object.values(registration.workflows)) {
      for (const settings of Object.values(workflow.steps)) {
        if (settings.target !== undefined) addOwner(settings.target())
      }
    }
  }
  for (const registration of options.registrations ?? []) addOwner(registration)
  for (const implementation of options.workflows) {
    const key = `${implementation.owner.owner}/${implementation.workflow}`
    if (implementations.has(key)) throw new Error(`workflow ${key} is implemented twice`)
    implementations.set(key, implementation)
    addOwner(implementation.owner)
  }
  const registered: WorkflowRegistration[] = [...implementations.values()].map(
    (implementation) => implementation.owner.workflows[implementation.workflow]!,
  )
  /** The manifests this runner serves: it also takes executions, anywhere, that want one of them. */
  const served: readonly string[] = registered.map((workflow) => workflow.hashes.compatibility)
  const acceptedAt = await acceptManifests(internals, registered, [...owners.values()])

  let leases: LeaseKeeper | undefined
  const services: PassServices = {
    internals,
    log,
    now: () => estimatedNow(internals.clock),
    mayWrite: (bucket) => leases?.holds(bucket) === true,
    idempotencyWindowMs: options.idempotencyWindowMs ?? DEFAULT_IDEMPOTENCY_WINDOW_MS,
    implementationOf: (owner, workflow) => implementations.get(`${owner}/${workflow}`),
    ownerOf: (owner) => owners.get(owner),
    acceptedAtOf: (owner, workflow) => acceptedAt.get(`${owner}/${workflow}`) ?? -1,
    snapshots: new StatementBatcher((keys) => readExecutionSnapshots(internals.storage.db, keys)),
    stepBatcher: new StatementBatcher((writes) =>
      writeStepBatch(
        internals.storage.db,
        internals.clock,
        writes,
        internals.storage.backend === "postgres",
      ),
    ),
  }

  const live = new Map<
    string,
    LiveRun & { readonly bucket: number; readonly owner: OwnerPlacement }
  >()
  const activations = new Map<
    string,
    { readonly bucket: number; readonly activation: Activation }
  >()
  const running = new Set<Promise<void>>()
  let draining = false
  let polling = false
  let pollAgain = false
  /** The last claim filled every free slot: more may be due, so a finished pass polls again. */
  let saturated = false
  /**
   * Due times this runner did not set itself (buckets just acquired, or at start) are unknown until
   * looked up once; after that, its own suspends schedule its wake-ups.
   */
  let lookAhead = true
  let pollTimer: ReturnType<typeof setTimeout> | undefined
  let pollTimerAt = Number.POSITIVE_INFINITY

  const track = (work: Promise<void>) => {
    running.add(work)
    work.finally(() => running.delete(work))
  }

  /** Schedules a poll at `at` (local time), keeping only the earliest pending one. */
  const pollAt = (at: number) => {
    if (draining || at >= pollTimerAt) return
    if (pollTimer !== undefined) clearTimeout(pollTimer)
    pollTimerAt = at
    pollTimer = setTimeout(
      () => {
        pollTimer = undefined
        pollTimerAt = Number.POSITIVE_INFINITY
        // Only the earliest due time is kept as a timer: the poll it starts looks up the next one,
        // or a sleep due a moment after another would wait for the fallback poll.
        lookAhead = true
        poll()
      },
      timeoutDelay(at - Date.now()),
    )
  }

  /**
   * The runner's activation of an owner, one per lease of its bucket. Its first write advances the
   * owner's generation, so whoever served the owner before can commit nothing more.
   */
  const activationOf = (owner: OwnerPlacement): Activation => {
    const key = ownerKeyOf(owner)
    let entry = activations.get(key)
    if (entry === undefined) {
      entry = { bucket: owner.bucket, activation: new Activation(owner) }
      activations.set(key, entry)
    }
    return entry.activation
  }

  const onLeaseChange = async (change: LeaseChange) => {
    if (change.lost.length > 0) {
      const lost = new Set(change.lost)
      for (const [key, entry] of activations) if (lost.has(entry.bucket)) activations.delete(key)
      for (const run of live.values()) if (lost.has(run.bucket)) run.control?.abandon(LEASE_LOST)
    }
    if (change.acquired.length > 0) {
      lookAhead = true
      poll()
    }
  }

  /**
   * Makes timers this runner claimed but will not run due now, rather than a recovery interval
   * ahead as the claim set them. Best effort: if it fails, the recovery interval still resumes them.
   */
  const makeDueAgain = (timers: readonly { routingKey: string; executionId: string }[]) =>
    makeDueNow(internals.storage.db, internals.clock, timers).catch((error) =>
      log.warn("could not make claimed timers due again", { error: String(error) }),
    )

  const runExecution = async (
    owner: OwnerPlacement,
    executionId: string,
    guest = false,
    /** A start this runner took: its first pass reads nothing, and its first write starts it. */
    start?: UnstartedExecution,
  ) => {
    const entry: LiveRun & { readonly bucket: number; readonly owner: OwnerPlacement } = {
      control: undefined,
      rerun: false,
      bucket: owner.bucket,
      owner,
    }
    live.set(executionId, entry)
    internals.wakeups.passStarted(executionId)
    // A guest's activation is its own, for all its passes: the owner is in another runner's bucket.
    const guestActivation = guest ? new Activation(owner) : undefined
    let outcome: PassOutcome | undefined
    let unstarted = start
    let pollAfterward = false
    try {
      for (;;) {
        const activation = guestActivation ?? activationOf(owner)
        outcome = await runPass(
          services,
          owner,
          executionId,
          activation,
          (control) => {
            entry.control = control
          },
          { guest, ...(unstarted === undefined ? {} : { start: unstarted }) },
        )
        unstarted = undefined
        if (outcome.kind === "incompatible" && !served.includes(outcome.manifestHash)) {
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
            activations.delete(ownerKeyOf(owner))
            // A start folded into the refused write committed with its timer due now: claim it
            // under a new activation.
            if (start !== undefined) pollAfterward = true
          } else if (outcome.reason === LEASE_LOST || outcome.reason.includes("LeaseExpired")) {
            // The runner's own guard, before the fence: its lease lapsed (a pause, a slow heartbeat).
            log.info("write withheld: the bucket's lease lapsed", { executionId })
            // Its claim moved the timer a recovery interval ahead; whoever holds the bucket now
            // (this runner, once its heartbeat takes it back) resumes it at once instead.
            await makeDueAgain([{ routingKey: owner.routingKey, executionId }])
          } else log.debug("pass abandoned", { executionId, reason: outcome.reason })
        }
        // A start folded into the pass found the execution already there (a concurrent start of
        // the same key wrote it first): a claim of it while the pass ran is served now.
        const attached = outcome.kind === "abandoned" && outcome.reason.includes("StartAttached")
        if (
          (outcome.kind !== "suspended" && !attached) ||
          !entry.rerun ||
          draining ||
          (!guest && !leases!.holds(owner.bucket))
        ) {
          break
        }
        entry.rerun = false
      }
    } catch (error) {
      log.error("pass failed; its timer resumes it", { executionId, error: String(error) })
    } finally {
      // A start whose pass ended before writing it was not taken: its caller writes it. (A start
      // already told what came of it ignores this.)
      start?.settled("not-taken")
      live.delete(executionId)
      // After its slot is free: a caller told of the result may start its next execution here.
      internals.wakeups.passEnded(
        executionId,
        outcome?.kind === "finished" ? outcome.result : undefined,
      )
    }
    if (outcome?.kind === "suspended" && outcome.dueAtMs !== null) {
      pollAt(Date.now() + Math.max(0, outcome.dueAtMs - services.now()))
    }
    if (saturated || pollAfterward) poll()
  }

  const relayStart = async (row: ClaimedRow) => {
    const staged = decodeJson(row.payload!) as StagedStart
    const workflow = owners.get(staged.ownerType)?.workflows[staged.workflow]
    if (workflow === undefined) {
      log.warn("staged start names a workflow this runner does not know; left for another runner", {
        executionId: staged.executionId,
      })
      return
    }
    const owner = {
      tenant: row.tenant,
      ownerType: staged.ownerType,
      ownerId: staged.ownerId,
    }
    const placement = placeOwner(owner)
    faultPoint("relay.before")
    // The start and the removal of the staged row commit together: relayed exactly once.
    const { head, tail, inserted } = startParts(
      internals,
      {
        owner: placement,
        workflow,
        executionId: staged.executionId,
        key: staged.key,
        input: encodeJson(staged.input),
        caller: JSON.stringify(staged.caller),
      },
      { awaited: false },
    )
    await composeStatement(
      [...head, ...tail, deleteClaimedPart(row)],
      startSelect(internals, placement, inserted),
    ).execute(internals.storage.db)
    faultPoint("relay.after")
    internals.wakeups.wakeBucket(placement.bucket)
  }

  const dispatch = (row: ClaimedRow) => {
    if (row.kind === "start") {
      track(
        relayStart(row).catch((error) =>
          log.error("relaying a staged start failed; it is retried", {
            id: row.id,
            error: String(error),
          }),
        ),
      )
      return
    }
    const guest = !leases!.holds(row.bucket)
    if (guest && !row.wanted) {
      // The lease lapsed between the claim and now: hand the timer back rather than leave it a
      // recovery interval ahead, so whoever holds the bucket next resumes it at once.
      track(makeDueAgain([{ routingKey: row.routingKey, executionId: row.id }]))
      return
    }
    const existing = live.get(row.id)
    if (existing !== undefined) {
      existing.rerun = true
      existing.control?.wake()
      return
    }
    const owner: OwnerPlacement = {
      tenant: row.tenant,
      ownerType: row.ownerType,
      ownerId: row.ownerId,
      routingKey: row.routingKey,
      bucket: row.bucket,
    }
    track(runExecution(owner, row.id, guest))
  }

  const poll = () => {
    if (draining) return
    if (polling) {
      pollAgain = true
      return
    }
    polling = true
    const run = async () => {
      do {
        pollAgain = false
        const free = Math.max(0, concurrency - live.size)
        const buckets = leases!.buckets.filter((bucket) => leases!.holds(bucket))
        let claimed: ClaimedRow[] = []
        if (free > 0) {
          faultPoint("claim.before")
          claimed = await claimDue(
            internals.storage.db,
            internals.clock,
            buckets,
            served,
            free,
            recoveryMs,
          )
          faultPoint("claim.after")
        }
        for (const row of claimed) dispatch(row)
        saturated = free === 0 || claimed.length === free
        if (claimed.length === free && free > 0) pollAgain = true
        if (lookAhead && !pollAgain && free > 0 && buckets.length > 0) {
          lookAhead = false
          const due = await nextDue(internals.storage.db, buckets)
          // A row already due that this claim did not get is locked by another claimer: look again
          // shortly rather than spin.
          if (due !== null) pollAt(Date.now() + Math.max(MIN_LOOK_AHEAD_MS, due - services.now()))
        }
      } while (pollAgain && !draining)
    }
    track(
      run()
        .catch((error) => {
          if (!draining) log.error("poll failed", { error: String(error) })
        })
        .finally(() => {
          polling = false
          if (!draining) pollAt(Date.now() + pollMs)
        }),
    )
  }

  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
  leases = new LeaseKeeper(
    internals.storage.db,
    internals.clock,
    id,
    { leaseMs, heartbeatMs: options.heartbeatMs ?? Math.max(50, Math.floor(leaseMs / 6)) },
    log,
    onLeaseChange,
  )
  const stopBucketWakeups = internals.wakeups.onBucket(() => poll())
  const readiness = (bucket: number, ownerType: string, workflow: string) =>
    !draining &&
    leases?.holds(bucket) === true &&
    live.size < concurrency &&
    implementations.has(`${ownerType}/${workflow}`)
      ? recoveryMs
      : undefined
  const stopTakingStarts = internals.wakeups.onStart({
    readiness,
    take: (owner, start) => {
      const { execution_id: executionId, workflow } = start.snapshot.execution
      if (readiness(owner.bucket, owner.ownerType, workflow) === undefined) return false
      // A pass of it already runs here: the execution exists, and a start attaches.
      if (live.has(executionId)) return false
      track(runExecution(owner, executionId, false, start))
      return true
    },
  })
  const stopLeaseWakeups = internals.wakeups.onLeasesReleased(() => leases?.nudge())
  const stopListening = await internals.storage.listen(WAKE_CHANNEL, () => poll())
  const stopListeningLeases = await internals.storage.listen(LEASES_CHANNEL, () => leases?.nudge())
  await leases.start()
  const retention = options.retention === false ? undefined : (options.retention ?? {})
  let retentionTimer: ReturnType<typeof setTimeout> | undefined
  const scheduleRetention = () => {
    if (retention === undefined || draining) return
    const everyMs = retention.everyMs ?? DEFAULT_RETENTION_EVERY_MS
    // Jitter, so runners started together do not all sweep at once.
    retentionTimer = setTimeout(
      () => {
        sweepRetention(
          internals,
          retention.keepMs === undefined ? {} : { keepMs: retention.keepMs },
        )
          .then((report) => {
            if (report.executions + report.events + report.receipts + report.manifests > 0) {
              log.info("retention sweep", { ...report })
            }
          })
          .catch((error) => log.error("retention sweep failed", { error: String(error) }))
          .finally(scheduleRetention)
      },
      everyMs * (0.75 + Math.random() / 2),
    )
    retentionTimer.unref?.()
  }
  scheduleRetention()
  log.info("runner started", {
    workflows: [...implementations.keys()],
    backend: internals.storage.backend,
    buckets: leases.buckets.length,
  })
  poll()

  const drain = async () => {
    if (draining) return
    draining = true
    if (pollTimer !== undefined) clearTimeout(pollTimer)
    if (retentionTimer !== undefined) clearTimeout(retentionTimer)
    stopBucketWakeups()
    stopLeaseWakeups()
    stopTakingStarts()
    const abandoned = [...live.entries()].map(([executionId, run]) => ({
      routingKey: run.owner.routingKey,
      executionId,
    }))
    for (const run of live.values()) run.control?.abandon("runner draining")
    while (running.size > 0) await Promise.allSettled([...running])
    // Their claims moved their timers a recovery interval ahead; whoever takes over starts now.
    await makeDueAgain(abandoned)
    await leases!.release()
    // Other runners take the buckets now rather than at their next heartbeat.
    if (internals.storage.backend === "postgres") {
      await sql`SELECT pg_notify(${LEASES_CHANNEL}, ${id})`.execute(internals.storage.db)
    }
    internals.wakeups.leasesReleased()
    log.info("runner drained")
  }

  return {
    id,
    get live() {
      return live.size
    },
    drain,
    close: async () => {
      await drain()
      await stopListening()
      await stopListeningLeases()
    },
    poll,
    get buckets() {
      return leases!.buckets
    },
  }
}
