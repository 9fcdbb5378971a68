/**
 * One pass over an execution: read what is recorded, judge whether this runner may replay it, run
 * the body against the record (settled steps return their exits, the first unsettled step of each
 * branch does new work), and end in exactly one of four ways — finished (result recorded, steps and
 * timer deleted in the same transaction), suspended (every branch parked; status and timer written
 * under the owner lock), abandoned (lost the right to write, or drained: nothing more recorded), or
 * left alone as incompatible.
 *
 * A pass that suspends on a timer due soon, or on events alone, may wait in memory instead of
 * ending (its runner's `Residency`): the suspend is written all the same, so the database holds the
 * truth and a crash loses nothing, and the body stays where it parked. When the timer is due the
 * runner resumes it — no claim, no replay — and when a claim of its timer comes (an emit, an
 * interrupt, a child's finish poked it) the claim resumes it instead of starting a new pass: its
 * parked steps re-check (a wait scans the log again, the interrupt flag is re-read), and it goes on
 * as if it had never stopped; its next write sets the execution running again, behind the same
 * fence. A deadline, a lost lease, a drain or the runner's limit on waiting end it as suspended, as
 * written, and a new pass takes the execution up from the record.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { AkterInternals } from "../akter.js"
import { executionVerdict } from "../compatibility/executionVerdict.js"
import { compatibilityHashOf } from "../compatibility/rules.js"
import type { Finding } from "../compatibility/finding.js"
import { interruptCauseOf, type InterruptCause, type StoredResult } from "../model/exit.js"
import type { HandedEvent } from "../events/eventLog.js"
import type { Hash } from "../model/hash.js"
import type { ExecutionOutcome } from "../storage/database.js"
import type { OwnerRegistration } from "../model/registration.js"
import type { Activation } from "../owners/fence.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { armTimerPart, deleteTimerPart, pokePlacedTimersPart } from "../outbox/outboxStore.js"
import {
  FINISHED_CHANNEL,
  finishedPayloadOfRow,
  notification,
  notifyColumn,
  WAKE_CHANNEL,
  wakePayloadOfRow,
} from "../outbox/notifications.js"
import { sql } from "kysely"
import { faultPoint } from "../faults.js"
import { fenceHeld } from "../owners/fence.js"
import { countOf, existsIn } from "../storage/statementParts.js"
import { nowMs } from "../storage/clock.js"
import { decodeJson, encodeJson } from "../storage/codec.js"
import { readManifest, recordStartManifestPart } from "../storage/manifestStore.js"
import type { Logger } from "../log.js"
import { parentSpanOf, traced } from "../tracing.js"
import { mayHaveOpenChildren, sweepChildren } from "./parentClose.js"
import {
  awaitingParentPart,
  finishExecutionPart,
  readExecutionState,
  type ExecutionSnapshot,
  type ExecutionState,
  type ExecutionStateReader,
  type GroupOfExecutions,
  type SnapshotReader,
  type UnstartedExecution,
} from "./executionStore.js"
import { PassState, type Parked } from "./passState.js"
import {
  admissionParts,
  admittedBuckets,
  groupOfRow,
  lockGroupStatement,
} from "./concurrencyGroups.js"
import { PassWriter } from "./passWriter.js"
import { describeCause } from "./describeDefect.js"
import { migrateRecorded, recordableExit } from "./recordedExits.js"
import { makeStepEnvironment } from "./stepEnvironment.js"
import { buildSteps } from "./steps.js"
import { deleteStepsPart, recordScannedPart, unseenEventsPart } from "./stepStore.js"
import type { StepBatcher } from "./stepBatch.js"
import { InterruptRequested, PassAbandoned, RecordedDefect } from "./signals.js"
import type { WorkflowImplementation } from "./workflowApi.js"

export type PassOutcome =
  | {
      readonly kind: "finished"
      /** The result this pass recorded, for callers awaiting it in this process. */
      readonly result?: Buffer
    }
  | { readonly kind: "suspended"; readonly dueAtMs: number | null }
  | { readonly kind: "abandoned"; readonly reason: string }
  | {
      readonly kind: "incompatible"
      readonly problems: readonly Finding[]
      /** The manifest the execution started under (or was adopted onto): what a runner needs. */
      readonly manifestHash: string
    }

