/**
 * Restate's side of one trial: shapes a–e (`../shapeTrials.ts`) written the way Restate's
 * documentation writes them — one `restate.workflow` per shape, keyed by the owner id (run once
 * per key, as a DBOS workflow id or an akter execution is), `ctx.run` per activity, `ctx.sleep`,
 * an awakeable for the event — served by the SDK's HTTP/2 endpoint in this process, against
 * restate-server 1.7.12 (its own log, default durability) started for this trial alone, and
 * driven through its ingress.
 *
 * The server checks for updates on the internet when it starts and has no switch for it, so it
 * never runs outside a private network namespace: this file, started by `run.ts`, re-executes
 * itself under `unshare --net --pid --fork --mount-proc --kill-child` with only loopback up, and
 * only the inner process (which refuses to start unless loopback is its only interface) starts the
 * server, the endpoint and the driver. The server dies on every exit path: the inner process kills
 * it when it ends (and when the outer one goes, through its standard input); the inner process is
 * the namespace's init, so the kernel kills whatever is left when it ends; and the outer process
 * checks afterwards that no restate-server of this trial remains.
 */
// Before the SDK loads: its runtime calls `Promise.withResolvers`, which Node 20 lacks.
import "core-js/actual/promise/with-resolvers.js"
import * as restate from "@restatedev/restate-sdk"
import { spawn, type ChildProcess } from "node:child_process"
import { openSync, readdirSync, readFileSync } from "node:fs"
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { createServer } from "node:http2"
import { createRequire } from "node:module"
import { networkInterfaces, tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { SEQUENTIAL_LENGTHS } from "../benchManifest.js"
import { SHAPES, stepName, type TrialRequest, type TrialResult } from "../shapes.js"
import { markOnce, marks, runShape, type BenchSystem, type Started } from "../shapeTrials.js"
import { serveTrial, until, type TrialMessage } from "../trialChild.js"

/** Set for the re-executed process: the trial's own directory (server base dir, log, result). */
const INSIDE_DIR_ENV = "AKTER_RESTATE_TRIAL_DIR"
const INGRESS = "http://127.0.0.1:8080"
const ADMIN = "http://127.0.0.1:9070"
const SERVER_START_TIMEOUT_MS = 60_000
const SERVER_STOP_TIMEOUT_MS = 10_000

const serverBinary = () =>
  join(
    dirname(
      createRequire(import.meta.url).resolve("@restatedev/restate-server-linux-x64/package.json"),
    ),
    "bin",
    "restate-server",
  )

// ---------------------------------------------------------------------------------------------
// The workflows, one per shape; bodies mark their progress by key, as the other sides' do.

const sequential = SEQUENTIAL_LENGTHS.map((steps) =>
  restate.workflow({
    name: `seq${steps}`,
    handlers: {
      run: async (ctx: restate.WorkflowContext, input: { n: number }) => {
        let value = input
        for (let index = 0; index < steps; index++) {
          const current = value
          value = await ctx.run(stepName(index), async () => ({ n: current.n + 1 }))
        }
        return value
      },
    },
  }),
)

/** Awakeable ids by workflow key, set by the body once it has created its awakeable. */
const awakeables = new Map<string, string>()

const wake = restate.workflow({
  name: "wake",
  handlers: {
    run: async (ctx: restate.WorkflowContext) => {
      const { id, promise } = ctx.awakeable<{ n: number }>()
      awakeables.set(ctx.key, id)
      await promise
      markOnce(marks.wokeAt, ctx.key)
    },
  },
})

const nap = restate.workflow({
  name: "nap",
  handlers: {
    run: async (ctx: restate.WorkflowContext) => {
      markOnce(marks.sleptAt, ctx.key)
      await ctx.sleep(SHAPES.e.sleepMs)
      markOnce(marks.wokeAt, ctx.key)
    },
  },
})

// ---------------------------------------------------------------------------------------------
// The driver: the ingress and the admin API, over loopback inside the namespace.

const post = async (url: string, body: unknown): Promise<Response> => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  })
  if (!response.ok) {
    throw new Error(`POST ${url}: ${response.status} ${await response.text()}`)
  }
  return response
}

const workflowUrl = (workflow: string, key: string) =>
  `${INGRESS}/${workflow}/${encodeURIComponent(key)}/run`

/** Starts the workflow without waiting for it; `result()` attaches to the invocation. */
const send = async (workflow: string, key: string, input: unknown): Promise<Started> => {
  const { invocationId } = (await (
    await post(`${workflowUrl(workflow, key)}/send`, input)
  ).json()) as { invocationId: string }
  return {
    id: key,
    result: async () => {
      const response = await fetch(`${INGRESS}/restate/invocation/${invocationId}/attach`)
      if (!response.ok) throw new Error(`${workflow} ${key}: ${await response.text()}`)
      await response.arrayBuffer()
    },
  }
}

const notOnRestate = (shape: string) => async (): Promise<never> => {
  throw new Error(`shape ${shape} is not measured on Restate (shapes.ts: RESTATE_SHAPES)`)
}

const restateBench = (serverPid: number): BenchSystem => ({
  system: "restate",
  store: { kind: "server", pid: serverPid },
  runSequential: async (steps, ownerId) => {
    const response = await post(workflowUrl(`seq${steps}`, ownerId), { n: 0 })
    const result = (await response.json()) as { n: number }
    if (result.n !== steps) throw new Error(`seq${steps} returned ${JSON.stringify(result)}`)
  },
  startWake: (ownerId) => send("wake", ownerId, {}),
  // The body created its awakeable and awaits it (the SDK holds the invocation open meanwhile).
  isParked: async (started) => awakeables.has(started.id),
  emit: async (_ownerId, started) => {
    await post(`${INGRESS}/restate/awakeables/${awakeables.get(started.id)!}/resolve`, { n: 1 })
  },
  startNap: (ownerId) => send("nap", ownerId, {}),
  startParked: notOnRestate("f"),
  parkedCount: notOnRestate("f"),
  runFanOut: notOnRestate("i"),
})

