/**
 * Implementations of test/fixtures/runtime/probe.yaml: each workflow exercises one engine
 * behaviour, and every activity counts its runs so a test can tell a replay from a rerun.
 */
import { readFileSync } from "node:fs"
import { Effect, Option } from "effect"
import { implementWorkflow, type WorkflowImplementation } from "../../runtime/index.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"

export const PROBE_FILE = "test/fixtures/runtime/probe.yaml"
export const probeYaml = readFileSync(
  new URL("../fixtures/runtime/probe.yaml", import.meta.url),
  "utf8",
)

/** Runs of each activity, keyed `ownerId/step`. */
export class RunCounter {
  private readonly counts = new Map<string, number>()
  bump(ownerId: string, step: string): number {
    const key = `${ownerId}/${step}`
    const next = (this.counts.get(key) ?? 0) + 1
    this.counts.set(key, next)
    return next
  }
  of(ownerId: string, step: string): number {
    return this.counts.get(`${ownerId}/${step}`) ?? 0
  }
}

/** A latch an activity waits on until the test opens it. */
export class Gates {
  private readonly gates = new Map<
    string,
    { promise: Promise<void>; open: () => void; entered: boolean }
  >()
  private gate(name: string) {
    let gate = this.gates.get(name)
    if (gate === undefined) {
      let open!: () => void
      const promise = new Promise<void>((resolve) => (open = resolve))
      gate = { promise, open, entered: false }
      this.gates.set(name, gate)
    }
    return gate
  }
  wait(name: string, signal: AbortSignal): Promise<void> {
    const gate = this.gate(name)
    gate.entered = true
    return new Promise((resolve, reject) => {
      gate.promise.then(resolve)
      signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true })
    })
  }
  open(name: string) {
    this.gate(name).open()
  }
  entered(name: string) {
    return this.gates.get(name)?.entered === true
  }
}

export interface Probe {
  readonly registration: OwnerRegistration
  readonly workflows: readonly WorkflowImplementation[]
  readonly runs: RunCounter
  readonly gates: Gates
  /** Idempotency keys seen per `ownerId/step`, in order. */
  readonly keys: Map<string, string[]>
  /** Abort signals seen by gated activities, per owner id. */
  readonly aborted: Set<string>
}

// Bodies are written against the untyped `wf`: these workflows have no generated SDK.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Wf = any