/** What a pass needs from the runner that runs it. */
export interface PassServices {
  readonly internals: AkterInternals
  readonly log: Logger
  readonly now: () => number
  readonly idempotencyWindowMs: number
  readonly implementationOf: (owner: string, workflow: string) => WorkflowImplementation | undefined
  readonly ownerOf: (owner: string) => OwnerRegistration | undefined
  /** Accepted time of the runner's own manifest of a workflow (-1 when it never accepted one). */
  readonly acceptedAtOf: (owner: string, workflow: string) => number
  /** Whether the runner still leases the bucket: a write is refused before it starts otherwise. */
  readonly mayWrite: (bucket: number) => boolean
  /** Sends the step writes of the runner's concurrent passes together. */
  readonly stepBatcher: StepBatcher
  /** Reads what the runner's concurrent passes replay from together. */
  readonly snapshots: SnapshotReader
  /** Reads the states of executions (awaited children) that concurrent steps ask for together. */
  readonly executionStates: ExecutionStateReader
  /** Where a pass suspending on a timer due soon may wait in memory; none: every suspend ends it. */
  readonly residency?: Residency
  /**
   * The pass runs none of the workflow's code until it ends or resumes — its body is parked while
   * its suspend is written, or its body and compensations are done and its result is written — so
   * its slot may go to other work.
   */
  readonly releaseSlot?: (executionId: string) => void
}

/**
 * Where a suspended pass may wait in memory for its timer (a runner's slots, leases and local
 * timers decide): it is resumed when the timer is due, without a claim or a replay.
 */
export interface Residency {
  /**
   * Asked before the suspend: whether a pass of this owner suspending until `dueAtMs` (null: until
   * an event) may wait.
   */
  mayWait(owner: OwnerPlacement, dueAtMs: number | null): boolean
  /**
   * The pass suspended, its timer armed at `dueAtMs` (the database's clock; null: none, only an
   * event makes it due): it waits in memory, holding no slot, until `resume` is called or a claim
   * of its timer resumes it (`PassControl.claimed`); false when it may not wait after all.
   */
  enter(
    owner: OwnerPlacement,
    executionId: string,
    dueAtMs: number | null,
    resume: () => void,
  ): boolean
  /** A waiting pass ended before its resume (a deadline, a lost lease, a drain, its time up). */
  left(executionId: string): void
}

/** The runner's lease of the owner's bucket ran out before a write; the pass stops. */
export class LeaseExpired extends Error {
  constructor(readonly bucket: number) {
    super(`the lease of bucket ${bucket} ran out; this runner no longer serves it`)
    this.name = "LeaseExpired"
  }
}

export interface PassControl {
  /** Parked steps re-check (an event, a due time); the interrupt flag is re-read. */
  wake(): void
  /**
   * A claim of the execution's timer, or an emit of this process that poked it (handing its
   * `event`), the row poked `pokes` times since: a pass waiting in memory resumes for it, as a new
   * pass would start (true); otherwise false, and nothing changes.
   */
  claimed(pokes: number, event?: HandedEvent): boolean
  /** Ends the pass recording nothing more (drain, lost lease). */
  abandon(reason: string): void
}

type Ending =
  | {
      readonly kind: "park"
      readonly parked: ReadonlyMap<string, Parked>
      readonly due: number | null
    }
  | { readonly kind: "abandon"; readonly reason: string }
  /** The suspend is written (the pass waited in memory, or was to): the pass ends with it. */
  | { readonly kind: "suspended"; readonly outcome: PassOutcome }

const collapseSteps = (state: PassState) =>
  [...state.recorded.entries()]
    .filter(([, rows]) => rows.length > 0)
    .map(([name, rows]) => ({
      name,
      kind: rows[0]!.kind as Exclude<(typeof rows)[number]["kind"], "version">,
      settled: rows.some((row) => row.exit !== null),
    }))

/** Node's timers hold at most 2^31 - 1 ms; a deadline further off is left to the wakes. */
const MAX_TIMER_MS = 2_147_483_647

/**
 * Calls `fire` when the execution's deadline passes by the runner's clock (checked again when the
 * timer fires: a start recorded in this pass may have moved its estimate a little later), if it
 * has one ahead within reach of a timer. Returns the way to stop it.
 */
const watchDeadline = (state: PassState, fire: () => void): (() => void) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const arm = () => {
    const deadline = state.deadlineAtMs
    if (deadline === null || state.interrupting) return
    const delay = deadline - state.now()
    if (delay <= 0) return fire()
    if (delay > MAX_TIMER_MS) return
    timer = setTimeout(arm, delay)
    timer.unref?.()
  }
  arm()
  return () => clearTimeout(timer)
}

