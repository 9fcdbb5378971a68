/**
 * The `activity` step. Each attempt is its own row, inserted pending before the code runs, so a
 * rerun after a crash is the same attempt with the same idempotency key; the attempt is settled
 * once, and a failed attempt with retries left records when the next may start (a durable backoff:
 * the wait survives a crash like a sleep does). A declared error is retried only when the policy
 * names it. Replay returns the last attempt's recorded exit.
 */
import { createHash } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { ActivityOutcomeUnknown, InvalidPayload } from "../../errors.js"
import type { RetryPolicy } from "../../model/manifest.js"
import type { RecordedExit } from "../../model/exit.js"
import { parseWithinDepth } from "../../model/payloadDepth.js"
import type { ActivityContext } from "../workflowApi.js"
import type { StepEnvironment } from "../stepEnvironment.js"
import {
  decodeExit,
  encodeExit,
  migrateRecorded,
  recordableExit,
  replayExit,
  type ResultTypes,
} from "../recordedExits.js"
import { stepRow, type StepRow } from "../stepStore.js"
import { InterruptRequested } from "../signals.js"
import type { StepKindEngine } from "./stepKindEngine.js"

/** The wait before attempt `attempt + 1`: `initial · factor^(attempt-1)`, capped at `max`. */
export const backoffMs = (policy: RetryPolicy, attempt: number): number =>
  Math.min(policy.maxMs, Math.round(policy.initialMs * policy.factor ** (attempt - 1)))

/** A key stable across every rerun of one attempt, shaped so receivers can store it as a UUID-ish id. */
export const idempotencyKeyOf = (
  executionId: string,
  step: string,
  attempt: number,
  startedAtMs: number,
) =>
  `ak1-${createHash("sha256")
    .update(JSON.stringify([executionId, step, attempt, startedAtMs]))
    .digest("hex")
    .slice(0, 32)}`

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as { then?: unknown }).then === "function"

interface AttemptOutcome {
  readonly exit: RecordedExit
  /** The attempt outlived its idempotency key: never retried, the body decides. */
  readonly outcomeUnknown: boolean
}

const runAttempt = (
  env: StepEnvironment,
  step: string,
  attempt: number,
  startedAtMs: number,
  input: unknown,
  types: ResultTypes,
): Effect.Effect<AttemptOutcome | undefined> => {
  const { state } = env
  const what = `activity ${step}`
  const expiresAt = startedAtMs + env.idempotencyWindowMs
  // Made when the activity first looks at its signal: most never do.
  let controller: AbortController | undefined
  const context: ActivityContext = {
    executionId: state.executionId,
    ownerId: state.owner.ownerId,
    workflow: state.registration.name,
    step,
    attempt,
    caller: state.caller,
    get signal() {
      controller ??= new AbortController()
      return controller.signal
    },
    idempotencyKey: () => {
      if (env.now() >= expiresAt) throw new ActivityOutcomeUnknown(state.executionId, step, attempt)
      return idempotencyKeyOf(state.executionId, step, attempt, startedAtMs)
    },
  }
  const implementation = env.implementation.activities[step] as (...args: unknown[]) => unknown
  const takesInput = state.registration.steps[step]?.input !== undefined
  const invoke = Effect.suspend((): Effect.Effect<unknown, unknown> => {
    let returned: unknown
    try {
      returned = takesInput ? implementation(input, context) : implementation(context)
    } catch (error) {
      return Effect.fail(error)
    }
    if (Effect.isEffect(returned)) return returned as Effect.Effect<unknown, unknown>
    if (isPromiseLike(returned)) return Effect.tryPromise({ try: () => returned, catch: (e) => e })
    return Effect.succeed(returned)
  })
  const timeoutMs = state.registration.steps[step]?.timeoutMs
  const bounded =
    timeoutMs === undefined
      ? invoke
      : invoke.pipe(
          Effect.timeoutOrElse({
            duration: timeoutMs,
            orElse: () =>
              Effect.die(new Error(`${what} attempt ${attempt} timed out after ${timeoutMs} ms`)),
          }),
        )
  return Effect.exit(bounded).pipe(
    Effect.onInterrupt(() => Effect.sync(() => controller?.abort())),
    Effect.map((exit) => {
      const recorded = recordableExit(what, types, exit, env.internals.maxPayloadBytes)
      if (recorded === undefined) return undefined
      const outcomeUnknown =
        Exit.isFailure(exit) &&
        exit.cause.reasons.some(
          (reason) =>
            (Cause.isDieReason(reason) && reason.defect instanceof ActivityOutcomeUnknown) ||
            (Cause.isFailReason(reason) && reason.error instanceof ActivityOutcomeUnknown),
        )
      return { exit: recorded, outcomeUnknown }
    }),
  )
}

