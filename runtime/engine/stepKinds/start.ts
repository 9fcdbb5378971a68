/**
 * The `start` step: starts another workflow exactly once. The started execution's id is derived
 * from this step (so a rerun derives the same one), and the step's record and the staged start are
 * written in one fenced statement. A plain start records the child's id; replay returns it. An
 * awaiting start records the step pending and parks until the child finishes — the child's finish
 * pokes this execution's timer in the statement that records the child's result, so nothing polls —
 * then settles the step with the child's result, which replays as the child's output or its typed
 * declared error.
 */
import * as Effect from "effect/Effect"
import { checkOwnerId } from "../../model/ownerIds.js"
import { executionKeyOf, inputSchemaOf, startStepCommandId } from "../../model/startInput.js"
import { InvalidPayload } from "../../errors.js"
import { checkExecutionKey, decodeExecutionId, encodeExecutionId } from "../../model/executionId.js"
import { isStoredResult, type RecordedExit } from "../../model/exit.js"
import { parseWithinDepth } from "../../model/payloadDepth.js"
import type { WorkflowRegistration } from "../../model/registration.js"
import { parentCloseOf } from "../../model/stepKinds/start.js"
import type { CanonicalStepOf } from "../../model/stepKinds/stepKindModel.js"
import { stagedStarts } from "../../outbox/outboxStore.js"
import { notifyColumn, WAKE_CHANNEL } from "../../outbox/notifications.js"
import { placeOwner } from "../../owners/routing.js"
import { fenceHeld } from "../../owners/fence.js"
import { decodeJson, encodeTransientJson } from "../../storage/codec.js"
import { withCurrentTraceparent } from "../../tracing.js"
import { decodeExit, encodeExit, replayExit } from "../recordedExits.js"
import { RecordedDefect } from "../signals.js"
import type { ParentLink } from "../startRequest.js"
import type { StepEnvironment } from "../stepEnvironment.js"
import { recordedSteps, stepRow } from "../stepStore.js"
import { heldRow } from "../../storage/rowsSource.js"
import { interruptIfAsked, settledRow, type StepKindEngine } from "./stepKindEngine.js"

/** What an awaiting start records of its child's result: an interrupted child is a defect here. */
const awaitedExitOf = (child: string, result: Buffer): RecordedExit => {
  const stored = decodeJson(result)
  if (!isStoredResult(stored)) return { _tag: "Die", message: `child ${child}: unreadable result` }
  return stored._tag === "Interrupt"
    ? { _tag: "Die", message: `child ${child} was interrupted` }
    : stored
}

/** The child's recorded result, as the body sees it: typed by the child workflow's declaration. */
const presentChild = (target: WorkflowRegistration, exit: RecordedExit) =>
  replayExit(
    `child workflow ${target.owner}.${target.name}`,
    target,
    { output: target.canonical.output, errors: target.canonical.errors },
    exit,
  )

/**
 * `wf.<start>(ownerId, input?)`: starts another workflow exactly once and records its execution id,
 * or, when the step awaits, its result.
 */
const startMethod =
  (env: StepEnvironment, step: string) =>
  (ownerId: string, input?: unknown): Effect.Effect<unknown, unknown> =>
    Effect.gen(function* () {
      const { state, internals } = env
      const declared = state.registration.canonical.steps[step] as CanonicalStepOf<"start">
      const target = declared.target!
      const awaits = declared.awaits === true
      const workflow = env.ownerOf(target.owner)?.workflows[target.workflow]
      const row = state.rowsOf(step)[0]
      if (row?.exit != null && !awaits) {
        const exit = decodeExit(row.exit, step)
        return exit._tag === "Success"
          ? (exit.value as string)
          : yield* Effect.die(new RecordedDefect(`start ${step} recorded a failure`))
      }
      if (workflow === undefined) {
        return yield* Effect.die(
          new Error(
            `start ${step}: this runner has no registration of ${target.owner}.${target.workflow}; pass it to startRunner`,
          ),
        )
      }
      if (row?.exit != null) return yield* presentChild(workflow, decodeExit(row.exit, step))
      let startedId: string
      if (row === undefined) {
        yield* interruptIfAsked(env)
        startedId = yield* stageChild(env, step, workflow, declared, ownerId, input)
      } else {
        // Pending: recorded by an awaiting start, which named its child (the body's arguments are
        // not trusted on replay, as a plain start's recorded id is not).
        const child = row.child_id
        if (child === null) {
          return yield* Effect.die(new RecordedDefect(`start ${step}: pending without a child`))
        }
        startedId = child
        if (!awaits) {
          // Recorded pending by an awaiting declaration this runner's manifest no longer has.
          const stored = encodeExit({ _tag: "Success", value: startedId })
          env.holdSettle({ step, attempt: 1, exit: stored })
          state.remember({ ...settledRow(step, "start", stored, env.now()), child_id: startedId })
        }
      }
      if (!awaits) return startedId
      const address = decodeExecutionId(startedId)
      if (address instanceof Error) return yield* Effect.die(address)
      const placement = placeOwner(address)
      for (;;) {
        state.beginWork()
        const current = yield* Effect.promise(() =>
          env.executionStates.submit({ routingKey: placement.routingKey, executionId: startedId }),
        ).pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
        if (current?.result != null) {
          const exit = awaitedExitOf(startedId, current.result)
          const settled = encodeExit(exit)
          env.holdSettle({ step, attempt: 1, exit: settled })
          state.remember({ ...settledRow(step, "start", settled, env.now()), child_id: startedId })
          return yield* presentChild(workflow, exit)
        }
        yield* interruptIfAsked(env)
        yield* env.park(step, { dueAtMs: null, attempt: 1 })
      }
    })