const causeHas = (cause: Cause.Cause<unknown>, type: new (...args: never[]) => Error) =>
  cause.reasons.some((reason) => Cause.isDieReason(reason) && reason.defect instanceof type)

/**
 * Runs one pass. `control` is filled synchronously so the runner can wake or abandon the pass while
 * it runs.
 */
export const runPass = async (
  services: PassServices,
  owner: OwnerPlacement,
  executionId: string,
  activation: Activation,
  control: (control: PassControl) => void,
  options: {
    /**
     * A guest pass runs an execution outside the runner's buckets (its timer wanted this runner's
     * manifest): it holds no lease to lose, and the fence alone keeps its writes safe.
     */
    readonly guest?: boolean
    /** A start the runner took: the pass replays nothing, and its first write records the start. */
    readonly start?: UnstartedExecution
    /**
     * What the pass replays from, read by the claim that brought it (null: the execution is gone);
     * without it, the pass reads it.
     */
    readonly snapshot?: ExecutionSnapshot | null
  } = {},
): Promise<PassOutcome> => {
  const guest = options.guest === true
  const { internals, log } = services
  const { db } = internals.storage
  let woken = false
  let abandonedFor: string | undefined
  let live: PassControl | undefined
  control({
    wake: () => {
      woken = true
      live?.wake()
    },
    claimed: (pokes, event) => live?.claimed(pokes, event) ?? false,
    abandon: (reason) => {
      abandonedFor = reason
      live?.abandon(reason)
    },
  })
  const { start } = options
  const snapshot =
    start?.snapshot ??
    (options.snapshot === undefined
      ? await services.snapshots.submit({ routingKey: owner.routingKey, executionId })
      : (options.snapshot ?? undefined))
  if (snapshot === undefined) return { kind: "finished" }
  if (snapshot.execution.status === "finished") {
    // A finished execution's timer is claimed only when its finish kept it for the sweep of its
    // children (parentClose.ts).
    await sweepChildren(internals, owner.routingKey, executionId)
    return { kind: "finished" }
  }
  const { execution, steps: rows } = snapshot
  // A queued execution runs only when its group admits it. The one timer it can have before is
  // an interrupt's, and then the pass ends it without running a step (every step checks the
  // interrupt first), which admits nobody's place.
  if (execution.status === "queued" && !execution.interrupt) {
    return { kind: "abandoned", reason: "queued: its concurrency group has not admitted it" }
  }
  const implementation = services.implementationOf(execution.owner_type, execution.workflow)
  const registration = implementation?.owner.workflows[execution.workflow]
  const writer = new PassWriter(
    db,
    internals.clock,
    activation,
    owner.routingKey,
    executionId,
    () => (guest || services.mayWrite(owner.bucket) ? undefined : new LeaseExpired(owner.bucket)),
    services.stepBatcher,
  )
  const state = new PassState(
    execution,
    owner,
    registration!,
    activation,
    writer,
    services.now,
    rows,
  )

  const started =
    execution.manifest_hash === registration?.hashes.compatibility
      ? undefined
      : await readManifest(db, execution.owner_type, execution.workflow, execution.manifest_hash)
  const markers: Record<string, number> = {}
  for (const [name, value] of state.markers) markers[name] = value
  const verdict = executionVerdict(
    registration?.canonical,
    {
      owner: execution.owner_type,
      workflow: execution.workflow,
      startManifest: started?.manifest ?? registration?.canonical ?? null,
      startManifestHash: execution.manifest_hash as Hash,
      startManifestNewer:
        started !== undefined &&
        started.acceptedAtMs > services.acceptedAtOf(execution.owner_type, execution.workflow),
      steps: collapseSteps(state),
      markers,
    },
    registration?.earlier,
  )
  if (implementation === undefined || registration === undefined || verdict.problems.length > 0) {
    // Left untouched: the claim already moved the timer a recovery interval ahead, so a compatible
    // runner picks the execution up.
    log.warn("execution incompatible with this runner; left for a compatible one", {
      executionId,
      problems: verdict.problems.map((p) => `${p.rule}: ${p.message}`),
    })
    return {
      kind: "incompatible",
      problems: verdict.problems,
      manifestHash: execution.manifest_hash,
    }
  }
  if (start !== undefined) {
    writer.holdStart(start, (eventCursor, deadlineAtMs) => {
      state.cursor = eventCursor
      state.deadlineAtMs = deadlineAtMs
    })
  }
  if (verdict.migrations !== undefined) state.migrations = verdict.migrations
  if (verdict.adopt) {
    const from = execution.manifest_hash
    const onto = verdict.adoptOnto ?? registration.canonical
    const to =
      verdict.adoptOnto === undefined
        ? registration.hashes.compatibility
        : compatibilityHashOf(verdict.adoptOnto)
    writer.hold([recordStartManifestPart(onto, to)])
    writer.patchExecution({ adopt: { from, to } })
  }
  if (execution.status === "suspended") {
    writer.patchExecution({ status: "running" })
  }
  // The deadline fired before this pass: the interruption it begins is recorded by nothing yet.
  if (state.interruptCause === "deadline" && !execution.interrupt) faultPoint("deadline.before")

  const env = makeStepEnvironment({
    state,
    internals,
    implementation,
    idempotencyWindowMs: services.idempotencyWindowMs,
    now: services.now,
    ownerOf: services.ownerOf,
    executionStates: services.executionStates,
  })
  const wf = buildSteps(env)
  // Unreadable stored input is a defect of this execution, recorded as its result; it must not
  // throw out of the pass, where the timer would retry it forever.
  const readInput = Effect.try({
    try: () => {
      if (registration.canonical.input === null) return undefined
      const stored = decodeJson(execution.input)
      const migrated = state.migrations.input
      if (migrated === undefined) return stored
      return migrateRecorded(
        "the stored input",
        stored,
        migrated,
        implementation.migrations.input?.[migrated.migration],
        registration.canonical.input,
      )
    },
    catch: (error) =>
      error instanceof RecordedDefect
        ? error
        : new RecordedDefect(`the stored input is unreadable: ${String(error)}`),
  }).pipe(Effect.orDie)

  let ending: Ending | undefined
  let bodyFiber: Fiber.Fiber<unknown, unknown> | undefined
  let bodyEnded = false
  const program = Effect.gen(function* () {
    const body = yield* Effect.forkChild(
      Effect.flatMap(readInput, (input) => implementation.body(input as never, wf as never)),
    )
    bodyFiber = body
    const exit = yield* Fiber.await(body)
    // From here the body's outcome stands: an interrupt or a deadline seen later changes nothing
    // (completion won the race), so whether to compensate and what to record agree.
    bodyEnded = true
    const compensate =
      state.interrupting ||
      (Exit.isFailure(exit) &&
        !Cause.hasInterruptsOnly(exit.cause) &&
        !causeHas(exit.cause, PassAbandoned))
    if (compensate && state.compensations.length > 0) {
      state.compensating = true
      for (const undo of [...state.compensations].reverse()) {
        const undone = yield* Effect.exit(undo)
        if (Exit.isFailure(undone) && !Cause.hasInterruptsOnly(undone.cause)) {
          log.error("compensation failed", { executionId, cause: describeCause(undone.cause) })
        }
      }
    }
    return exit
  })
  const outer = Effect.runFork(
    traced(
      internals.tracer,
      "akter.pass",
      {
        "akter.execution_id": executionId,
        "akter.owner_type": execution.owner_type,
        "akter.owner_id": execution.owner_id,
        "akter.workflow": execution.workflow,
        "akter.tenant": execution.tenant,
      },
      program,
      parentSpanOf(state.traceparent),
    ),
  )
  const end = (next: Ending) => {
    if (ending !== undefined) return
    ending = next
    state.stopQuiescenceCheck()
    Effect.runFork(Fiber.interrupt(outer))
  }
  // Waiting in memory: `suspending` while the suspend is written with the body held where it
  // parked, `waiting` once the runner keeps the pass for its timer.
  let residence: "running" | "suspending" | "waiting" = "running"
  /** The most pokes a resume under way answers (`state.pokesSeen` once it has). */
  let answering = 0
  /** Every branch parked while a resume's interrupt read was out: they re-check once it is back. */
  let quiescentWhileAnswering = false
  let dismissed = false
  let written: PassOutcome | undefined
  const { residency } = services
  /** A deadline, a lost lease or a drain reached a waiting pass: it ends with its suspend. */
  const dismiss = () => {
    dismissed = true
    if (residence !== "waiting") return
    residence = "running"
    residency?.left(executionId)
    end({ kind: "suspended", outcome: written! })
  }
  // An interrupt seen mid-pass stops the body where it is (a running activity's attempt is left
  // unsettled); the program then runs the compensations and the pass records `Interrupt`, naming
  // the first cause seen.
  const interruptBody = (cause: InterruptCause) => {
    if (state.interrupting || bodyEnded) return
    if (residence !== "running") return dismiss()
    state.interrupting = true
    state.interruptCause = cause
    if (bodyFiber !== undefined) Effect.runFork(Fiber.interrupt(bodyFiber))
  }
  const deadlineInterrupt = () => {
    if (state.interrupting || bodyEnded) return
    // The suspend armed the timer no later than the deadline: a new pass records the interrupt.
    if (residence !== "running") return dismiss()
    faultPoint("deadline.before")
    interruptBody("deadline")
  }
  // The deadline passing while the pass runs: this timer at the deadline, and every wake (a claim
  // of the timer, which the runner re-claims every recovery interval while a pass runs, and which
  // a suspend arms no later than the deadline) checks the clock, so a test clock is obeyed too.
  const stopDeadlineWatch = watchDeadline(state, () => deadlineInterrupt())
  writer.onBroken = (cause) => end({ kind: "abandon", reason: `write failed: ${String(cause)}` })

  /** A waiting pass runs again where it parked. */
  const runAgain = () => {
    residence = "running"
    // The suspend set it suspended; the pass's next write, behind the same fence, undoes that.
    writer.patchExecution({ status: "running" })
    state.release()
  }
  const resume = () => {
    if (residence !== "waiting" || ending !== undefined) return
    runAgain()
  }
  /** What the execution's row says of an interrupt, or the clock of the deadline, acted on. */
  const answerInterrupt = (current: ExecutionState | undefined) => {
    if (current?.interrupt === true) interruptBody(current.interrupted_by ?? "request")
    else if (state.deadlinePassed()) deadlineInterrupt()
  }
  const waitInMemory = async (parked: ReadonlyMap<string, Parked>, due: number | null) => {
    residence = "suspending"
    services.releaseSlot?.(executionId)
    dismissed = false
    state.hold()
    const outcome = await suspend(services, state, parked, due)
    if (outcome.kind !== "suspended") {
      residence = "running"
      return end({ kind: "abandon", reason: outcome.kind === "abandoned" ? outcome.reason : "" })
    }
    written = outcome
    // The suspend may have deleted the timer, and the pokes answered with it (`state.pokesSeen`).
    answering = Math.min(answering, state.pokesSeen)
    if (
      dismissed ||
      ending !== undefined ||
      (outcome.dueAtMs === null) !== (due === null) ||
      // The timer stayed due sooner (an event the waits did not see, a poke not answered): a
      // claim brings a new pass to it.
      (outcome.dueAtMs !== null && due !== null && outcome.dueAtMs < due) ||
      !residency!.enter(owner, executionId, outcome.dueAtMs, resume)
    ) {
      residence = "running"
      return end({ kind: "suspended", outcome })
    }
    residence = "waiting"
  }
  // Parked steps leave `state.parked` once interrupted, so what they parked on is taken first.
  state.onQuiescent = () => {
    // A suspend now would not count the pokes the resume answers, and keep the timer due.
    if (answering > state.pokesSeen) {
      quiescentWhileAnswering = true
      return
    }
    const parked = new Map(state.parked)
    const due = state.earliestDue()
    const deadline = state.interrupting ? null : state.deadlineAtMs
    if (
      residency !== undefined &&
      !guest &&
      (deadline === null || (due !== null && due < deadline)) &&
      residency.mayWait(owner, due)
    ) {
      void waitInMemory(parked, due)
      return
    }
    end({ kind: "park", parked, due })
  }
  live = {
    wake: () => {
      if (residence !== "running") return dismiss()
      readExecutionState(db, owner.routingKey, executionId)
        .then(answerInterrupt)
        .catch(() => {
          if (state.deadlinePassed()) deadlineInterrupt()
        })
      state.wake()
    },
    abandon: (reason) => (residence === "running" ? end({ kind: "abandon", reason }) : dismiss()),
    claimed: (pokes, event) => {
      if (residence !== "waiting" || ending !== undefined) return false
      if (event !== undefined && pokes === state.pokesSeen + 1) {
        // The emit that hands the event made the only poke since the pass last read the row: an
        // interrupt, a child's finish or another emit would have poked it too. So there is no
        // interrupt to read (the deadline is the clock's), and the waits take the event without
        // reading the log when it is the next of its name after their cursor.
        answering = Math.max(answering, pokes)
        state.pokesSeen = pokes
        state.handed = event
        runAgain()
        state.wake()
        answerInterrupt(undefined)
        return true
      }
      // Every emit or interrupt that poked the row before now is committed. The parked steps
      // re-check (waits scan the log again) while the interrupt flag is read: once it is back,
      // every re-check started after those pokes, so the pass has answered them and a suspend
      // after it may let the timer go. Until then a suspend keeps the timer due.
      answering = Math.max(answering, pokes)
      runAgain()
      state.wake()
      readExecutionState(db, owner.routingKey, executionId).then(
        (current) => {
          if (ending !== undefined) return
          state.pokesSeen = Math.max(state.pokesSeen, pokes)
          answerInterrupt(current)
          if (quiescentWhileAnswering) {
            quiescentWhileAnswering = false
            state.wake()
          }
        },
        // The row stays due (poked, or claimed a recovery interval ahead): a new pass answers it.
        (error: unknown) => end({ kind: "abandon", reason: `resume failed: ${String(error)}` }),
      )
      return true
    },
  }
  if (abandonedFor !== undefined) end({ kind: "abandon", reason: abandonedFor })
  if (woken) live.wake()

  const exit = await Effect.runPromise(Fiber.await(outer))
  // The body and its compensations are done: what is left is writing the suspend or the result.
  services.releaseSlot?.(executionId)
  stopDeadlineWatch()
  state.stopQuiescenceCheck()
  await writer.settled()

  if (ending?.kind === "suspended") return ending.outcome
  if (ending?.kind === "abandon" || writer.failure !== undefined) {
    writer.discard()
    return {
      kind: "abandoned",
      reason: ending?.kind === "abandon" ? ending.reason : String(writer.failure),
    }
  }
  if (ending?.kind === "park") return suspend(services, state, ending.parked, ending.due)
  if (Exit.isFailure(exit)) {
    // The outer program never fails on its own; an interruption here is the park or abandon above.
    return { kind: "abandoned", reason: describeCause(exit.cause) }
  }
  const bodyExit = exit.value
  if (Exit.isFailure(bodyExit) && causeHas(bodyExit.cause, PassAbandoned)) {
    writer.discard()
    return { kind: "abandoned", reason: describeCause(bodyExit.cause) }
  }
  let result: StoredResult
  if (
    state.interrupting ||
    (Exit.isFailure(bodyExit) && causeHas(bodyExit.cause, InterruptRequested))
  ) {
    result =
      state.interruptCause === "deadline"
        ? { _tag: "Interrupt", cause: "deadline" }
        : { _tag: "Interrupt" }
  } else {
    result = recordableExit(
      `workflow ${registration.owner}.${registration.name}`,
      { output: registration.canonical.output, errors: registration.canonical.errors },
      bodyExit,
      internals.maxPayloadBytes,
    ) ?? { _tag: "Die", message: "the body was interrupted" }
  }
  return finish(services, state, result)
}

