/**
 * The `race` step: the first of several branches to finish. Only the winner's value or a declared
 * failure is recorded, and replay returns it without running a branch again; a defect or an
 * interruption records nothing, so the race runs again on the next pass.
 */
import * as Effect from "effect/Effect"
import { decodeExit, encodeExit, recordableExit, replayExit } from "../recordedExits.js"
import type { StepEnvironment } from "../stepEnvironment.js"
import { recordedSteps } from "../stepStore.js"
import { heldRow } from "../../storage/rowsSource.js"
import { interruptIfAsked, settledRow, type StepKindEngine } from "./stepKindEngine.js"

/** `wf.<race>(branches)`: the first branch to finish; the winner is recorded, losers never rerun. */
const raceMethod =
  (env: StepEnvironment, step: string) =>
  (branches: ReadonlyArray<Effect.Effect<unknown, unknown>>) =>
    Effect.gen(function* () {
      const { state } = env
      const declared = state.registration.canonical.steps[step]!
      const types = { output: declared.output ?? null, errors: declared.errors ?? {} }
      const what = `race ${step}`
      const row = state.rowsOf(step)[0]
      if (row?.exit != null)
        return yield* replayExit(what, state.registration, types, decodeExit(row.exit, step), {
          applied: state.migrations.errors?.[step],
          implemented: env.implementation.migrations.errors,
        })
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
      env.hold([
        heldRow(recordedSteps, {
          step,
          kind: "race",
          exit: stored,
          childId: null,
        }),
      ])
      state.remember(settledRow(step, "race", stored, env.now()))
      return yield* replayExit(what, state.registration, types, recorded!)
    })

export const raceEngine: StepKindEngine = { method: raceMethod }
