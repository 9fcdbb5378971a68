/**
 * Gates between a test and the activities of its runner processes: an activity waits at a named
 * gate until the test opens it by creating a file, so a test can hold an attempt mid-run for as long
 * as it needs (to kill, drain or fence its runner) without guessing how long the attempt takes.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"

export const GATES_VARIABLE = "ACTIVITY_GATES"

/** A fresh folder for a test's gates; pass it to the runners as `ACTIVITY_GATES`. */
export const makeGateFolder = (): string => mkdtempSync(path.join(tmpdir(), "akter-gates-"))

/** A gate name safe as a file name, from any text (an owner id, an execution id). */
export const gateName = (text: string) => Buffer.from(text).toString("base64url")

export const openGate = (folder: string, name: string) =>
  writeFileSync(path.join(folder, gateName(name)), "")

/**
 * Resolves once the gate is open (child side). Rejects when `signal` aborts: the attempt was
 * abandoned, and a test must see that it stopped.
 */
export const passGate = (name: string, signal: AbortSignal): Promise<void> => {
  const folder = process.env[GATES_VARIABLE]
  if (folder === undefined || folder === "") return Promise.resolve()
  const file = path.join(folder, gateName(name))
  return new Promise((resolve, reject) => {
    const check = () => {
      if (signal.aborted) reject(new Error(`gate ${name}: the attempt was abandoned`))
      else if (existsSync(file)) resolve()
      else setTimeout(check, 10)
    }
    check()
  })
}
