/**
 * Runner processes for multi-process tests: the real `akter run` CLI in a child process, killed
 * with real signals. Output is kept for the failure message of the test that started it.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

export interface ChildRunner {
  readonly process: ChildProcess
  /** Everything the child wrote to stdout and stderr so far. */
  output(): string
  /** Resolves when the child has exited, with its exit code or signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  kill(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Resolves once the output contains `text` (e.g. a log message). */
  waitForOutput(text: string, timeoutMs?: number): Promise<void>
}

export interface ChildRunnerOptions {
  readonly app: string
  readonly databaseUrl: string
  readonly args?: readonly string[]
  readonly env?: Readonly<Record<string, string>>
}

export const startChildRunner = (options: ChildRunnerOptions): ChildRunner => {
  const child = spawn(
    process.execPath,
    ["bin/akter.js", "run", options.app, "--poll-ms", "20", ...(options.args ?? [])],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: options.databaseUrl,
        AKTER_LOG: process.env["AKTER_LOG"] ?? "info",
        ...options.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  )
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  )
  return {
    process: child,
    output: () => output,
    exited,
    kill: (signal = "SIGKILL") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
    waitForOutput: async (text, timeoutMs = 20_000) => {
      const deadline = Date.now() + timeoutMs
      while (!output.includes(text)) {
        if (child.exitCode !== null)
          throw new Error(`runner exited before printing "${text}":\n${output}`)
        if (Date.now() > deadline)
          throw new Error(`runner did not print "${text}" in time:\n${output}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
  }
}