/**
 * Whether a failed attempt may be retried: a defect (a crash, a timeout, an undeclared error) is,
 * a declared error only when the policy opts it in — a declared error is a business outcome that
 * the next attempt would most likely repeat.
 */
const retriable = (policy: RetryPolicy, exit: RecordedExit): boolean => {
  switch (exit._tag) {
    case "Success":
      return false
    case "Die":
      return true
    case "Failure":
      return policy.retryOn?.includes(exit.error._tag) ?? false
  }
}

const pendingRow = (step: string, attempt: number, startedAtMs: number): StepRow =>
  stepRow({ step, attempt, kind: "activity", started_at_ms: startedAtMs })

/** `wf.<activity>(input?)`: replays the recorded exit, or runs the next attempt. */
const activityMethod =
  (env: StepEnvironment, step: string) =>
  (input?: unknown): Effect.Effect<unknown, unknown> =>
    Effect.gen(function* () {
      const { state } = env
      const { registration } = state
      const declared = registration.canonical.steps[step]!
      const settings = registration.steps[step] ?? {}
      const types: ResultTypes = { output: declared.output ?? null, errors: declared.errors ?? {} }
      const what = `activity ${step}`
      if (settings.input !== undefined) {
        const parsed = parseWithinDepth(settings.input, input)
        if (!parsed.success) {
          return yield* Effect.die(new InvalidPayload(`input of ${what}`, parsed.issues))
        }
        input = parsed.data
      }
      for (;;) {
        const rows = state.rowsOf(step)
        const last = rows.at(-1)
        let attempt = 1
        let startedAtMs: number | undefined
        if (last !== undefined && last.exit !== null) {
          const exit = decodeExit(last.exit, step)
          const retryAt = exit._tag === "Success" ? null : last.due_at_ms
          if (retryAt === null) {
            const migrated = state.migrations.steps[step]
            if (migrated !== undefined && exit._tag === "Success") {
              const value = yield* Effect.try({
                try: () =>
                  migrateRecorded(
                    `the recorded result of ${what}`,
                    exit.value,
                    migrated,
                    env.implementation.migrations.steps?.[step]?.[migrated.migration],
                    types.output,
                  ),
                catch: (error) => error,
              }).pipe(Effect.orDie)
              return types.output === null ? undefined : value
            }
            return yield* replayExit(what, registration, types, exit, {
              applied: state.migrations.errors?.[step],
              implemented: env.implementation.migrations.errors,
            })
          }
          if (env.now() < retryAt) {
            yield* env.park(step, { dueAtMs: retryAt, attempt: last.attempt })
            continue
          }
          attempt = last.attempt + 1
        } else if (last !== undefined) {
          attempt = last.attempt
          startedAtMs = last.started_at_ms
        }
        if (state.interrupting && !state.compensating)
          return yield* Effect.die(new InterruptRequested())
        state.beginWork()
        const known = startedAtMs
        const outcome = yield* Effect.gen(function* () {
          let begun = known
          if (begun === undefined) {
            begun = yield* env.beginActivity(step, attempt)
            state.remember(pendingRow(step, attempt, begun))
          }
          const ranFrom = performance.now()
          const ran = yield* runAttempt(env, step, attempt, begun, input, types)
          if (ran !== undefined) {
            env.internals.metrics.activityAttempt(
              state.owner.ownerType,
              registration.name,
              step,
              ran.exit._tag === "Success",
              (performance.now() - ranFrom) / 1000,
            )
          }
          return ran === undefined ? undefined : { ...ran, startedAtMs: begun }
        }).pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
        if (outcome === undefined) return yield* Effect.interrupt
        const policy = settings.retry
        const retry =
          policy !== undefined &&
          !outcome.outcomeUnknown &&
          attempt < policy.attempts &&
          retriable(policy, outcome.exit)
        const retryAtMs = retry ? env.now() + backoffMs(policy!, attempt) : undefined
        const stored = encodeExit(outcome.exit)
        env.holdSettle({
          step,
          attempt,
          exit: stored,
          ...(retryAtMs === undefined ? {} : { retryAtMs }),
        })
        state.remember({
          ...pendingRow(step, attempt, outcome.startedAtMs),
          exit: stored,
          due_at_ms: retryAtMs ?? null,
          settled_at_ms: env.now(),
        })
        if (!retry) {
          // A fresh success was decoded to its declared type as it was recorded: no second decode.
          if (outcome.exit._tag === "Success") {
            return types.output === null ? undefined : outcome.exit.value
          }
          return yield* replayExit(what, registration, types, outcome.exit)
        }
      }
    })

export const activityEngine: StepKindEngine = { method: activityMethod }