/** The word recorded beside a result, by which the studio filters finished executions. */
const outcomeOfResult = (result: StoredResult): ExecutionOutcome => {
  switch (result._tag) {
    case "Success":
      return "succeeded"
    case "Failure":
      return "failed"
    case "Interrupt":
      return "interrupted"
    default:
      return "defect"
  }
}

/**
 * Records the result, and deletes the steps and the timer in the same transaction. Of two terminal
 * writes (completion, interrupt) the first to commit wins; the other changes nothing. An interrupt
 * records its cause beside it, in its own statement (the step batch carries no cause: interrupts
 * are rare).
 */
const finish = async (
  services: PassServices,
  state: PassState,
  result: StoredResult,
): Promise<PassOutcome> => {
  const { internals } = services
  const stored = encodeJson(result)
  const outcome = outcomeOfResult(result)
  // A child whose parent awaits it wakes the parent; a parent whose children may outlive it keeps
  // its timer due for the sweep that takes them down (parentClose.ts).
  const family: Family = {
    wakesParent: state.execution.parent_awaits,
    sweeps: mayHaveOpenChildren(state),
  }
  const interruptedBy = result._tag === "Interrupt" ? interruptCauseOf(result) : undefined
  let recorded: FinishWritten
  const group = groupOfRow(state.execution)
  try {
    recorded = await (group === undefined
      ? finishWrite(services, state, stored, outcome, family, interruptedBy)
      : finishAdmitting(services, state, stored, outcome, group, family, interruptedBy))
  } catch (error) {
    return { kind: "abandoned", reason: `finish failed: ${String(error)}` }
  }
  if (recorded.parentBucket !== null) internals.wakeups.wakeBucket(recorded.parentBucket)
  if (!recorded.finished) return { kind: "finished" }
  if (interruptedBy === "deadline") faultPoint("deadline.after")
  if (family.sweeps) {
    // At once rather than at the timer's claim; the kept timer sweeps again if this fails.
    await sweepChildren(internals, state.routingKey, state.executionId).catch((error) =>
      services.log.warn("sweeping the children of a finished execution failed; its timer retries", {
        executionId: state.executionId,
        error: String(error),
      }),
    )
  }
  internals.metrics.executionFinished(state.owner.ownerType, state.registration.name, result)
  // A result recorded before this one stands: callers here read it.
  return { kind: "finished", result: stored }
}

