/**
 * The `wf` object a body receives: one method per declared step, built from the registration, plus
 * `version`, `withCompensation` and the execution's identity. Every step first returns its recorded
 * outcome when there is one (replay never reruns a settled step), and does new work only when it is
 * the first unsettled step of its branch.
 */
import { createHash } from "node:crypto"
import { Duration, Effect, Option } from "effect"
import { InvalidPayload, UndeclaredStep } from "../errors.js"
import { checkExecutionKey, encodeExecutionId } from "../model/executionId.js"
import type { WaitOutcome } from "../model/exit.js"
import { schemaOf, issuesOf } from "../model/schemaOf.js"
import { eventsAfter } from "../events/eventLog.js"
import { sql } from "kysely"
import { stageStartPart } from "../outbox/outboxStore.js"
import { WAKE_CHANNEL } from "../outbox/wakeups.js"
import { FENCE } from "../owners/fence.js"
import { existsIn } from "../storage/statementParts.js"
import { decodeJson, encodeJson } from "../storage/codec.js"
import { checkOwnerId } from "../client/ownerIds.js"
import { executionKeyOf, inputSchemaOf } from "../client/ownerClient.js"
import { activityStep } from "./activityStep.js"
import { traced } from "../tracing.js"
import { decodeExit, encodeExit, recordableExit, replayExit } from "./recordedExits.js"
import type { StepEnvironment } from "./stepEnvironment.js"
import {
  beginSleepPart,
  beginWaitPart,
  recordScannedPart,
  recordSettledPart,
  settleStepPart,
  stepRow,
  unseenEventsPart,
  type StepRow,
} from "./stepStore.js"
import { InterruptRequested, PassAbandoned, RecordedDefect } from "./signals.js"

const EVENT_PAGE = 256

const settledRow = (step: string, kind: StepRow["kind"], exit: Buffer, at: number): StepRow =>
  stepRow({ step, attempt: 1, kind, exit, started_at_ms: at, settled_at_ms: at })

const durationMsOf = (step: string, duration: Duration.Input): Effect.Effect<number> => {
  const ms = Duration.toMillis(duration)
  return Number.isFinite(ms) && ms >= 0
    ? Effect.succeed(Math.ceil(ms))
    : Effect.die(new Error(`step ${step}: duration must be finite and not negative`))
}

const stepKey = (env: StepEnvironment, step: string) => ({
  routingKey: env.state.routingKey,
  executionId: env.state.executionId,
  step,
  attempt: 1,
})

const interruptIfAsked = (env: StepEnvironment) =>
  env.state.interrupting && !env.state.compensating
    ? Effect.die(new InterruptRequested())
    : Effect.void

/** `wf.<sleep>(duration?)`: a durable clock whose due time is fixed when first reached. */
const sleepStep =
  (env: StepEnvironment, step: string) =>
  (duration?: Duration.Input): Effect.Effect<void> =>
    Effect.gen(function* () {
      const { state } = env
      const fallback = state.registration.steps[step]?.durationMs
      const given = duration ?? fallback
      if (given === undefined) {
        return yield* Effect.die(
          new Error(`sleep ${step} needs a duration (the manifest gives none)`),
        )
      }
      const ms = yield* durationMsOf(step, given)
      const row = state.rowsOf(step)[0]
      if (row?.exit != null) return
      yield* interruptIfAsked(env)
      const key = stepKey(env, step)
      let due = row?.due_at_ms ?? null
      if (due === null) {
        state.beginWork()
        const sleeping = beginSleepPart(env.internals.clock, key, ms)
        due = yield* env
          .write("sleep", {
            parts: [sleeping],
            select: sql`(SELECT due_at_ms FROM ${sql.id(sleeping.name)}) AS due_at_ms`,
            read: (row) => Number(row["due_at_ms"]),
          })
          .pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
        state.remember({
          ...settledRow(step, "sleep", Buffer.alloc(0), env.now()),
          exit: null,
          due_at_ms: due,
          settled_at_ms: null,
        })
      }
      while (env.now() < due) yield* env.park(step, { dueAtMs: due, attempt: 1 })
      const stored = encodeExit({ _tag: "Success", value: null })
      env.holdSettle({ step, attempt: 1, exit: stored })
      state.remember({ ...settledRow(step, "sleep", stored, env.now()), due_at_ms: due })
    })

