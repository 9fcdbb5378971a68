/**
 * `akter dev` with real processes: it serves the PGlite directory on a loopback port and runs a
 * runner of the app; two client processes with no runner of their own — one starts the tutorial's
 * triage, the other assigns an agent and awaits the result — complete the tutorial's flow through
 * the DATABASE_URL it printed, and `akter inspect` reads the same database there. A process opening
 * the directory directly is told that URL. SIGINT drains it and gives the directory up; a port in
 * use is a clear exit 2.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

interface Child {
  output(): string
  readonly exited: Promise<number | null>
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>
  kill(signal: NodeJS.Signals): Promise<number | null>
}

const start = (args: readonly string[], env: Record<string, string> = {}): Child => {
  const child = spawn(process.execPath, ["--conditions=akter-source", "--import", "tsx", ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: "", AKTER_LOG: "warn", NODE_OPTIONS: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  )
  return {
    output: () => output,
    exited,
    waitFor: async (pattern) => {
      const deadline = Date.now() + 180_000
      for (;;) {
        const match = pattern.exec(output)
        if (match !== null) return match
        if (child.exitCode !== null) throw new Error(`exited before ${pattern}:\n${output}`)
        if (Date.now() > deadline) throw new Error(`no ${pattern} in time:\n${output}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}

/** Runs a process to its end; its exit code and output. */
const complete = async (args: readonly string[], env: Record<string, string> = {}) => {
  const child = start(args, env)
  const code = await child.exited
  return { code, output: child.output() }
}

describe("akter dev", () => {
  const folder = mkdtempSync(join(tmpdir(), "akter-dev-"))
  const dataDir = join(folder, "pglite")
  const children: Child[] = []
  afterAll(async () => {
    for (const child of children) await child.kill("SIGKILL")
    rmSync(folder, { recursive: true, force: true })
  })

  it(
    "serves the directory to a runner and two client processes that complete the tutorial's flow",
    { timeout: 600_000 },
    async () => {
      const dev = start([
        "bin/akter.js",
        "dev",
        "test/dev/ticketApp.ts",
        "--port",
        "0",
        "--data-dir",
        dataDir,
      ])
      children.push(dev)
      const [, url] = await dev.waitFor(/^ {2}DATABASE_URL=(postgres:\/\/\S+)$/m)
      expect(url).toMatch(
        /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\?akter_statements=unprepared$/,
      )
      expect(dev.output()).toContain(`akter dev: serving ${dataDir} at 127.0.0.1:`)

      const opened = await complete(["test/dev/ticketClient.ts", "open", "t-3", "refund?"], {
        DATABASE_URL: url!,
      })
      expect(opened.code, opened.output).toBe(0)
      const executionId = /^opened (ak1\.\S+) in process/m.exec(opened.output)?.[1]
      expect(executionId).toBeDefined()

      const assigned = await complete(["test/dev/ticketClient.ts", "assign", "t-3", "ada"], {
        DATABASE_URL: url!,
      })
      expect(assigned.code, assigned.output).toBe(0)
      const result = assigned.output.trim().split("\n").at(-1)!
      expect(JSON.parse(result)).toEqual({
        _tag: "Success",
        value: { team: "billing", agent: "ada" },
      })

      const inspect = await complete(["bin/akter.js", "inspect", executionId!], {
        DATABASE_URL: url!,
      })
      expect(inspect.code, inspect.output).toBe(0)
      expect(inspect.output).toContain("finished")

      // Opening the directory itself is refused, with the URL to use instead.
      const direct = await complete(["test/dev/openDataDir.ts", dataDir, "close"])
      expect(direct.code).toBe(3)
      expect(direct.output).toContain(
        `refused DataDirectoryInUse: the PGlite data directory ${dataDir} is served by process `,
      )
      expect(direct.output).toContain(`connect to it with DATABASE_URL=${url}`)

      expect(await dev.kill("SIGINT")).toBe(0)
      expect(readdirSync(`${dataDir}.lock`)).toEqual([])
      // What the runner recorded is in the directory, readable once akter dev has stopped.
      const after = await complete([
        "bin/akter.js",
        "inspect",
        "--data-dir",
        dataDir,
        "--format",
        "json",
      ])
      expect(after.code, after.output).toBe(0)
      expect(after.output).toContain(executionId!)
    },
  )

  it(
    "refuses a port in use with exit 2 and says what to do; --help exits 0",
    { timeout: 300_000 },
    async () => {
      const blocker = createServer()
      await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve))
      const port = (blocker.address() as { port: number }).port
      try {
        const busy = await complete([
          "bin/akter.js",
          "dev",
          "test/dev/ticketApp.ts",
          "--port",
          String(port),
          "--data-dir",
          join(folder, "busy"),
        ])
        expect(busy.code).toBe(2)
        expect(busy.output).toContain(
          `akter dev: port ${port} on 127.0.0.1 is in use (another akter dev?): pass --port N, or --port 0 for any free port`,
        )
        expect(readdirSync(join(folder, "busy.lock"))).toEqual([])
      } finally {
        blocker.close()
      }
      const help = await complete(["bin/akter.js", "dev", "--help"])
      expect(help.code).toBe(0)
      expect(help.output).toContain("usage: akter dev [options]")
      expect(help.output).toContain("--port N")
    },
  )
})