/** What a finish does for the execution's family: wake an awaiting parent, keep the sweep's timer. */
interface Family {
  /** The execution is a child whose parent awaits it: the finish pokes the parent's timer. */
  readonly wakesParent: boolean
  /** The execution may have children to take down: its timer stays, due now, for the sweep. */
  readonly sweeps: boolean
}

interface FinishWritten {
  readonly finished: boolean
  /** The bucket of the awaiting parent whose timer the finish poked. */
  readonly parentBucket: number | null
}

const finishedOf = (row: Readonly<Record<string, unknown>>): FinishWritten => ({
  finished: row["finished"] === 1,
  parentBucket: row["parent_bucket"] == null ? null : Number(row["parent_bucket"]),
})

/**
 * The parts that record the result and delete the steps and the timer with it (or keep the timer,
 * due now, for the sweep of the children), and poke the timer of a parent awaiting the result.
 */
const finishParts = (
  services: PassServices,
  state: PassState,
  stored: Buffer,
  outcome: ExecutionOutcome,
  family: Family,
  interruptedBy: InterruptCause | undefined,
) => {
  const { internals } = services
  const postgres = internals.storage.backend === "postgres"
  const finished = finishExecutionPart(
    internals.clock,
    state.routingKey,
    state.executionId,
    stored,
    outcome,
    interruptedBy,
  )
  const when = existsIn(finished.name)
  const parts = [
    finished,
    deleteStepsPart(state.routingKey, state.executionId, finished.name),
    family.sweeps
      ? armTimerPart(internals.clock, state.owner, state.executionId, "now", { when })
      : deleteTimerPart(state.routingKey, state.executionId, { when }),
  ]
  let parentColumns = sql``
  if (family.wakesParent) {
    const parent = awaitingParentPart(finished.name)
    const poked = pokePlacedTimersPart(internals.clock, parent.name)
    parts.push(parent, poked)
    // Runners of other processes hear of the parent's due timer at once (Postgres).
    parentColumns = sql`, (SELECT bucket FROM ${sql.id(poked.name)}) AS parent_bucket${
      postgres
        ? sql`, (${notification(WAKE_CHANNEL, wakePayloadOfRow, {
            from: sql.id(poked.name),
            when: sql`true`,
          })}) AS parent_notified`
        : sql``
    }`
  }
  return {
    finished,
    parts,
    // Callers awaiting the result in other processes hear of it at once (Postgres).
    select: postgres
      ? sql`${countOf(finished.name)} AS finished, ${notifyColumn(
          FINISHED_CHANNEL,
          finishedPayloadOfRow,
          { from: sql.id(finished.name), when: sql`awaited` },
        )}${parentColumns}`
      : sql`${countOf(finished.name)} AS finished${parentColumns}`,
  }
}

