/**
 * The `sleep` step: a durable clock. Its due time is fixed, and written, when the step is first
 * reached, so a rerun after a crash wakes at the same moment; the pass parks until then and holds
 * the settle for its next write.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { sql } from "kysely"
import { encodeExit } from "../recordedExits.js"
import type { StepEnvironment } from "../stepEnvironment.js"
import { beginSleepPart } from "../stepStore.js"
import {
  durationMsOf,
  interruptIfAsked,
  settledRow,
  stepKey,
  type StepKindEngine,
} from "./stepKindEngine.js"

/** `wf.<sleep>(duration?)`: a durable clock whose due time is fixed when first reached. */
const sleepMethod =
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
        const sleeping = beginSleepPart(env.internals.clock, key, ms, env.now())
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

export const sleepEngine: StepKindEngine = { method: sleepMethod }