/**
 * The first run of a start: derives the child's id from this step, and records the step (settled
 * with the id, or pending when it awaits) and stages the child's start in one fenced statement.
 */
const stageChild = (
  env: StepEnvironment,
  step: string,
  workflow: WorkflowRegistration,
  declared: CanonicalStepOf<"start">,
  ownerId: string,
  input: unknown,
): Effect.Effect<string> =>
  Effect.gen(function* () {
    const { state, internals } = env
    const target = declared.target!
    const awaits = declared.awaits === true
    const invalidOwner = checkOwnerId(ownerId)
    if (invalidOwner !== undefined) return yield* Effect.die(invalidOwner)
    const parsed = parseWithinDepth(inputSchemaOf(workflow), input)
    if (!parsed.success) {
      return yield* Effect.die(new InvalidPayload(`input of start ${step}`, parsed.issues))
    }
    const key = executionKeyOf(workflow, parsed.data, startStepCommandId(state.executionId, step))
    const invalidKey = checkExecutionKey(key)
    if (invalidKey !== undefined) return yield* Effect.die(invalidKey)
    const startedId = encodeExecutionId({
      tenant: state.owner.tenant,
      ownerType: target.owner,
      ownerId,
      workflow: target.workflow,
      key,
    })
    const parent: ParentLink = {
      routingKey: state.routingKey,
      executionId: state.executionId,
      step,
      awaits,
      close: parentCloseOf(declared),
    }
    const payload = encodeTransientJson({
      executionId: startedId,
      ownerType: target.owner,
      ownerId,
      workflow: target.workflow,
      key,
      input: parsed.data ?? null,
      // The started execution's passes join this step's trace.
      caller: yield* withCurrentTraceparent(state.caller),
      parent,
    })
    // Recorded pending when it awaits (settled with the child's result), else settled with the id.
    const stored = awaits ? null : encodeExit({ _tag: "Success", value: startedId })
    const recorded = heldRow(recordedSteps, {
      step,
      kind: "start",
      exit: stored,
      childId: startedId,
    })
    const staged = heldRow(stagedStarts, { executionId: startedId, payload })
    // Held for the pass's next write: nothing here waits for it (the child's id is this step's
    // own), and nothing with an outside effect happens before it commits — the next activity,
    // the suspend of an awaiting start, or the write of its own before the result. A pass's
    // concurrent start steps so travel in one statement instead of one each.
    const bucket = state.owner.bucket
    env.holdWrite("start-step", [recorded, staged], {
      // Wakes runners of other processes (Postgres), once per statement: the staged starts are due
      // now (a runner of this process is woken in memory once it has committed).
      ...(internals.storage.backend === "postgres"
        ? {
            column: {
              key: `wake ${bucket}`,
              sql: notifyColumn(WAKE_CHANNEL, String(bucket), { when: fenceHeld }),
            },
          }
        : {}),
      committed: () => internals.wakeups.wakeBucket(bucket),
    })
    state.remember(
      stored === null
        ? stepRow({
            step,
            attempt: 1,
            kind: "start",
            started_at_ms: env.now(),
            child_id: startedId,
          })
        : { ...settledRow(step, "start", stored, env.now()), child_id: startedId },
    )
    return startedId
  })

export const startEngine: StepKindEngine = { method: startMethod }