/**
 * The finish of an execution in a concurrency group: under the group's lock, the result and the
 * admission of the group's next queued executions commit in one transaction (see
 * engine/concurrencyGroups.ts), so a finish never leaves a free place with executions waiting.
 * The limit is the runner's manifest's, whatever key path the execution started under; a manifest
 * that declares none any more admits every queued one.
 */
const finishAdmitting = async (
  services: PassServices,
  state: PassState,
  stored: Buffer,
  outcome: ExecutionOutcome,
  group: GroupOfExecutions,
  family: Family,
  interruptedBy: InterruptCause | undefined,
): Promise<FinishWritten> => {
  const { internals } = services
  const { finished, parts, select } = finishParts(
    services,
    state,
    stored,
    outcome,
    family,
    interruptedBy,
  )
  const admission = admissionParts(
    internals,
    group,
    { routingKey: state.routingKey, executionId: state.executionId },
    state.registration.canonical.concurrency?.limit ?? null,
    finished.name,
  )
  // Fault points `admit.before`, `admit.locked` (the lock held, nothing written) and `admit.after`
  // (the result and the admission committed, the admitted executions' runners not yet woken here).
  const buckets = await state.writer.write("admit", {
    final: true,
    serializedBy: lockGroupStatement(group),
    parts: [...parts, ...admission.parts],
    select: sql`${select}, ${admission.select}`,
    read: (row) => ({ ...finishedOf(row), buckets: admittedBuckets(row) }),
  })
  for (const bucket of buckets.buckets) internals.wakeups.wakeBucket(bucket)
  return buckets
}

