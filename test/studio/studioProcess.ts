/**
 * Runs the real `akter studio` command as a child process for the CLI and browser tests, and
 * waits for the line that says where it listens (generous: the machine may be loaded).
 */
import { spawn, type ChildProcess } from "node:child_process"
import { fileURLToPath } from "node:url"

const BIN = fileURLToPath(new URL("../../bin/akter.js", import.meta.url))

export interface StudioProcess {
  readonly child: ChildProcess
  readonly url: string
  readonly token: string
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>
  output(): string
}

export const startStudioProcess = (
  args: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string | undefined>> = {},
): Promise<StudioProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [BIN, "studio", "--port", "0", "--format", "json", ...args],
      { cwd, env: { ...process.env, NO_COLOR: "1", ...env }, stdio: ["ignore", "pipe", "pipe"] },
    )
    let stdout = ""
    let stderr = ""
    const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)))
    const timeout = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`akter studio did not start within 60 s:\n${stdout}\n${stderr}`))
    }, 60_000)
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
      const line = stdout.split("\n").find((text) => text.startsWith("{"))
      if (line === undefined) return
      clearTimeout(timeout)
      const { url, token } = JSON.parse(line) as { url: string; token: string }
      resolve({
        child,
        url,
        token,
        output: () => stdout + stderr,
        stop: async () => {
          child.kill("SIGTERM")
          return exited
        },
      })
    })
    void exited.then((code) => {
      clearTimeout(timeout)
      reject(new Error(`akter studio exited with ${code} before listening:\n${stdout}\n${stderr}`))
    })
  })
