/**
 * One process per PGlite data directory, with real processes: while `akter run` serves a
 * directory, a client process opening it (the runner + client split that used to split the
 * database silently) and `akter inspect` are refused with `DataDirectoryInUse` naming the runner's
 * pid and what to do, and nothing is written; a holder killed with SIGKILL leaves a stale lock
 * that the next process takes over; of processes racing for one directory exactly one opens it.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { createAkter } from "../../runtime/akter.js"
import { DataDirectoryInUse } from "../../runtime/errors.js"
import { lockPgliteDirectory } from "../../runtime/storage/pgliteLock.js"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const OPENER = "test/dev/openDataDir.ts"

interface Child {
  readonly pid: number
  output(): string
  readonly exited: Promise<number | null>
  waitFor(text: string): Promise<void>
  kill(signal: NodeJS.Signals): Promise<number | null>
}

const start = (args: readonly string[], useTsx = false): Child => {
  const child = spawn(
    process.execPath,
    useTsx ? ["--conditions=akter-source", "--import", "tsx", ...args] : args,
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: "", AKTER_LOG: "info", NODE_OPTIONS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  )
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  )
  return {
    pid: child.pid!,
    output: () => output,
    exited,
    waitFor: async (text) => {
      const deadline = Date.now() + 120_000
      while (!output.includes(text)) {
        if (child.exitCode !== null) throw new Error(`exited before "${text}":\n${output}`)
        if (Date.now() > deadline) throw new Error(`no "${text}" in time:\n${output}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}

const opener = (dataDir: string, mode: "hold" | "close") => start([OPENER, dataDir, mode], true)

describe("a PGlite data directory belongs to one process", () => {
  const folders: string[] = []
  const children: Child[] = []
  const fresh = () => {
    const folder = mkdtempSync(join(tmpdir(), "akter-pglite-lock-"))
    folders.push(folder)
    return join(folder, "pglite")
  }
  afterAll(async () => {
    for (const child of children) await child.kill("SIGKILL")
    for (const folder of folders) rmSync(folder, { recursive: true, force: true })
  })

  it(
    "refuses a client process and akter inspect while akter run holds the directory, naming the runner",
    { timeout: 300_000 },
    async () => {
      const dataDir = fresh()
      const runner = start(["bin/akter.js", "run", "test/multi/multiApp.ts", "--data-dir", dataDir])
      children.push(runner)
      await runner.waitFor("runner started")

      const client = opener(dataDir, "close")
      children.push(client)
      expect(await client.exited, client.output()).toBe(3)
      const refusal = client.output()
      expect(refusal).toContain(
        `refused DataDirectoryInUse: the PGlite data directory ${dataDir} is in use by process ${runner.pid} on `,
      )
      expect(refusal).toContain("bin/akter.js run test/multi/multiApp.ts")
      expect(refusal).toContain("run the runner under `akter dev`")
      expect(refusal).not.toContain("opened")

      const inspect = start(["bin/akter.js", "inspect", "--data-dir", dataDir])
      children.push(inspect)
      expect(await inspect.exited).toBe(2)
      expect(inspect.output()).toContain(`is in use by process ${runner.pid} on `)

      // The runner was not disturbed, and gives the directory up when it stops.
      expect(runner.output()).not.toContain("error")
      expect(await runner.kill("SIGTERM")).toBe(0)
      const after = opener(dataDir, "close")
      children.push(after)
      expect(await after.exited, after.output()).toBe(0)
      expect(after.output()).toContain(`opened ${after.pid}`)
    },
  )

  it("takes over the lock of a holder killed with SIGKILL", { timeout: 300_000 }, async () => {
    const dataDir = fresh()
    const holder = opener(dataDir, "hold")
    children.push(holder)
    await holder.waitFor("opened")
    expect(() => lockPgliteDirectory(dataDir)).toThrow(DataDirectoryInUse)
    await holder.kill("SIGKILL")
    expect(readdirSync(`${dataDir}.lock`)).toEqual(["holder-1.json"])
    const akter = await createAkter({ dataDir })
    expect(readdirSync(`${dataDir}.lock`)).toEqual(["holder-2.json"])
    await akter.close()
    expect(readdirSync(`${dataDir}.lock`)).toEqual([])
  })

  it(
    "lets exactly one of four processes racing for a stale directory open it",
    { timeout: 300_000 },
    async () => {
      const dataDir = fresh()
      const first = opener(dataDir, "hold")
      children.push(first)
      await first.waitFor("opened")
      await first.kill("SIGKILL")
      const racers = [1, 2, 3, 4].map(() => opener(dataDir, "hold"))
      children.push(...racers)
      const deadline = Date.now() + 240_000
      const settled = () =>
        racers.filter((racer) => /opened|refused/.test(racer.output())).length === 4
      while (!settled() && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const outputs = racers.map((racer) => racer.output())
      expect(
        outputs.filter((text) => text.includes("opened")),
        outputs.join("\n"),
      ).toHaveLength(1)
      const winner = racers.find((racer) => racer.output().includes("opened"))!
      for (const text of outputs.filter((output) => output.includes("refused"))) {
        expect(text).toContain(`refused DataDirectoryInUse: `)
        expect(text).toContain(`in use by process ${winner.pid} `)
      }
      for (const racer of racers) await racer.kill("SIGKILL")
      expect(existsSync(`${dataDir}.lock`)).toBe(true)
    },
  )

  it("refuses a second open in the same process until the first closes", async () => {
    const dataDir = fresh()
    const akter = await createAkter({ dataDir })
    const second = await createAkter({ dataDir }).catch((error: unknown) => error)
    expect(second).toBeInstanceOf(DataDirectoryInUse)
    expect((second as DataDirectoryInUse).holder.pid).toBe(process.pid)
    await akter.close()
    const third = await createAkter({ dataDir })
    await third.close()
  })
})