/**
 * The finish of an execution in no concurrency group: a step batch row when it can go as one (not
 * when it keeps its timer for its children's sweep, or records an interrupt's cause); a batch row
 * wakes an awaiting parent as the plain statement does.
 */
const finishWrite = async (
  services: PassServices,
  state: PassState,
  stored: Buffer,
  outcome: ExecutionOutcome,
  family: Family,
  interruptedBy: InterruptCause | undefined,
): Promise<FinishWritten> => {
  const statement = () => {
    const { parts, select } = finishParts(services, state, stored, outcome, family, interruptedBy)
    return { final: true, parts, select, read: finishedOf }
  }
  // The step batch records no interrupt cause: an interrupt (rare) goes as its own statement.
  if (family.sweeps || interruptedBy !== undefined) {
    return state.writer.write("finish", statement())
  }
  return state.writer.write("finish", {
    finish: stored,
    outcome,
    read: (outcome) => ({ finished: outcome.finished, parentBucket: outcome.parentBucket }),
    statement,
  })
}

/**
 * Suspends the execution, in one statement behind the fence: records how far parked waits scanned,
 * arms the timer due now if a parked wait has an event it has not evaluated, else at the earliest
 * due time (or the deadline, if sooner), else removes it (an untimed wait: an emit makes it due). A timer an emit or interrupt
 * poked since the pass loaded stays due: the pass may not have seen it, and a runner dying before
 * acting on it would otherwise lose the resume.
 */
