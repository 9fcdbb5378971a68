/**
 * Shape h, akter only: shapes a and b (`shapeTrials.ts`, the same code as their own trials) on a
 * database that holds more and more finished history. Between measurements it bulk-inserts
 * finished executions and their owners' events (`historySeed.ts`) up to each count of
 * `request.retained` (0 first), so every count is measured on the same database; then, with the
 * largest count retained, it measures a and b again while a retention sweep deletes that history
 * (`sweepRetention` as a runner's scheduled sweep runs it, paced by its default duty cycle, with a
 * keep period every seeded execution is past, stopped when each window ends), and once more with
 * the sweep unpaced (duty cycle 1), which the headline leaves out. Each figure is compared with the
 * empty database's.
 */
import { sql } from "kysely"
import { internalsOf } from "../runtime/akter.js"
import { sweepRetention } from "../runtime/retention/sweepRetention.js"
import { openAkterBench } from "./akterBench.js"
import { seedHistory } from "./historySeed.js"
import { scaled, SHAPES, type TrialRequest } from "./shapes.js"
import { runShape } from "./shapeTrials.js"
import { serveTrial } from "./trialChild.js"

/** The sweeping run's keep period: seeded executions finished a day ago and more, so all expire. */
const SWEEP_KEEP_MS = 60 * 60 * 1000

const countRows = async (databaseUrl: string, table: "executions" | "events") => {
  const { akter, close } = await openAkterBench(databaseUrl)
  try {
    const { rows } = await sql<{
      n: string
    }>`SELECT count(*) AS n FROM ${sql.table(`akter.${table}`)}`.execute(
      internalsOf(akter).storage.db,
    )
    return Number(rows[0]!.n)
  } finally {
    await close()
  }
}

/**
 * Shapes a and b on the database as it is now. `during` runs beside each of them and is aborted
 * when it ends; it returns the rows it deleted, reported per second of the two windows.
 */
const measureAB = async (
  request: TrialRequest,
  during?: (akter: Parameters<typeof internalsOf>[0], signal: AbortSignal) => Promise<number>,
) => {
  const figures: Record<string, number> = {}
  let deleted = 0
  let windowMs = 0
  for (const shape of ["a", "b"] as const) {
    const { akter, bench, close } = await openAkterBench(
      request.databaseUrl,
      shape === "b" ? SHAPES.b.concurrency : undefined,
    )
    const stopping = new AbortController()
    const startedAt = performance.now()
    const beside = during?.(akter, stopping.signal)
    try {
      const { metrics } = await runShape({ ...request, shape }, bench)
      if (shape === "a") figures["aP50Ms"] = metrics["p50Ms"]!
      else {
        figures["bWorkflowsPerSecond"] = metrics["workflowsPerSecond"]!
        figures["bPostgresCpuMsPer"] = metrics["postgresCpuMsPer"]!
      }
    } finally {
      stopping.abort()
      deleted += (await beside) ?? 0
      windowMs += performance.now() - startedAt
      await close()
    }
  }
  if (during !== undefined) figures["sweptRowsPerSecond"] = deleted / (windowMs / 1000)
  return figures
}

/**
 * Sweeps as a runner's scheduled sweep would when it finds a backlog: one sweep (another if it
 * finishes), at the given duty cycle, until the window ends. Returns the rows it deleted.
 */
const sweepUntilAborted =
  (dutyCycle: number | undefined) =>
  async (akter: Parameters<typeof internalsOf>[0], signal: AbortSignal) => {
    let deleted = 0
    while (!signal.aborted) {
      const report = await sweepRetention(internalsOf(akter), {
        keepMs: SWEEP_KEEP_MS,
        signal,
        ...(dutyCycle === undefined ? {} : { dutyCycle }),
      })
      deleted += report.executions + report.events + report.receipts + report.manifests
      // Nothing left to delete: a runner would sweep again only after its interval.
      if (!report.skipped) break
    }
    return deleted
  }

serveTrial(async (request) => {
  const retained = [...new Set([0, ...(request.retained ?? SHAPES.h.retained)])].sort(
    (a, b) => a - b,
  )
  const planned = Math.max(...retained)
  const metrics: Record<string, number> = {}
  const seedSeconds: Record<string, number> = {}
  let seeded = 0
  const record = (label: string, figures: Record<string, number>) => {
    for (const [name, value] of Object.entries(figures)) metrics[`${name}@${label}`] = value
    metrics[`aSlowdown@${label}`] = figures["aP50Ms"]! / metrics["aP50Ms@0"]!
    metrics[`bSlowdown@${label}`] =
      metrics["bWorkflowsPerSecond@0"]! / figures["bWorkflowsPerSecond"]!
  }
  for (const requested of retained) {
    // A smoke run (`--scale`) seeds less, but labels its figures by the count asked for.
    const count = scaled(requested, request.scale) * Math.sign(requested)
    if (count > seeded) {
      const { akter, close } = await openAkterBench(request.databaseUrl)
      const startedAt = performance.now()
      try {
        await seedHistory(internalsOf(akter).storage.db, {
          finished: count,
          from: seeded,
          planned: scaled(planned, request.scale),
          onProgress: (done) => process.stderr.write(`\rh: seeded ${done} finished executions`),
        })
      } finally {
        await close()
      }
      seedSeconds[count] = (performance.now() - startedAt) / 1000
      process.stderr.write(` (${seedSeconds[count]!.toFixed(0)} s)\n`)
      seeded = count
    }
    record(String(requested), await measureAB(request))
  }
  let sweptExecutions = 0
  let sweptEvents = 0
  if (planned > 0) {
    const before = await countRows(request.databaseUrl, "executions")
    const eventsBefore = await countRows(request.databaseUrl, "events")
    // The sweep as a runner runs it (paced by the default duty cycle), then unpaced for comparison.
    record("sweep", await measureAB(request, sweepUntilAborted(undefined)))
    record("sweepUnpaced", await measureAB(request, sweepUntilAborted(1)))
    sweptExecutions = before - (await countRows(request.databaseUrl, "executions"))
    sweptEvents = eventsBefore - (await countRows(request.databaseUrl, "events"))
    metrics["sweptExecutions"] = sweptExecutions
  }
  metrics["worstSlowdown"] = Math.max(
    ...Object.entries(metrics)
      .filter(([name]) => /^[ab]Slowdown@/.test(name) && !name.endsWith("@sweepUnpaced"))
      .map(([, value]) => value),
  )
  return {
    shape: request.shape,
    system: "akter",
    metrics,
    detail: { retained, seedSeconds, sweptExecutions, sweptEvents },
  }
})
