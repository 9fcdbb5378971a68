/**
 * akter's side of one trial: a runner and a client in this process, on the trial's Postgres
 * database, driven through `shapeTrials.ts`. `run.ts` starts one process per trial; by hand:
 * `node --import tsx --expose-gc bench/akterTrial.ts '{"shape":"a","databaseUrl":"postgres://…/db","scale":1}'`.
 */
import { Effect } from "effect"
import pg from "pg"
import {
  createAkter,
  implementWorkflow,
  makeLogger,
  makeOwnerClient,
  startRunner,
  type Execution,
  type WorkflowImplementation,
} from "../runtime/index.js"
import { internalsOf } from "../runtime/akter.js"
import { benchRegistration, SEQUENTIAL_LENGTHS, sequentialWorkflow } from "./benchManifest.js"
import { SHAPES, stepName } from "./shapes.js"
import { logStatements } from "./statementLog.js"
import { markOnce, marks, runShape, type BenchSystem, type Started } from "./shapeTrials.js"
import { serveTrial } from "./trialChild.js"

// Before any connection exists: every statement of this process is classified and timed.
const statementLog = logStatements(pg.Client)

type Step = (input: { n: number }) => Effect.Effect<{ n: number }>
type Steps = Record<string, Step> & {
  readonly executionId: string
  poked: () => Effect.Effect<{ n: number }>
  nap: () => Effect.Effect<void>
}
type AnyExecution = Execution<unknown, unknown>
type BenchClient = Record<
  string,
  { start: (ownerId: string, input: unknown) => Promise<AnyExecution> }
> & { emit: (ownerId: string, event: string, payload: unknown) => Promise<unknown> }

const implementations = async (): Promise<WorkflowImplementation[]> => {
  const registration = await benchRegistration()
  const activities = (steps: number) =>
    Object.fromEntries(
      Array.from({ length: steps }, (_, index) => [
        stepName(index),
        async ({ n }: { n: number }) => ({ n: n + 1 }),
      ]),
    )
  const sequential = SEQUENTIAL_LENGTHS.map((steps) =>
    implementWorkflow(registration, sequentialWorkflow(steps), {
      activities: activities(steps),
      body: (input: { n: number }, wf: Steps) =>
        Effect.gen(function* () {
          let value = input
          for (let index = 0; index < steps; index++) value = yield* wf[stepName(index)]!(value)
          return value
        }),
    }),
  )
  const wake = implementWorkflow(registration, "wake", {
    activities: {},
    body: (_input: { n: number }, wf: Steps) =>
      Effect.gen(function* () {
        yield* wf.poked()
        yield* Effect.sync(() => markOnce(marks.wokeAt, wf.executionId))
      }),
  })
  const nap = implementWorkflow(registration, "nap", {
    activities: {},
    body: (_input: { n: number }, wf: Steps) =>
      Effect.gen(function* () {
        yield* Effect.sync(() => markOnce(marks.sleptAt, wf.executionId))
        yield* wf.nap()
        yield* Effect.sync(() => markOnce(marks.wokeAt, wf.executionId))
      }),
  })
  const parked = implementWorkflow(registration, "parked", {
    activities: {},
    body: (_input: { n: number }, wf: Steps) => wf.poked(),
  })
  return [...sequential, wake, nap, parked]
}

const started = (execution: AnyExecution): Started & { execution: AnyExecution } => ({
  id: execution.executionId,
  execution,
  result: async () => {
    const result = (await execution.result()) as { _tag: string }
    if (result._tag !== "Success")
      throw new Error(`${execution.executionId} ended ${JSON.stringify(result)}`)
  },
})

serveTrial(async (request) => {
  const akter = await createAkter({
    databaseUrl: request.databaseUrl,
    logger: makeLogger({ level: "warn" }),
  })
  const internals = internalsOf(akter)
  const client = makeOwnerClient<BenchClient>(akter, await benchRegistration())
  const runner = await startRunner({
    akter,
    workflows: await implementations(),
    ...(request.shape === "b" ? { concurrency: SHAPES.b.concurrency } : {}),
  })
  const countSuspended = async () => {
    const row = await internals.storage.db
      .selectFrom("akter.executions")
      .select((eb) => eb.fn.countAll<string>().as("count"))
      .where("status", "=", "suspended")
      .executeTakeFirst()
    return Number(row?.count ?? 0)
  }
  const bench: BenchSystem = {
    system: "akter",
    statementLog,
    ownCounters: () => internals.storage.counters,
    runSequential: async (steps, ownerId) => {
      const execution = await client[sequentialWorkflow(steps)]!.start(ownerId, { n: 0 })
      const result = (await execution.result()) as { _tag: string; value?: { n: number } }
      if (result._tag !== "Success" || result.value?.n !== steps) {
        throw new Error(`${sequentialWorkflow(steps)} ended ${JSON.stringify(result)}`)
      }
    },
    startWake: async (ownerId) => started(await client["wake"]!.start(ownerId, { n: 0 })),
    isParked: async (wake) => {
      const status = (await (wake as ReturnType<typeof started>).execution.status()) as {
        status: string
      }
      return status.status === "suspended" && runner.live === 0
    },
    emit: async (ownerId) => {
      await client.emit(ownerId, "Poke", { n: 1 })
    },
    startNap: async (ownerId) => started(await client["nap"]!.start(ownerId, { n: 0 })),
    startParked: async (ownerId) => started(await client["parked"]!.start(ownerId, { n: 0 })),
    parkedCount: async () => (runner.live === 0 ? countSuspended() : -1),
  }
  try {
    return await runShape(request, bench)
  } finally {
    await runner.close()
    await akter.close()
  }
})
