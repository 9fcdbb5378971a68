/**
 * Several `akter run` processes on one database, as a multi-process test drives them: each connects
 * under its own `application_name` (so the write audit can tell who wrote what), can be started
 * held (loaded, not yet serving), killed, paused or drained, and its JSON log lines can be read and
 * counted.
 */
import { randomUUID } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { startChildRunner, type ChildRunner } from "./childRunner.js"
import { HOLD_VARIABLE } from "./heldStart.js"
import { waitUntil } from "./waitUntil.js"

export interface LogLine {
  readonly level: string
  readonly message: string
  readonly [field: string]: unknown
}

/** The JSON lines of a runner's output (other text, like a fault's kill notice, is skipped). */
export const logLines = (output: string): LogLine[] => {
  const lines: LogLine[] = []
  for (const line of output.split("\n")) {
    if (!line.startsWith("{")) continue
    try {
      const parsed = JSON.parse(line) as Partial<LogLine>
      if (typeof parsed.message === "string") lines.push(parsed as LogLine)
    } catch {
      // A line cut off by a kill.
    }
  }
  return lines
}

export interface FleetRunner {
  /** The `application_name` its connections use. */
  readonly name: string
  readonly child: ChildRunner
  readonly pid: number
  /** The runner's id, from its "runner started" line (waits for it). */
  runnerId(timeoutMs?: number): Promise<string>
  /** Lets a held runner go on to open the database and serve. */
  release(): void
  logLines(): LogLine[]
  /** How many log lines carry this message. */
  count(message: string): number
  /**
   * How many heartbeats found leases lost or gave buckets back: each abandons the passes of those
   * buckets, and their running activities run again — a disruption like a kill, without one.
   */
  leaseDisruptions(): number
  /** Whether the process has exited. */
  readonly gone: boolean
}

export interface SpawnOptions {
  /** `AKTER_FAULTS` for this process, e.g. `settle.after:2`. */
  readonly faults?: string
  /** Start loaded but held until `release()`. */
  readonly held?: boolean
  readonly env?: Readonly<Record<string, string>>
  readonly args?: readonly string[]
}

export interface FleetOptions {
  readonly app: string
  readonly databaseUrl: string
  /** CLI options for every runner, e.g. `["--lease-ms", "1000"]`. */
  readonly args?: readonly string[]
  readonly env?: Readonly<Record<string, string>>
}

export interface Fleet {
  spawn(options?: SpawnOptions): FleetRunner
  /** Every runner this fleet started, in start order. */
  readonly runners: readonly FleetRunner[]
  /** The live ones. */
  alive(): FleetRunner[]
  /** Every runner's output, labelled, for failure messages. */
  outputs(): string
  /** Kills whatever is still running. */
  stopAll(): Promise<void>
  /** Lease disruptions over every runner of the fleet. */
  leaseDisruptions(): number
}

export const startFleet = (options: FleetOptions): Fleet => {
  const runners: FleetRunner[] = []
  const holdFolder = mkdtempSync(path.join(tmpdir(), "akter-hold-"))
  const spawn = (spawnOptions: SpawnOptions = {}): FleetRunner => {
    const name = `runner-${runners.length + 1}-${randomUUID().slice(0, 8)}`
    const holdFile = path.join(holdFolder, name)
    const child = startChildRunner({
      app: options.app,
      databaseUrl: options.databaseUrl,
      args: [...(options.args ?? []), ...(spawnOptions.args ?? [])],
      env: {
        ...options.env,
        ...spawnOptions.env,
        PGAPPNAME: name,
        ...(spawnOptions.faults === undefined ? {} : { AKTER_FAULTS: spawnOptions.faults }),
        ...(spawnOptions.held === true ? { [HOLD_VARIABLE]: holdFile } : {}),
      },
    })
    let gone = false
    void child.exited.then(() => (gone = true))
    const runner: FleetRunner = {
      name,
      child,
      pid: child.process.pid!,
      // Generous: a niced lane of CI can starve a runner process of CPU for a minute or more
      // (the other lane compiles and installs); it bounds a broken start, not a slow one.
      runnerId: async (timeoutMs = 180_000) => {
        const started = await waitUntil(
          `${name} starts serving`,
          () => {
            if (gone) throw new Error(`${name} exited before it started:\n${child.output()}`)
            return logLines(child.output()).find((line) => line.message === "runner started")
          },
          { timeoutMs },
        )
        return String(started["runner"])
      },
      release: () => writeFileSync(holdFile, ""),
      logLines: () => logLines(child.output()),
      count: (message) =>
        logLines(child.output()).filter((line) => line.message === message).length,
      leaseDisruptions: () =>
        logLines(child.output()).filter(
          (line) =>
            line.message === "leases changed" &&
            (Number(line["lost"]) > 0 || Number(line["released"]) > 0),
        ).length,
      get gone() {
        return gone
      },
    }
    runners.push(runner)
    return runner
  }
  return {
    spawn,
    runners,
    alive: () => runners.filter((runner) => !runner.gone),
    outputs: () =>
      runners
        .map((runner) => `--- ${runner.name} (pid ${runner.pid})\n${runner.child.output()}`)
        .join("\n"),
    stopAll: async () => {
      await Promise.all(runners.map((runner) => runner.child.kill("SIGKILL")))
    },
    leaseDisruptions: () => runners.reduce((sum, runner) => sum + runner.leaseDisruptions(), 0),
  }
}
