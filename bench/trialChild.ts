/**
 * The child side of a trial: each trial runs in a process of its own (a fresh heap, its own RSS,
 * its own CPU clock), reads its request from argv, measures, sends the result to the parent over
 * the IPC channel and exits. akter's trial and the peers' use it.
 */
import { writeFile } from "node:fs/promises"
import { Session } from "node:inspector/promises"
import { cpuMsBetween, PostgresCpu, processCpuMs } from "./postgresCpu.js"
import type { StatementLog, StatementSummary } from "./statementLog.js"
import { summarize, tallySince } from "./statementLog.js"
import type { TrialRequest, TrialResult } from "./shapes.js"

export type TrialMessage =
  | { readonly kind: "result"; readonly result: TrialResult }
  | { readonly kind: "error"; readonly error: string }

export const serveTrial = (run: (request: TrialRequest) => Promise<TrialResult>): void => {
  const send = (message: TrialMessage, code: number) => {
    if (process.send === undefined) {
      process.stdout.write(`${JSON.stringify(message, null, 2)}\n`)
      process.exit(code)
    }
    process.send(message, () => process.exit(code))
  }
  const request = JSON.parse(process.argv[2] ?? "{}") as TrialRequest
  run(request).then(
    (result) => send({ kind: "result", result }, 0),
    (error: unknown) =>
      send(
        {
          kind: "error",
          error: error instanceof Error ? (error.stack ?? String(error)) : String(error),
        },
        1,
      ),
  )
}

/** What a measured window cost: wall time, CPU on both sides of the wire, and statements. */
export interface WindowCost {
  readonly wallMs: number
  readonly nodeCpuMs: number
  readonly postgresCpuMs: number
  readonly statements: StatementSummary
}

/** Runs `work` and reports its cost; Postgres CPU is sampled for the trial's database. */
export const measureWindow = async <A>(
  databaseUrl: string,
  log: StatementLog,
  work: () => Promise<A>,
): Promise<{ value: A; cost: WindowCost }> => {
  const cpu = await PostgresCpu.open(databaseUrl)
  try {
    const pgBefore = await cpu.sample()
    const statementsBefore = log.snapshot()
    const nodeBefore = process.cpuUsage()
    const startedAt = performance.now()
    const value = await work()
    const wallMs = performance.now() - startedAt
    const node = process.cpuUsage(nodeBefore)
    const statements = summarize(tallySince(log.tally, statementsBefore))
    const pgAfter = await cpu.sample()
    return {
      value,
      cost: {
        wallMs,
        nodeCpuMs: (node.user + node.system) / 1000,
        postgresCpuMs: cpuMsBetween(pgBefore, pgAfter),
        statements,
      },
    }
  } finally {
    await cpu.close()
  }
}

/**
 * Runs `work` and reports its wall time, this process's CPU and the CPU of the server process
 * `pid` (all its threads: `/proc/PID/stat` sums them) — for a system whose state lives in a server
 * of its own rather than in Postgres.
 */
export const measureProcessWindow = async <A>(
  pid: number,
  work: () => Promise<A>,
): Promise<{
  value: A
  cost: { wallMs: number; nodeCpuMs: number; processCpuMs: number }
}> => {
  const serverBefore = processCpuMs(pid)
  const nodeBefore = process.cpuUsage()
  const startedAt = performance.now()
  const value = await work()
  const wallMs = performance.now() - startedAt
  const node = process.cpuUsage(nodeBefore)
  const serverAfter = processCpuMs(pid)
  if (serverBefore === undefined || serverAfter === undefined) {
    throw new Error(`the server process ${pid} ended during the window`)
  }
  return {
    value,
    cost: {
      wallMs,
      nodeCpuMs: (node.user + node.system) / 1000,
      processCpuMs: serverAfter - serverBefore,
    },
  }
}

/**
 * Runs `work` under V8's sampling profiler and writes the profile to `file` (nothing when `file` is
 * undefined): only the measured window, without start-up, module loading or tsx's loader thread.
 */
export const profiled = async <A>(file: string | undefined, work: () => Promise<A>): Promise<A> => {
  if (file === undefined) return work()
  const session = new Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: 250 })
  await session.post("Profiler.start")
  try {
    return await work()
  } finally {
    const { profile } = await session.post("Profiler.stop")
    await writeFile(file, JSON.stringify(profile))
    session.disconnect()
  }
}

/** Runs `work` over `items` with at most `limit` in flight. */
export const forEachLimited = async <T>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> => {
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const index = next++
      await work(items[index]!, index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `done` every `everyMs` until it holds; rejects after `timeoutMs`. */
export const until = async (
  what: string,
  done: () => boolean | Promise<boolean>,
  timeoutMs: number,
  everyMs = 2,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await done())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}

/** Resident set and heap after a full collection (the trial runs with --expose-gc). */
export const settledMemory = async () => {
  const collect = (globalThis as { gc?: () => void }).gc
  for (let round = 0; round < 3; round++) {
    collect?.()
    await sleep(50)
  }
  const usage = process.memoryUsage()
  return { rssBytes: usage.rss, heapUsedBytes: usage.heapUsed, collected: collect !== undefined }
}
