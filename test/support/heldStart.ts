/**
 * A runner process that loads its app and then waits to be let go. A test app awaits
 * `heldUntilReleased()` at the top level; `akter run` imports the app before it opens the database,
 * so a held runner has paid for loading its code but holds no lease and has written nothing. A crash
 * test starts the replacement of the runner it is about to kill this way, and releases it once the
 * kill happened: the restart then costs no module loading.
 */
import { existsSync } from "node:fs"

export const HOLD_VARIABLE = "RUNNER_HOLD"

/** Resolves once the file `RUNNER_HOLD` names exists (at once when the variable is not set). */
export const heldUntilReleased = async (): Promise<void> => {
  const file = process.env[HOLD_VARIABLE]
  if (file === undefined || file === "") return
  while (!existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 10))
}
