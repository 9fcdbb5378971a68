/**
 * `startRunner` as the `akter` entry exports it: the runner (claim loop, leases, the engine that
 * replays executions, schedules and retention) is loaded when a runner starts, not by
 * `import "akter"`, so a process that only starts, awaits and inspects executions never loads it.
 */
import type { Runner, RunnerOptions } from "./runner.js"

/**
 * Starts a runner for the given workflow implementations. It first accepts its manifests against
 * the open executions (refusing to start if it could not replay some), then serves.
 *
 * @example
 * const runner = await startRunner({ akter, workflows: [fulfill] })
 * process.on("SIGTERM", () => runner.close())
 */
export const startRunner = async (options: RunnerOptions): Promise<Runner> =>
  (await import("./runner.js")).startRunner(options)