const suspend = async (
  services: PassServices,
  state: PassState,
  parked: ReadonlyMap<string, Parked>,
  earliestStep: number | null,
): Promise<PassOutcome> => {
  const { internals } = services
  // A deadline still ahead brings the timer no later than it; once interrupting, it is behind.
  const deadline = state.interrupting ? null : state.deadlineAtMs
  const earliest =
    deadline === null
      ? earliestStep
      : earliestStep === null
        ? deadline
        : Math.min(earliestStep, deadline)
  const waits = [...parked.entries()].flatMap(([step, p]) =>
    p.scanned === undefined || p.event === undefined
      ? []
      : [{ step, event: p.event, scanned: p.scanned }],
  )
  const parts = []
  let seen = sql<boolean>`false`
  if (waits.length > 0) {
    const unseen = unseenEventsPart(state.owner, waits)
    parts.push(recordScannedPart(state.routingKey, state.executionId, waits), unseen)
    seen = sql<boolean>`(SELECT seen FROM ${sql.id(unseen.name)})`
  }
  const fenced = fenceHeld
  const armed = armTimerPart(
    internals.clock,
    state.owner,
    state.executionId,
    sql<number>`CASE WHEN ${seen} THEN ${nowMs(internals.clock)} ELSE ${earliest}::bigint END`,
    {
      when: sql`${fenced} AND (${seen} OR ${earliest}::bigint IS NOT NULL)`,
      pokesSeen: state.pokesSeen,
    },
  )
  const deleted = deleteTimerPart(state.routingKey, state.executionId, {
    when: sql`${fenced} AND NOT ${seen} AND ${earliest}::bigint IS NULL`,
    pokesSeen: state.pokesSeen,
  })
  parts.push(armed, deleted)
  try {
    const { due, timerDeleted } = await state.writer.write("park", {
      parts,
      execution: { status: "suspended" },
      select: sql`(SELECT due_at_ms FROM ${sql.id(armed.name)}) AS due_at_ms,
        ${existsIn(deleted.name)} AS timer_deleted`,
      read: (row) => ({
        due: row["due_at_ms"] === null ? null : Number(row["due_at_ms"]),
        timerDeleted: row["timer_deleted"] === true,
      }),
    })
    // Every poke of the deleted row was answered; the next one creates the row, counting from 0.
    if (timerDeleted) state.pokesSeen = 0
    return { kind: "suspended", dueAtMs: due }
  } catch (error) {
    return { kind: "abandoned", reason: `suspend failed: ${String(error)}` }
  }
}