// ---------------------------------------------------------------------------------------------
// Inside the namespace: the endpoint, the server, the registration, the shape.

const onlyLoopback = () => {
  const interfaces = Object.keys(networkInterfaces())
  return interfaces.length === 1 && interfaces[0] === "lo"
}

const stopServer = async (server: ChildProcess) => {
  if (server.exitCode !== null || server.signalCode !== null) return
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()))
  server.kill("SIGTERM")
  const timer = setTimeout(() => server.kill("SIGKILL"), SERVER_STOP_TIMEOUT_MS)
  await exited
  clearTimeout(timer)
}

const runInside = async (dir: string, request: TrialRequest): Promise<TrialResult> => {
  if (!onlyLoopback()) {
    throw new Error("refusing to start restate-server: loopback is not this process's only network")
  }
  const endpoint = createServer(
    restate.createEndpointHandler({ services: [...sequential, wake, nap] }),
  )
  const endpointPort = await new Promise<number>((resolve, reject) => {
    endpoint.once("error", reject)
    endpoint.listen(0, "127.0.0.1", () => {
      const address = endpoint.address()
      if (address === null || typeof address === "string") reject(new Error("no endpoint port"))
      else resolve(address.port)
    })
  })
  const logFile = join(dir, "server.log")
  const log = openSync(logFile, "a")
  const server = spawn(
    serverBinary(),
    [
      "--base-dir",
      join(dir, "server"),
      "--no-logo",
      "--listen-mode",
      "tcp",
      "--log-filter",
      "warn",
    ],
    { stdio: ["ignore", log, log] },
  )
  const killOnExit = () => server.kill("SIGKILL")
  process.on("exit", killOnExit)
  // The outer process holds our standard input: when it ends, so do we (and the server).
  process.stdin.on("end", () => process.exit(1))
  process.stdin.resume()
  try {
    const serverExited = new Promise<never>((_, reject) =>
      server.once("exit", (code, signal) =>
        reject(
          new Error(
            `restate-server exited (${code ?? signal}): ${readFileSync(logFile, "utf8").slice(-2000)}`,
          ),
        ),
      ),
    )
    serverExited.catch(() => undefined)
    const ready = async () => {
      await until(
        "restate-server's admin API",
        async () => (await fetch(`${ADMIN}/health`).catch(() => undefined))?.ok === true,
        SERVER_START_TIMEOUT_MS,
        50,
      )
      await post(`${ADMIN}/deployments`, { uri: `http://127.0.0.1:${endpointPort}` })
      // The ingress learns the registered workflows shortly after the admin API does.
      await until(
        "the ingress to know the workflows",
        async () => {
          const response = await fetch(workflowUrl("seq3", "ready"), {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ n: 0 }),
          }).catch(() => undefined)
          await response?.arrayBuffer()
          return response?.ok === true
        },
        SERVER_START_TIMEOUT_MS,
        50,
      )
    }
    await Promise.race([ready(), serverExited])
    return await Promise.race([runShape(request, restateBench(server.pid!)), serverExited])
  } finally {
    await stopServer(server)
    process.off("exit", killOnExit)
    endpoint.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Outside: re-execute under a private network namespace, relay the result, check the server died.

/** Processes whose command line names `dir`: a restate-server of this trial, if any is left. */
const serversUsing = (dir: string): number[] =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8")
        return cmdline.includes("restate-server") && cmdline.includes(dir)
      } catch {
        return false
      }
    })
    .map(Number)

const runOutside = async (request: TrialRequest): Promise<TrialResult> => {
  const dir = await mkdtemp(join(tmpdir(), "akter-restate-"))
  try {
    const child = spawn(
      "unshare",
      [
        "--net",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
        "sh",
        "-c",
        'ip link set lo up && exec "$@"',
        "sh",
        process.execPath,
        ...process.execArgv,
        fileURLToPath(import.meta.url),
        JSON.stringify(request),
      ],
      {
        env: { ...process.env, [INSIDE_DIR_ENV]: dir, RESTATE_LOGGING: "ERROR" },
        stdio: ["pipe", "inherit", "inherit"],
      },
    )
    const exit = await new Promise<string>((resolve) =>
      child.on("exit", (code, signal) => resolve(String(code ?? signal))),
    )
    const leftover = serversUsing(dir)
    for (const pid of leftover) process.kill(pid, "SIGKILL")
    if (leftover.length > 0) {
      throw new Error(`restate-server outlived its trial (pids ${leftover.join(", ")}; killed)`)
    }
    const message = JSON.parse(
      await readFile(join(dir, "result.json"), "utf8").catch(() => "null"),
    ) as TrialMessage | null
    if (message?.kind === "result") return message.result
    throw new Error(
      message?.kind === "error"
        ? message.error
        : `the namespaced trial ended (${exit}) without a result`,
    )
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const insideDir = process.env[INSIDE_DIR_ENV]
if (insideDir === undefined) {
  serveTrial(runOutside)
} else {
  const request = JSON.parse(process.argv[2] ?? "{}") as TrialRequest
  const finish = async (message: TrialMessage, code: number) => {
    await writeFile(join(insideDir, "result.json"), JSON.stringify(message))
    process.exit(code)
  }
  runInside(insideDir, request).then(
    (result) => finish({ kind: "result", result }, 0),
    (error: unknown) =>
      finish(
        {
          kind: "error",
          error: error instanceof Error ? (error.stack ?? String(error)) : String(error),
        },
        1,
      ),
  )
}
