/**
 * The application of the multi-process failure cases (`akter run test/multi/multiApp.ts`): one
 * workflow per case. Activities append to the activity journal first; `hold` and `work` then wait
 * at a file gate named by their input's label until the test opens it, so a test can kill, drain or
 * fence their runner while an attempt is known to be running.
 */
import { Effect, Option } from "effect"
import { implementWorkflow, type ActivityContext } from "../../runtime/index.js"
import { journalRun } from "../support/activityJournal.js"
import { passGate } from "../support/fileGates.js"
import { heldUntilReleased } from "../support/heldStart.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

export const MULTI_MANIFEST = `
akter: 1
owner: Multi
events:
  Ping: { n: integer }
workflows:
  held:
    key: label
    input: { label: string, failFirst: boolean }
    output: { label: string, key: string, attempt: integer, done: boolean }
    errors:
      Flake: { attempt: integer }
    steps:
      hold:
        kind: activity
        input: { label: string, failFirst: boolean }
        output: { key: string, attempt: integer }
        errors: [Flake]
        retry: { attempts: 3, initial: 50ms, factor: 1, retryOn: [Flake] }
      after: { kind: activity, output: { done: boolean } }
  twoWaits:
    output: { first: integer, second: integer }
    steps:
      first: { kind: wait, event: Ping }
      second: { kind: wait, event: Ping }
  liveWait:
    input: { label: string }
    output: { n: integer, worked: boolean }
    steps:
      work: { kind: activity, input: { label: string }, output: { worked: boolean } }
      ping: { kind: wait, event: Ping }
  pingAfterWork:
    input: { workMs: integer }
    output: { n: integer }
    steps:
      work: { kind: activity, input: { workMs: integer } }
      ping: { kind: wait, event: Ping }
  timedWait:
    output: { outcome: string }
    steps:
      ping: { kind: wait, event: Ping, timeout: 2s }
      rest: { kind: activity }
  brief:
    input: { workMs: integer }
    output: { done: boolean }
    steps:
      touch: { kind: activity, input: { workMs: integer }, output: { touched: boolean } }
      untouch: { kind: activity }
`

export const registration = await registrationFromYaml(MULTI_MANIFEST, "test/multi/multi.yaml")

const Flake = registration.workflows["held"]!.errors["Flake"]!

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

type Wf = UntypedSteps

export const workflows = [
  implementWorkflow(registration, "held", {
    activities: {
      hold: async (
        { label, failFirst }: { label: string; failFirst: boolean },
        ctx: ActivityContext,
      ) => {
        const key = journalRun(ctx)
        if (failFirst && ctx.attempt === 1) throw new Flake({ attempt: ctx.attempt } as never)
        await passGate(label, ctx.signal)
        return { key, attempt: ctx.attempt }
      },
      after: (ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve({ done: true })
      },
    },
    body: (input: { label: string; failFirst: boolean }, wf: Wf) =>
      Effect.gen(function* () {
        const held = yield* step<{ key: string; attempt: number }>(wf.hold(input))
        const after = yield* step<{ done: boolean }>(wf.after())
        return { label: input.label, key: held.key, attempt: held.attempt, done: after.done }
      }),
  }),
  implementWorkflow(registration, "twoWaits", {
    activities: {},
    body: (_: undefined, wf: Wf) =>
      Effect.gen(function* () {
        const first = yield* step<{ n: number }>(wf.first())
        const second = yield* step<{ n: number }>(wf.second())
        return { first: first.n, second: second.n }
      }),
  }),
  implementWorkflow(registration, "liveWait", {
    activities: {
      work: async ({ label }: { label: string }, ctx: ActivityContext) => {
        journalRun(ctx)
        await passGate(label, ctx.signal)
        return { worked: true }
      },
    },
    body: (input: { label: string }, wf: Wf) =>
      Effect.map(
        Effect.all(
          [
            step<{ worked: boolean }>(wf.work({ label: input.label })),
            step<{ n: number }>(wf.ping()),
          ],
          { concurrency: 2 },
        ),
        ([work, ping]) => ({ n: ping.n, worked: work.worked }),
      ),
  }),
  implementWorkflow(registration, "pingAfterWork", {
    activities: {
      work: async ({ workMs }: { workMs: number }, ctx: ActivityContext) => {
        journalRun(ctx)
        await pause(workMs)
      },
    },
    body: (input: { workMs: number }, wf: Wf) =>
      Effect.gen(function* () {
        yield* step(wf.work({ workMs: input.workMs }))
        const ping = yield* step<{ n: number }>(wf.ping())
        return { n: ping.n }
      }),
  }),
  implementWorkflow(registration, "timedWait", {
    activities: {
      rest: (ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve()
      },
    },
    // `rest` keeps the wait from being the last step, whose exit would travel with the finish:
    // the test reads the wait's own recorded exit.
    body: (_: undefined, wf: Wf) =>
      Effect.gen(function* () {
        const ping = yield* step<Option.Option<{ n: number }>>(wf.ping())
        yield* step(wf.rest())
        return { outcome: Option.isSome(ping) ? `event ${ping.value.n}` : "timeout" }
      }),
  }),
  implementWorkflow(registration, "brief", {
    activities: {
      touch: async ({ workMs }: { workMs: number }, ctx: ActivityContext) => {
        journalRun(ctx)
        await pause(workMs)
        return { touched: true }
      },
      untouch: (ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve()
      },
    },
    body: (input: { workMs: number }, wf: Wf) =>
      Effect.gen(function* () {
        yield* step(wf.withCompensation(wf.touch({ workMs: input.workMs }), () => wf.untouch()))
        return { done: true }
      }),
  }),
]

await heldUntilReleased()
