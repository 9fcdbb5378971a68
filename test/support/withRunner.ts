/**
 * A runner for the length of one piece of a test: started with the given options, closed (drained)
 * when the piece ends, whether it passed or threw.
 */
import { startRunner, type Runner, type RunnerOptions } from "../../runtime/runner/runner.js"

export const withRunner = async <A>(
  options: RunnerOptions,
  run: (runner: Runner) => Promise<A>,
): Promise<A> => {
  const runner = await startRunner(options)
  try {
    return await run(runner)
  } finally {
    await runner.close()
  }
}
