/**
 * akter as a `BenchSystem` (`shapeTrials.ts`): a runner and a client in this process on one
 * database, the workflows of `akterWorkflows.ts`. The trial of shapes a–g (`akterTrial.ts`) opens
 * one; shape h's (`historyTrial.ts`) opens one per amount of history.
 */
import pg from "pg"
import {
  createAkter,
  makeLogger,
  makeOwnerClient,
  startRunner,
  type Akter,
  type Execution,
} from "../runtime/index.js"
import { internalsOf } from "../runtime/akter.js"
import { benchImplementations } from "./akterWorkflows.js"
import { benchRegistration, sequentialWorkflow } from "./benchManifest.js"
import { logStatements } from "./statementLog.js"
import type { BenchSystem, Started } from "./shapeTrials.js"

// Before any connection exists: every statement of this process is classified and timed.
export const statementLog = logStatements(pg.Client)

type AnyExecution = Execution<unknown, unknown>
type BenchClient = Record<
  string,
  { start: (ownerId: string, input: unknown) => Promise<AnyExecution> }
> & { emit: (ownerId: string, event: string, payload: unknown) => Promise<unknown> }

const started = (execution: AnyExecution): Started & { execution: AnyExecution } => ({
  id: execution.executionId,
  execution,
  result: async () => {
    const result = (await execution.result()) as { _tag: string }
    if (result._tag !== "Success")
      throw new Error(`${execution.executionId} ended ${JSON.stringify(result)}`)
  },
})

export interface AkterBench {
  readonly akter: Akter
  readonly bench: BenchSystem
  close(): Promise<void>
}

/** Opens akter on `databaseUrl` with a runner of `concurrency` passes (the runner's default if absent). */
export const openAkterBench = async (
  databaseUrl: string,
  concurrency?: number,
): Promise<AkterBench> => {
  const akter = await createAkter({ databaseUrl, logger: makeLogger({ level: "warn" }) })
  const internals = internalsOf(akter)
  const client = makeOwnerClient<BenchClient>(akter, await benchRegistration())
  const runner = await startRunner({
    akter,
    workflows: await benchImplementations(),
    ...(concurrency === undefined ? {} : { concurrency }),
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
    store: { kind: "postgres", statementLog },
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
    runFanOut: async (children, ownerId) => {
      await started(await client["fanout"]!.start(ownerId, { n: children })).result()
    },
  }
  return {
    akter,
    bench,
    close: async () => {
      await runner.close()
      await akter.close()
    },
  }
}