/** `wf.<wait>(options?)`: the first event of its name after the cursor that passes `where`, or its timeout. */
const waitStep =
  (env: StepEnvironment, step: string) =>
  (options: { where?: (payload: unknown) => boolean; timeout?: Duration.Input } = {}) =>
    Effect.gen(function* () {
      const { state, internals } = env
      const declared = state.registration.canonical.steps[step]!
      const event = declared.event!
      const payloadSchema = schemaOf(declared.payload!, "tolerant")
      const declaredTimeout = state.registration.steps[step]?.timeoutMs
      const timed = declaredTimeout !== undefined
      const present = (outcome: WaitOutcome): Effect.Effect<unknown> => {
        if ("event" in outcome) {
          const parsed = payloadSchema.safeParse(outcome.event)
          if (!parsed.success) {
            return Effect.die(
              new RecordedDefect(
                `wait ${step}: the recorded event no longer matches ${event}'s payload type`,
              ),
            )
          }
          return Effect.succeed(timed ? Option.some(parsed.data) : parsed.data)
        }
        return timed
          ? Effect.succeed(Option.none())
          : Effect.die(
              new RecordedDefect(
                `wait ${step} recorded a timeout, but the manifest no longer gives it one`,
              ),
            )
      }
      const row = state.rowsOf(step)[0]
      if (row?.exit != null) {
        const exit = decodeExit(row.exit, step)
        if (exit._tag !== "Success")
          return yield* Effect.die(new RecordedDefect(`wait ${step} recorded a failure`))
        return yield* present(exit.value as WaitOutcome)
      }
      yield* interruptIfAsked(env)
      const key = stepKey(env, step)
      const timeoutMs =
        options.timeout !== undefined
          ? yield* durationMsOf(step, options.timeout)
          : (declaredTimeout ?? null)
      let scanned: number
      let due: number | null
      if (row === undefined) {
        // The wait sees events after the cursor its execution's start recorded.
        yield* env.startRecorded
        state.beginWork()
        const waiting = beginWaitPart(internals.clock, key, event, state.cursor, timeoutMs)
        const registered = yield* env
          .write("wait", {
            parts: [waiting],
            select: sql`(SELECT wait_after FROM ${sql.id(waiting.name)}) AS wait_after,
              (SELECT due_at_ms FROM ${sql.id(waiting.name)}) AS due_at_ms`,
            read: (row) => ({
              after: Number(row["wait_after"]),
              dueAtMs: row["due_at_ms"] === null ? null : Number(row["due_at_ms"]),
            }),
          })
          .pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
        scanned = registered.after
        due = registered.dueAtMs
        state.remember({
          ...settledRow(step, "wait", Buffer.alloc(0), env.now()),
          exit: null,
          settled_at_ms: null,
          wait_event: event,
          wait_after: registered.after,
          scanned,
          due_at_ms: due,
        })
      } else {
        scanned = row.scanned ?? row.wait_after ?? state.cursor
        due = row.due_at_ms
      }
      const settle = (outcome: WaitOutcome, matched: number | undefined) => {
        const stored = encodeExit({ _tag: "Success", value: outcome })
        const settled = settleStepPart(internals.clock, key, stored, {
          ...(matched === undefined ? {} : { matched }),
        })
        env.hold([settled], [settled.name])
        if (matched !== undefined) {
          env.patchExecution({ cursor: matched })
          state.cursor = Math.max(state.cursor, matched)
        }
        state.remember({
          ...settledRow(step, "wait", stored, env.now()),
          wait_event: event,
          matched: matched ?? null,
        })
        return present(outcome)
      }
      for (;;) {
        state.beginWork()
        const match = yield* Effect.gen(function* () {
          for (;;) {
            const page = yield* Effect.promise(() =>
              eventsAfter(internals.storage.db, state.owner, event, scanned, EVENT_PAGE),
            )
            for (const logged of page) {
              const parsed = payloadSchema.safeParse(decodeJson(logged.payload))
              scanned = logged.sequence
              if (!parsed.success) continue
              const where = options.where
              if (where === undefined || where(parsed.data))
                return { payload: parsed.data, sequence: logged.sequence }
            }
            if (page.length < EVENT_PAGE) return undefined
          }
        }).pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
        if (match !== undefined) return yield* settle({ event: match.payload }, match.sequence)
        if (due !== null && env.now() >= due) {
          // An event in the log that the scan has not evaluated wins over the timeout.
          const unseen = unseenEventsPart(state.owner, [{ event, scanned }])
          const expired = settleStepPart(
            internals.clock,
            key,
            encodeExit({ _tag: "Success", value: { timedOut: true } }),
            { when: sql`NOT (SELECT seen FROM ${sql.id(unseen.name)})` },
          )
          const timedOut = yield* env.write("timeout", {
            parts: [
              recordScannedPart(state.routingKey, state.executionId, [{ step, scanned }]),
              unseen,
              expired,
            ],
            select: sql`${existsIn(expired.name)} AS timed_out,
              (SELECT seen FROM ${sql.id(unseen.name)}) AS seen`,
            read: (row) => ({ expired: row["timed_out"] === true, seen: row["seen"] === true }),
          })
          // Neither timed out nor an event to read: another writer settled the wait, and this
          // pass's memory is behind the database.
          if (!timedOut.expired && !timedOut.seen) {
            return yield* Effect.die(
              new PassAbandoned(`wait ${step} was settled by another writer`),
            )
          }
          if (timedOut.expired) {
            const outcome: WaitOutcome = { timedOut: true }
            state.remember({
              ...settledRow(
                step,
                "wait",
                encodeExit({ _tag: "Success", value: outcome }),
                env.now(),
              ),
              wait_event: event,
            })
            return yield* present(outcome)
          }
          continue
        }
        yield* env.park(step, { dueAtMs: due, scanned, event, attempt: 1 })
      }
    })

