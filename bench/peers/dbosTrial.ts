/**
 * DBOS Transact's side of one trial: the same shapes as akter's (`../shapeTrials.ts`), written
 * the way DBOS's documentation writes them — `registerWorkflow`, `runStep` per activity,
 * `DBOS.sleep`, `send`/`recv` for the event — launched in this process on the trial's own Postgres
 * database. Statements are counted by the same wrapper as akter's, on DBOS's copy of `pg`.
 */
import { DBOS } from "@dbos-inc/dbos-sdk"
import pg from "pg"
import { SEQUENTIAL_LENGTHS } from "../benchManifest.js"
import { SHAPES, stepName } from "../shapes.js"
import { logStatements } from "../statementLog.js"
import { markOnce, marks, runShape, type BenchSystem, type Started } from "../shapeTrials.js"
import { serveTrial } from "../trialChild.js"

// DBOS imports this same `pg` (bench/peers/node_modules/pg): wrapped before it connects.
const statementLog = logStatements(pg.Client)

const POKE_TOPIC = "poke"
const FOREVER_SECONDS = 24 * 60 * 60

const sequential = new Map(
  SEQUENTIAL_LENGTHS.map((steps) => [
    steps,
    DBOS.registerWorkflow(
      async (input: { n: number }) => {
        let value = input
        for (let index = 0; index < steps; index++) {
          const current = value
          value = await DBOS.runStep(async () => ({ n: current.n + 1 }), { name: stepName(index) })
        }
        return value
      },
      { name: `seq${steps}` },
    ),
  ]),
)

/** Executions whose body reached its `recv` (DBOS has no suspended state to read). */
const waiting = new Set<string>()

const wake = DBOS.registerWorkflow(
  async () => {
    const id = DBOS.workflowID!
    waiting.add(id)
    await DBOS.recv(POKE_TOPIC, { timeoutSeconds: FOREVER_SECONDS })
    markOnce(marks.wokeAt, id)
  },
  { name: "wake" },
)

const nap = DBOS.registerWorkflow(
  async () => {
    const id = DBOS.workflowID!
    markOnce(marks.sleptAt, id)
    await DBOS.sleep(SHAPES.e.sleepMs)
    markOnce(marks.wokeAt, id)
  },
  { name: "nap" },
)

const parked = DBOS.registerWorkflow(
  async () => {
    waiting.add(DBOS.workflowID!)
    await DBOS.recv(POKE_TOPIC, { timeoutSeconds: FOREVER_SECONDS })
  },
  { name: "parked" },
)

const child = DBOS.registerWorkflow(
  async (input: { n: number }) => DBOS.runStep(async () => ({ n: input.n + 1 }), { name: "work" }),
  { name: "child" },
)

/** Starts its first `n` children (one step each), then awaits every handle. */
const fanout = DBOS.registerWorkflow(
  async (input: { n: number }) => {
    const parent = DBOS.workflowID!
    const handles = []
    for (let index = 0; index < input.n; index++) {
      handles.push(
        await DBOS.startWorkflow(child, { workflowID: `${parent}-child-${index}` })({ n: index }),
      )
    }
    const results = await Promise.all(handles.map((handle) => handle.getResult()))
    if (results.some((result, index) => result.n !== index + 1)) {
      throw new Error("a child returned the wrong value")
    }
  },
  { name: "fanout" },
)

const started = (handle: { workflowID: string; getResult(): Promise<unknown> }): Started => ({
  id: handle.workflowID,
  result: async () => {
    await handle.getResult()
  },
})

serveTrial(async (request) => {
  DBOS.setConfig({ name: "akter-bench", systemDatabaseUrl: request.databaseUrl, logLevel: "warn" })
  await DBOS.launch()
  let parkedSince = new Map<string, number>()
  const bench: BenchSystem = {
    system: "dbos",
    store: { kind: "postgres", statementLog },
    runSequential: async (steps, ownerId) => {
      const workflow = sequential.get(steps)!
      const handle = await DBOS.startWorkflow(workflow, { workflowID: ownerId })({ n: 0 })
      const result = await handle.getResult()
      if (result.n !== steps) throw new Error(`seq${steps} returned ${JSON.stringify(result)}`)
    },
    startWake: async (ownerId) =>
      started(await DBOS.startWorkflow(wake, { workflowID: ownerId })()),
    // The body reached `recv`, and `recv` has had time to subscribe and look once.
    isParked: async (wakeStarted) => waiting.has(wakeStarted.id),
    emit: async (_ownerId, wakeStarted) => {
      await DBOS.send(wakeStarted.id, { n: 1 }, POKE_TOPIC)
    },
    startNap: async (ownerId) => started(await DBOS.startWorkflow(nap, { workflowID: ownerId })()),
    startParked: async (ownerId) =>
      started(await DBOS.startWorkflow(parked, { workflowID: ownerId })()),
    // A body counts as parked once it has sat in `recv` for half a second.
    parkedCount: async () => {
      const now = performance.now()
      const next = new Map<string, number>()
      let count = 0
      for (const id of waiting) {
        const since = parkedSince.get(id) ?? now
        next.set(id, since)
        if (now - since >= 500) count += 1
      }
      parkedSince = next
      return count
    },
    runFanOut: async (children, ownerId) => {
      const handle = await DBOS.startWorkflow(fanout, { workflowID: ownerId })({ n: children })
      await handle.getResult()
    },
  }
  try {
    return await runShape(request, bench)
  } finally {
    await DBOS.shutdown()
  }
})
