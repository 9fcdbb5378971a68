/**
 * The soak's application (`akter run test/soak/soakApp.ts`): one workflow mixing every kind of
 * waiting a runner can be killed in the middle of — activities of varying length, a sleep, a wait
 * for the execution's own event among its owner's others, a race of an activity against an hour's
 * sleep (which cannot win within a soak: a sleep already due would beat an activity that must
 * rerun), and a wait that times out. Its result follows from its input alone, so the soak checks
 * every execution's result without trusting the engine.
 */
import { Effect, Option } from "effect"
import { implementWorkflow, type ActivityContext } from "../../runtime/index.js"
import { journalRun } from "../support/activityJournal.js"
import { heldUntilReleased } from "../support/heldStart.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

export const SOAK_MANIFEST = `
akter: 1
owner: Soak
events:
  Go: { i: integer }
  Quiet: { i: integer }
workflows:
  mixed:
    input: { i: integer, napMs: integer, workMs: integer }
    output: { first: integer, go: integer, winner: string, timedOut: boolean, sum: integer }
    steps:
      one: { kind: activity, input: { i: integer, workMs: integer }, output: { v: integer } }
      nap: { kind: sleep }
      go: { kind: wait, event: Go }
      quick: { kind: activity, input: { workMs: integer }, output: { by: string } }
      slow: { kind: sleep, duration: 1h }
      first: { kind: race, output: { by: string } }
      quiet: { kind: wait, event: Quiet, timeout: 100ms }
      two:
        kind: activity
        input: { v: integer, go: integer, workMs: integer }
        output: { sum: integer }
`

export const registration = await registrationFromYaml(SOAK_MANIFEST, "test/soak/soak.yaml")

export interface SoakInput {
  readonly i: number
  readonly napMs: number
  readonly workMs: number
}

/** What `mixed` returns for an input, computed without the engine. */
export const expectedOutcome = (input: SoakInput) => ({
  first: input.i * 3,
  go: input.i,
  winner: "quick",
  timedOut: true,
  sum: input.i * 4,
})

const work = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

type Wf = UntypedSteps

export const workflows = [
  implementWorkflow(registration, "mixed", {
    activities: {
      one: async ({ i, workMs }: { i: number; workMs: number }, ctx: ActivityContext) => {
        journalRun(ctx)
        await work(workMs)
        return { v: i * 3 }
      },
      quick: async ({ workMs }: { workMs: number }, ctx: ActivityContext) => {
        journalRun(ctx)
        await work(workMs)
        return { by: "quick" }
      },
      two: async (
        { v, go, workMs }: { v: number; go: number; workMs: number },
        ctx: ActivityContext,
      ) => {
        journalRun(ctx)
        await work(workMs)
        return { sum: v + go }
      },
    },
    body: (input: SoakInput, wf: Wf) =>
      Effect.gen(function* () {
        const { i, napMs, workMs } = input
        const one = yield* step<{ v: number }>(wf.one({ i, workMs }))
        yield* step(wf.nap(`${napMs} millis`))
        const go = yield* step<{ i: number }>(
          wf.go({ where: (event: { i: number }) => event.i === i }),
        )
        const won = yield* step<{ by: string }>(
          wf.first([wf.quick({ workMs }), Effect.as(step(wf.slow()), { by: "slow" })]),
        )
        const quiet = yield* step<Option.Option<unknown>>(
          wf.quiet({ where: (event: { i: number }) => event.i === i }),
        )
        const two = yield* step<{ sum: number }>(wf.two({ v: one.v, go: go.i, workMs }))
        return {
          first: one.v,
          go: go.i,
          winner: won.by,
          timedOut: Option.isNone(quiet),
          sum: two.sum,
        }
      }),
  }),
]

await heldUntilReleased()
