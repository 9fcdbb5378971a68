/**
 * The demo's runner processes: `akter run examples/app.ts` in a child process, at demo pace,
 * witnessing its activity runs in a log file, killed with a real SIGKILL. Its output is kept so a
 * failed demo can show what the runner said.
 */
import { spawn, type ChildProcess } from "node:child_process"
import path from "node:path"

export interface RunnerProcess {
  readonly pid: number
  /** Resolves once the runner logged that it serves; rejects if it exits first. */
  readonly ready: Promise<void>
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** The last lines it wrote, for an error message. */
  tail(lines?: number): string
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

export interface RunnerProcessOptions {
  /** The akter package root (holds bin/akter.js and examples/app.ts). */
  readonly root: string
  readonly databaseUrl: string
  readonly activityLog: string
  readonly args: readonly string[]
}

const READY_TIMEOUT_MS = 60_000

export const startRunnerProcess = (options: RunnerProcessOptions): RunnerProcess => {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      path.join(options.root, "bin/akter.js"),
      "run",
      path.join(options.root, "examples/app.ts"),
      ...options.args,
    ],
    {
      cwd: options.root,
      env: {
        ...process.env,
        DATABASE_URL: options.databaseUrl,
        AKTER_EXAMPLE_PACE: "demo",
        AKTER_EXAMPLE_ACTIVITY_LOG: options.activityLog,
        AKTER_LOG: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  )
  let output = ""
  const onData = (chunk: Buffer) => {
    output += chunk.toString()
    if (output.length > 200_000) output = output.slice(-100_000)
  }
  child.stdout!.on("data", onData)
  child.stderr!.on("data", onData)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  )
  const tail = (lines = 20) => output.trimEnd().split("\n").slice(-lines).join("\n")
  const ready = new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + READY_TIMEOUT_MS
    const look = () => {
      if (output.includes("runner started")) return resolve()
      if (child.exitCode !== null || child.signalCode !== null) {
        return reject(new Error(`the runner exited before it started serving:\n${tail()}`))
      }
      if (Date.now() > deadline)
        return reject(new Error(`the runner did not start in time:\n${tail()}`))
      setTimeout(look, 20)
    }
    look()
  })
  return {
    pid: child.pid ?? -1,
    ready,
    exited,
    tail,
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}
