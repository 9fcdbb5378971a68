/**
 * The application of the fault-point matrix (`akter run test/crash/gauntletApp.ts`). One execution
 * of `Gauntlet.run` passes through every step kind and every fault point: an activity that emits the
 * event its next step waits for (client `emit` points), a sleep, a wait that times out, a race of an
 * activity against a wait, an activity that fails once and is retried after a durable backoff, a
 * `start` step (the relay's points), a start that awaits its child's result (the child's finish
 * wakes the parent), a start whose child the parent's end interrupts (the `children` sweep's
 * points), and an activity that starts another execution and interrupts it (client `start` and
 * `interrupt` points) and starts one more that its deadline interrupts (the `deadline` points),
 * after its compensation. `leaf` declares a concurrency key, so its starts take its group's lock
 * and its finishes pass the admission points (`admit`). The schedule `chimes` starts `tock` at the
 * tick the matrix leaves due (the `schedule` points, as the runner starts). Side effects inside
 * activities carry the attempt's idempotency key as their command id, so a rerun after a kill
 * repeats none of them.
 *
 * The sleep, the timeout and the backoff are long enough that each parks its pass even on a loaded
 * machine, so the order of fault-point hits stays the same from run to run. Every activity first
 * appends a line to the activity journal; the app waits at load until the test releases it when
 * started held.
 */
import { Effect, Option } from "effect"
import {
  createAkter,
  implementWorkflow,
  makeOwnerClient,
  type ActivityContext,
  type Akter,
} from "../../runtime/index.js"
import { journalRun } from "../support/activityJournal.js"
import { heldUntilReleased } from "../support/heldStart.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

export const GAUNTLET_MANIFEST = `
akter: 1
owner: Gauntlet
events:
  Ready: { n: integer }
  Never: { n: integer }
workflows:
  run:
    input: { seed: integer }
    output:
      ready: integer
      timedOut: boolean
      winner: string
      flakyAttempt: integer
      spawned: string
      heir: integer
      orphan: string
      victim: string
      expiring: string
      total: integer
    errors:
      Flake: { attempt: integer }
    steps:
      prepare: { kind: activity, input: { seed: integer }, output: { sequence: integer } }
      ready: { kind: wait, event: Ready }
      nap: { kind: sleep, duration: 800ms }
      quiet: { kind: wait, event: Never, timeout: 400ms }
      quick: { kind: activity, output: { by: string } }
      never: { kind: wait, event: Never }
      first: { kind: race, output: { by: string } }
      flaky:
        kind: activity
        output: { attempt: integer }
        errors: [Flake]
        retry: { attempts: 3, initial: 200ms, factor: 1, retryOn: [Flake] }
      spawn: { kind: start, workflow: leaf }
      adopt: { kind: start, workflow: leaf, await: true }
      orphan: { kind: start, workflow: victim, parentClose: interrupt }
      launch:
        kind: activity
        input: { victimOwner: string }
        output: { victim: string, expiring: string }
      total: { kind: activity, input: { parts: "integer[]" }, output: { sum: integer } }
  leaf:
    input: { n: integer }
    output: { doubled: integer }
    concurrency: { key: n, limit: 1 }
    steps:
      double: { kind: activity, input: { n: integer }, output: { doubled: integer } }
  victim:
    steps:
      hold: { kind: wait, event: Never }
  expiring:
    deadline: 1s
    steps:
      book: { kind: activity, output: { booking: string } }
      unbook: { kind: activity, input: { booking: string } }
      hold: { kind: wait, event: Never }
  tock:
    steps:
      chime: { kind: activity }
schedules:
  chimes:
    description: >-
      Ticks once in a run: its ticks are ten years apart, and the matrix leaves its latest one
      undecided before the runners start.
    workflow: tock
    every: 3650d
    ownerId: gauntlet-chimes
`

export const registration = await registrationFromYaml(
  GAUNTLET_MANIFEST,
  "test/crash/gauntlet.yaml",
)

const Flake = registration.workflows["run"]!.errors["Flake"]!

// The app's own handle for the client calls its activities make (the runner's is the CLI's).
let handle: Promise<Akter> | undefined
const clientFor = async (ctx: ActivityContext) => {
  handle ??= createAkter({ databaseUrl: process.env["DATABASE_URL"]!, migrate: false, poolSize: 2 })
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return makeOwnerClient<any>(await handle, registration, ctx.caller)
}

type Wf = UntypedSteps

interface Outcome {
  readonly ready: number
  readonly timedOut: boolean
  readonly winner: string
  readonly flakyAttempt: number
  readonly spawned: string
  readonly heir: number
  readonly orphan: string
  readonly victim: string
  readonly expiring: string
  readonly total: number
}