/** `wf.<race>(branches)`: the first branch to finish; the winner is recorded, losers never rerun. */
const raceStep =
  (env: StepEnvironment, step: string) =>
  (branches: ReadonlyArray<Effect.Effect<unknown, unknown>>) =>
    Effect.gen(function* () {
      const { state } = env
      const declared = state.registration.canonical.steps[step]!
      const types = { output: declared.output ?? null, errors: declared.errors ?? {} }
      const what = `race ${step}`
      const row = state.rowsOf(step)[0]
      if (row?.exit != null)
        return yield* replayExit(what, state.registration, types, decodeExit(row.exit, step))
      yield* interruptIfAsked(env)
      if (branches.length === 0)
        return yield* Effect.die(new Error(`${what} needs at least one branch`))
      const exit = yield* Effect.exit(Effect.raceAllFirst(branches))
      const recorded = recordableExit(what, types, exit, env.internals.maxPayloadBytes)
      // Only a winner or a declared failure is recorded; a defect or an interruption replays the race.
      if (exit._tag === "Failure" && (recorded === undefined || recorded._tag === "Die")) {
        return yield* Effect.failCause(exit.cause)
      }
      const stored = encodeExit(recorded!)
      env.hold([recordSettledPart(env.internals.clock, stepKey(env, step), "race", stored)])
      state.remember(settledRow(step, "race", stored, env.now()))
      return yield* replayExit(what, state.registration, types, recorded!)
    })