export const makeProbe = async (yaml: string = probeYaml): Promise<Probe> => {
  const registration = await registrationFromYaml(yaml, PROBE_FILE)
  const runs = new RunCounter()
  const gates = new Gates()
  const keys = new Map<string, string[]>()
  const aborted = new Set<string>()
  const implement = (
    workflow: string,
    activities: Record<string, (...args: never[]) => unknown>,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (input: any, wf: Wf) => Effect.Effect<unknown, unknown, any>,
  ) =>
    implementWorkflow(registration, workflow, {
      activities,
      body: body as unknown as (input: never, wf: Wf) => Effect.Effect<unknown, unknown>,
    })
  /** The `touch` activity several workflows share: counts its runs per owner. */
  const touch = (ctx: { ownerId: string }) =>
    Promise.resolve({ n: runs.bump(ctx.ownerId, "touch") })
  const Flake = registration.workflows["retry"]!.errors["Flake"]!
  const Refused = registration.workflows["failing"]!.errors["Refused"]!

  const workflows = [
    implement(
      "replay",
      {
        count: ({ label }: { label: string }, ctx: { ownerId: string }) =>
          Promise.resolve({ n: runs.bump(ctx.ownerId, "count") + label.length * 0 }),
        after: (ctx: { ownerId: string }) => {
          runs.bump(ctx.ownerId, "after")
          return Effect.succeed({ at: "later" })
        },
      },
      (input: { label: string }, wf: Wf) =>
        Effect.gen(function* () {
          const counted = yield* wf.count({ label: input.label })
          yield* wf.nap()
          const after = yield* wf.after()
          return { count: counted.n, after: after.at }
        }),
    ),
    implement(
      "retry",
      {
        flaky: (ctx: { ownerId: string; attempt: number }) => {
          runs.bump(ctx.ownerId, "flaky")
          return ctx.attempt < 3
            ? Effect.fail(new Flake({ attempt: ctx.attempt } as never))
            : Effect.succeed({ attempt: ctx.attempt })
        },
      },
      (_: undefined, wf: Wf) =>
        Effect.gen(function* () {
          const done = yield* wf.flaky()
          yield* wf.rest()
          return { attempts: done.attempt }
        }),
    ),
    implement(
      "raced",
      {
        fast: (ctx: { ownerId: string }) => {
          runs.bump(ctx.ownerId, "fast")
          return Promise.resolve({ by: "fast" })
        },
        slow: async (ctx: { ownerId: string; signal: AbortSignal }) => {
          runs.bump(ctx.ownerId, "slow")
          await gates.wait(`${ctx.ownerId}/slow`, ctx.signal)
          return { by: "slow" }
        },
      },
      (_: undefined, wf: Wf) =>
        Effect.gen(function* () {
          const won = yield* wf.first([wf.slow(), wf.fast()])
          yield* wf.rest()
          return { winner: won.by }
        }),
    ),
    implement(
      "compensated",
      {
        book: (ctx: { ownerId: string }) => {
          runs.bump(ctx.ownerId, "book")
          return Promise.resolve({ booking: `b-${ctx.ownerId}` })
        },
        unbook: (_: { booking: string }, ctx: { ownerId: string }) => {
          runs.bump(ctx.ownerId, "unbook")
          return Promise.resolve()
        },
        block: async (ctx: { ownerId: string; signal: AbortSignal }) => {
          runs.bump(ctx.ownerId, "block")
          ctx.signal.addEventListener("abort", () => aborted.add(ctx.ownerId))
          await gates.wait(`${ctx.ownerId}/block`, ctx.signal)
        },
      },
      (input: { hold: "sleep" | "block" | "none" }, wf: Wf) =>
        Effect.gen(function* () {
          yield* wf.withCompensation(wf.book(), (booked: { booking: string }) =>
            wf.unbook({ booking: booked.booking }),
          )
          if (input.hold === "sleep") yield* wf.rest()
          if (input.hold === "block") yield* wf.block()
        }),
    ),
    implement("quick", { touch }, (input: { id: string }, wf: Wf) =>
      Effect.gen(function* () {
        yield* wf.touch()
        return { id: input.id }
      }),
    ),
    implement("echo", { touch }, (input: { text: string }, wf: Wf) =>
      Effect.gen(function* () {
        yield* wf.touch()
        return { text: input.text }
      }),
    ),
    implement("keyless", { touch }, (_: undefined, wf: Wf) => wf.touch()),
    implement("waits", {}, (input: { mode: string }, wf: Wf) =>
      Effect.gen(function* () {
        if (input.mode === "single") return { seen: [(yield* wf.first()).n] }
        if (input.mode === "filtered") {
          return { seen: [(yield* wf.first({ where: (p: { n: number }) => p.n % 2 === 0 })).n] }
        }
        if (input.mode === "sequential") {
          const one = yield* wf.first()
          const two = yield* wf.second()
          return { seen: [one.n, two.n] }
        }
        const both = yield* Effect.all([wf.first(), wf.second()], { concurrency: 2 })
        return { seen: (both as { n: number }[]).map((p) => p.n) }
      }),
    ),
    implement("timed", {}, (_: undefined, wf: Wf) =>
      Effect.gen(function* () {
        const ping = yield* wf.ping()
        yield* wf.rest()
        const seen = ping as Option.Option<{ n: number }>
        return { outcome: Option.isSome(seen) ? `event ${seen.value.n}` : "timeout" }
      }),
    ),
    implement(
      "clocks",
      {
        stampA: (ctx: { ownerId: string }) =>
          Promise.resolve({ at: runs.bump(ctx.ownerId, "stampA") }),
        stampB: (ctx: { ownerId: string }) =>
          Promise.resolve({ at: runs.bump(ctx.ownerId, "stampB") }),
      },
      (_: undefined, wf: Wf) =>
        Effect.gen(function* () {
          const [a, b] = yield* Effect.all(
            [Effect.andThen(wf.a(), wf.stampA()), Effect.andThen(wf.b(), wf.stampB())],
            { concurrency: 2 },
          )
          return { a: a.at, b: b.at }
        }),
    ),
    implement(
      "twice",
      {
        count: (_: { label: string }, ctx: { ownerId: string }) =>
          Promise.resolve({ n: runs.bump(ctx.ownerId, "count") }),
      },
      (_: undefined, wf: Wf) =>
        Effect.gen(function* () {
          const one = yield* wf.count({ label: "x" })
          const two = yield* wf.count({ label: "y" })
          return { same: one.n === two.n }
        }),
    ),
    implement("undeclared", { touch: () => Promise.resolve() }, (_: undefined, wf: Wf) =>
      Effect.gen(function* () {
        yield* wf.touch()
        yield* wf.nope()
      }),
    ),
    implement(
      "failing",
      { refuse: () => Effect.fail(new Refused({ reason: "no stock" } as never)) },
      (_: undefined, wf: Wf) => wf.refuse(),
    ),
    implement("marked", {}, (_: undefined, wf: Wf) =>
      Effect.gen(function* () {
        yield* wf.gate()
        return { fraud: yield* wf.version("fraud") }
      }),
    ),
    implement("instant", { touch }, (input: { skip: boolean }, wf: Wf) =>
      input.skip
        ? Effect.succeed({ skipped: true })
        : Effect.map(wf.touch(), () => ({ skipped: false })),
    ),
    implement(
      "fenced",
      {
        hold: async (ctx: { ownerId: string; signal: AbortSignal }) => {
          const n = runs.bump(ctx.ownerId, "hold")
          await gates.wait(`${ctx.ownerId}/hold`, ctx.signal)
          return { n }
        },
        touch,
      },
      (input: { label: string; then: "activity" | "sleep" | "finish" }, wf: Wf) =>
        Effect.gen(function* () {
          const held = yield* wf.hold()
          if (input.then === "activity") yield* wf.touch()
          if (input.then === "sleep") yield* wf.rest()
          return { held: held.n }
        }),
    ),
    implement("parent", {}, (_: undefined, wf: Wf) =>
      Effect.map(wf.spawn("child-of-parent", { id: "kid" }), (child: string) => ({ child })),
    ),
  ]
  return { registration, workflows, runs, gates, keys, aborted }
}