export const workflows = [
  implementWorkflow(registration, "run", {
    activities: {
      prepare: async ({ seed }: { seed: number }, ctx: ActivityContext) => {
        const key = journalRun(ctx)
        const client = await clientFor(ctx)
        const receipt = await client.emit(ctx.ownerId, "Ready", { n: seed * 2 }, { commandId: key })
        return { sequence: receipt.sequence as number }
      },
      quick: async (ctx: ActivityContext) => {
        journalRun(ctx)
        // Long enough for the race's wait branch to register before this branch wins.
        await new Promise((resolve) => setTimeout(resolve, 30))
        return { by: "quick" }
      },
      flaky: (ctx: ActivityContext) => {
        journalRun(ctx)
        return ctx.attempt < 2
          ? Effect.fail(new Flake({ attempt: ctx.attempt } as never))
          : Effect.succeed({ attempt: ctx.attempt })
      },
      launch: async ({ victimOwner }: { victimOwner: string }, ctx: ActivityContext) => {
        const key = journalRun(ctx)
        const client = await clientFor(ctx)
        const victim = await client.victim.start(victimOwner, undefined, { commandId: key })
        await victim.interrupt()
        const expiring = await client.expiring.start(`${victimOwner}-expiring`, undefined, {
          commandId: key,
        })
        return { victim: victim.executionId as string, expiring: expiring.executionId as string }
      },
      total: ({ parts }: { parts: number[] }, ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve({ sum: parts.reduce((sum, part) => sum + part, 0) })
      },
    },
    body: ({ seed }: { seed: number }, wf: Wf) =>
      Effect.gen(function* () {
        yield* step(wf.prepare({ seed }))
        const ready = yield* step<{ n: number }>(wf.ready())
        yield* step(wf.nap())
        const quiet = yield* step<Option.Option<unknown>>(wf.quiet())
        const won = yield* step<{ by: string }>(
          wf.first([wf.quick(), Effect.map(step(wf.never()), () => ({ by: "never" }))]),
        )
        const flaky = yield* step<{ attempt: number }>(wf.flaky())
        const spawned = yield* step<string>(wf.spawn(`${wf.ownerId}-leaf`, { n: ready.n }))
        const heir = yield* step<{ doubled: number }>(wf.adopt(`${wf.ownerId}-heir`, { n: 5 }))
        // Waits for an event that never comes: the run's end interrupts it.
        const orphan = yield* step<string>(wf.orphan(`${wf.ownerId}-orphan`))
        const launched = yield* step<{ victim: string; expiring: string }>(
          wf.launch({ victimOwner: `${wf.ownerId}-victim` }),
        )
        const total = yield* step<{ sum: number }>(wf.total({ parts: [ready.n, flaky.attempt] }))
        const outcome: Outcome = {
          ready: ready.n,
          timedOut: Option.isNone(quiet),
          winner: won.by,
          flakyAttempt: flaky.attempt,
          spawned,
          heir: heir.doubled,
          orphan,
          victim: launched.victim,
          expiring: launched.expiring,
          total: total.sum,
        }
        return outcome
      }),
  }),
  implementWorkflow(registration, "leaf", {
    activities: {
      double: ({ n }: { n: number }, ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve({ doubled: n * 2 })
      },
    },
    body: (input: { n: number }, wf: Wf) => step<{ doubled: number }>(wf.double({ n: input.n })),
  }),
  implementWorkflow(registration, "victim", {
    activities: {},
    // Interrupted by `launch` (or, as the orphan, by the run's end) before any Never event could come.
    body: (_: undefined, wf: Wf) => Effect.asVoid(step(wf.hold())),
  }),
  implementWorkflow(registration, "expiring", {
    activities: {
      book: (ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve({ booking: `b-${ctx.ownerId}` })
      },
      unbook: (_: { booking: string }, ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve()
      },
    },
    // Waits for an event that never comes until its deadline interrupts it: unbook runs once.
    body: (_: undefined, wf: Wf) =>
      Effect.gen(function* () {
        yield* step(
          wf.withCompensation(wf.book(), (booked: { booking: string }) =>
            wf.unbook({ booking: booked.booking }),
          ),
        )
        yield* step(wf.hold())
      }),
  }),
  implementWorkflow(registration, "tock", {
    activities: {
      chime: (ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve()
      },
    },
    // Started by the schedule's tick, once however the runner that decides the tick dies.
    body: (_: undefined, wf: Wf) => Effect.asVoid(step(wf.chime())),
  }),
]

await heldUntilReleased()
