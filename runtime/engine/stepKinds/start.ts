/**
 * The `start` step: starts another workflow exactly once. The started execution's id is derived
 * from this step (so a rerun derives the same one), and the step's record and the staged start are
 * written in one fenced statement; replay returns the recorded id.
 */
import * as Effect from "effect/Effect"
import { sql } from "kysely"
import { checkOwnerId } from "../../model/ownerIds.js"
import { executionKeyOf, inputSchemaOf, startStepCommandId } from "../../model/startInput.js"
import { InvalidPayload } from "../../errors.js"
import { checkExecutionKey, encodeExecutionId } from "../../model/executionId.js"
import { parseWithinDepth } from "../../model/payloadDepth.js"
import { stageStartPart } from "../../outbox/outboxStore.js"
import { notifyColumn, WAKE_CHANNEL } from "../../outbox/notifications.js"
import { existsIn } from "../../storage/statementParts.js"
import { fenceHeld } from "../../owners/fence.js"
import { encodeJson } from "../../storage/codec.js"
import { withCurrentTraceparent } from "../../tracing.js"
import { decodeExit, encodeExit } from "../recordedExits.js"
import { RecordedDefect } from "../signals.js"
import type { StepEnvironment } from "../stepEnvironment.js"
import { recordSettledPart } from "../stepStore.js"
import { interruptIfAsked, settledRow, stepKey, type StepKindEngine } from "./stepKindEngine.js"

/** `wf.<start>(ownerId, input?)`: starts another workflow exactly once and records its execution id. */
const startMethod =
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
      const payload = encodeJson({
        executionId: startedId,
        ownerType: target.owner,
        ownerId,
        workflow: target.workflow,
        key,
        input: parsed.data ?? null,
        // The started execution's passes join this step's trace.
        caller: yield* withCurrentTraceparent(state.caller),
      })
      const stored = encodeExit({ _tag: "Success", value: startedId })
      state.beginWork()
      const recorded = recordSettledPart(internals.clock, stepKey(env, step), "start", stored)
      const staged = stageStartPart(internals.clock, state.owner, startedId, payload, fenceHeld)
      yield* env
        .write("start-step", {
          parts: [recorded, staged],
          // Wakes runners of other processes (Postgres): the staged start is due now.
          select:
            internals.storage.backend === "postgres"
              ? notifyColumn(WAKE_CHANNEL, String(state.owner.bucket), {
                  when: existsIn(staged.name),
                })
              : sql`true AS notified`,
        })
        .pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
      internals.wakeups.wakeBucket(state.owner.bucket)
      state.remember(settledRow(step, "start", stored, env.now()))
      return startedId
    })

export const startEngine: StepKindEngine = { method: startMethod }
