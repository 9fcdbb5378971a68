/**
 * `akter/testing`: a fresh database per test, a clock you move, and a way to wait until a runner
 * has nothing left to do.
 *
 * @example
 * const akter = await testAkter()
 * const runner = await startRunner({ akter, workflows: [fulfill] })
 * const run = await Order.client(akter).fulfill.start("o-1", input)
 * akter.advance("10 minutes")
 * await runUntilIdle(akter, runner)
 */
import { sql } from "kysely"
import * as Duration from "effect/Duration"
import { createAkter, internalsOf, type Akter, type AkterOptions } from "../akter.js"
import { makeLogger } from "../log.js"
import { estimatedNow, nowMs } from "../storage/clock.js"
import type { Runner } from "../runner/runner.js"

export { recordingTracer, type RecordedSpan, type RecordingTracer } from "./recordingTracer.js"
/** Also exported by `akter`: what a test asserts on, as `akter inspect --format json` prints it. */
export { inspectExecution } from "../inspect/executionListing.js"

export interface TestAkter extends Akter {
  /** Moves the clock every statement of this handle reads forward; runners are woken to look. */
  advance(duration: Duration.Input): void
  /** The database clock as this handle sees it (offset included), in epoch milliseconds. */
  now(): number
}

/**
 * An akter handle on a fresh in-memory PGlite database (or the given Postgres database), migrated,
 * with a controllable clock. Logs only warnings unless `AKTER_LOG` says otherwise.
 */
export const testAkter = async (options: AkterOptions = {}): Promise<TestAkter> => {
  const akter = await createAkter({
    ...options,
    dataDir: options.dataDir ?? "memory",
    logger:
      options.logger ??
      makeLogger({ level: (process.env["AKTER_LOG"] as "info" | undefined) ?? "warn" }),
  })
  const internals = internalsOf(akter)
  return Object.assign(akter, {
    advance: (duration: Duration.Input) => {
      internals.clock.offsetMs += Duration.toMillis(duration)
      internals.wakeups.wakeBucket(0)
    },
    now: () => estimatedNow(internals.clock),
  })
}

/**
 * Resolves once the runner has no live pass, nothing is due and nothing is running: every execution
 * has finished or is suspended until a time still ahead (or an event). Rejects after `timeoutMs`.
 */
export const runUntilIdle = async (
  akter: Akter,
  runner: Runner,
  options: { readonly timeoutMs?: number | undefined } = {},
): Promise<void> => {
  const internals = internalsOf(akter)
  const deadline = Date.now() + (options.timeoutMs ?? 10_000)
  let quiet = 0
  while (quiet < 2) {
    if (Date.now() > deadline)
      throw new Error(`runner still busy after ${options.timeoutMs ?? 10_000} ms`)
    runner.poll()
    await new Promise((resolve) => setTimeout(resolve, 5))
    // A running execution without a live pass was abandoned; its recovery timer is still to come.
    const { rows } = await sql<{ due: boolean }>`
      SELECT EXISTS (SELECT 1 FROM akter.outbox WHERE due_at_ms <= ${nowMs(internals.clock)})
        OR EXISTS (SELECT 1 FROM akter.executions WHERE status = 'running') AS due
    `.execute(internals.storage.db)
    quiet = runner.live === 0 && rows[0]?.due !== true ? quiet + 1 : 0
  }
}