/** `wf.<start>(ownerId, input?)`: starts another workflow exactly once and records its execution id. */
const startStep =
  (env: StepEnvironment, step: string) =>
  (ownerId: string, input?: unknown): Effect.Effect<string> =>
    Effect.gen(function* () {
      const { state, internals } = env
      const row = state.rowsOf(step)[0]
      if (row?.exit != null) {
        const exit = decodeExit(row.exit, step)
        return exit._tag === "Success"
          ? (exit.value as string)
          : yield* Effect.die(new RecordedDefect(`start ${step} recorded a failure`))
      }
      yield* interruptIfAsked(env)
      const target = state.registration.canonical.steps[step]!.target!
      const owner = env.ownerOf(target.owner)
      const workflow = owner?.workflows[target.workflow]
      if (workflow === undefined) {
        return yield* Effect.die(
          new Error(
            `start ${step}: this runner has no registration of ${target.owner}.${target.workflow}; pass it to startRunner`,
          ),
        )
      }
      const invalidOwner = checkOwnerId(ownerId)
      if (invalidOwner !== undefined) return yield* Effect.die(invalidOwner)
      const parsed = inputSchemaOf(workflow).safeParse(input)
      if (!parsed.success) {
        return yield* Effect.die(
          new InvalidPayload(`input of start ${step}`, issuesOf(parsed.error)),
        )
      }
      const derivedCommandId = `start-${createHash("sha256")
        .update(JSON.stringify([state.executionId, step]))
        .digest("hex")
        .slice(0, 32)}`
      const key = executionKeyOf(workflow, parsed.data, derivedCommandId)
      const invalidKey = checkExecutionKey(key)
      if (invalidKey !== undefined) return yield* Effect.die(invalidKey)
      const startedId = encodeExecutionId({
        tenant: state.owner.tenant,
        ownerType: target.owner,
        ownerId,
        workflow: target.workflow,
        key,
      })
      const payload = encodeJson({
        executionId: startedId,
        ownerType: target.owner,
        ownerId,
        workflow: target.workflow,
        key,
        input: parsed.data ?? null,
        caller: state.caller,
      })
      const stored = encodeExit({ _tag: "Success", value: startedId })
      state.beginWork()
      const recorded = recordSettledPart(internals.clock, stepKey(env, step), "start", stored)
      const staged = stageStartPart(
        internals.clock,
        state.owner,
        startedId,
        payload,
        sql`EXISTS (SELECT 1 FROM ${sql.id(FENCE)})`,
      )
      yield* env
        .write("start-step", {
          parts: [recorded, staged],
          // Wakes runners of other processes (Postgres): the staged start is due now.
          select:
            internals.storage.backend === "postgres"
              ? sql`(SELECT pg_notify(${WAKE_CHANNEL}, ${String(state.owner.bucket)}) FROM ${sql.id(staged.name)}) AS notified`
              : sql`true AS notified`,
        })
        .pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
      internals.wakeups.wakeBucket(state.owner.bucket)
      state.remember(settledRow(step, "start", stored, env.now()))
      return startedId
    })

/** Builds `wf` for one pass. Calling a step the manifest does not declare dies, naming it. */
export const buildSteps = (env: StepEnvironment): Record<string, unknown> => {
  const { state } = env
  const { registration } = state
  const steps: Record<string, unknown> = {
    executionId: state.executionId,
    ownerId: state.owner.ownerId,
    caller: state.caller,
    version: (name: string) =>
      Object.hasOwn(registration.canonical.versions, name)
        ? Effect.succeed(state.markers.get(name) ?? 0)
        : Effect.die(
            new Error(
              `workflow ${registration.owner}.${registration.name} declares no version marker "${name}"`,
            ),
          ),
    withCompensation: <A, E>(
      step: Effect.Effect<A, E>,
      undo: (value: A) => Effect.Effect<unknown, unknown>,
    ) =>
      Effect.tap(step, (value) =>
        Effect.sync(() => {
          state.compensations.push(Effect.suspend(() => undo(value)))
        }),
      ),
  }
  const tracer = env.internals.tracer
  for (const [name, declared] of Object.entries(registration.canonical.steps)) {
    const step: (...args: never[]) => Effect.Effect<unknown, unknown> =
      declared.kind === "activity"
        ? activityStep(env, name)
        : declared.kind === "sleep"
          ? sleepStep(env, name)
          : declared.kind === "wait"
            ? waitStep(env, name)
            : declared.kind === "race"
              ? raceStep(env, name)
              : startStep(env, name)
    const attributes = { "akter.step": name, "akter.step.kind": declared.kind }
    steps[name] =
      tracer === undefined
        ? step
        : (...args: never[]) => traced(tracer, "akter.step", attributes, step(...args))
  }
  const workflowName = `${registration.owner}.${registration.name}`
  return new Proxy(steps, {
    get: (target, property, receiver) => {
      if (typeof property === "symbol" || Object.hasOwn(target, property) || property === "then") {
        return Reflect.get(target, property, receiver)
      }
      return () => Effect.die(new UndeclaredStep(workflowName, property, registration.source))
    },
  })
}
