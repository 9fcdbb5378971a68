/**
 * `akter demo` (`npm start`): the whole idea in under a minute, with no server to install. It
 * regenerates the SDK if the manifests changed, opens embedded PGlite (or `DATABASE_URL`), serves it
 * to a runner process (`akter run examples/app.ts`), starts a few hundred executions of the example
 * workflows, sends their events over time, kills the runner with SIGKILL halfway and starts another,
 * and then proves from the database and the activities' witness log that every execution finished
 * as its input says it must, that no settled step ran again, and that only attempts pending at the
 * kill reran — under their idempotency key. Exit 0 when all of that holds, 1 with the reasons when
 * anything did not, 2 on bad input.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { formatDiagnostic } from "../../codegen/manifest/diagnostics.js"
import {
  EXIT_INVALID,
  EXIT_NO,
  EXIT_OK,
  HELP_LINE,
  parseCommandLine,
  runCommand,
  UsageError,
  type CommandSpec,
} from "../../cli/commandLine.js"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

const DEFAULT_EXECUTIONS = 300
/** The runner is killed once this share of the expected executions finished... */
const KILL_AT_FINISHED_SHARE = 0.4
/** ...or this long after the first start, whichever comes first. */
const KILL_AT_LATEST_MS = 12_000
/** Every execution must have finished this long after the first start (default of --finish-within). */
const FINISH_WITHIN_S = 90
const TICK_MS = 50
const TTY_FRAME_MS = 200
const LOG_LINE_MS = 2000
/** Starts and actions in flight at once. */
const CLIENT_CONCURRENCY = 8
/**
 * Runner options that make recovery after the kill quick: the replacement takes the dead runner's
 * buckets once their 4 s lease lapses (shorter leases lapse on a busy machine, whose heartbeats
 * then queue behind the passes for PGlite's one session), and resumes work claimed by the dead
 * runner 1.5 s after its last claim.
 */
const RUNNER_ARGS = [
  "--poll-ms",
  "50",
  "--recovery-ms",
  "1500",
  "--lease-ms",
  "4000",
  "--concurrency",
  "16",
]
/** Through the PGlite server every connection queues for one session: a small pool is enough. */
const PGLITE_RUNNER_POOL = "3"
/** How often the live view reads the counts. */
const COUNT_EVERY_MS = 250

const spec = {
  name: "demo",
  summary:
    "Runs hundreds of executions of the example workflows (examples/app.ts) on embedded PGlite through a runner process that is killed with SIGKILL halfway and replaced, then proves every execution finished with its recorded steps intact.",
  options: {
    executions: { type: "string" },
    "finish-within": { type: "string" },
    "database-url": { type: "string" },
  },
  optionHelp: [
    ["--executions N", `executions to start (default ${DEFAULT_EXECUTIONS}; start steps add more)`],
    [
      "--finish-within S",
      `fail unless every execution finished S seconds after the first start (default ${FINISH_WITHIN_S})`,
    ],
    [
      "--database-url URL",
      "run on this Postgres instead (default: $DATABASE_URL, else a fresh in-memory PGlite)",
    ],
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Runs `work` on every item, at most `limit` at a time. */
const inParallel = async <T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
) => {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!)
    }),
  )
}

export const run = (args: readonly string[]): Promise<number> =>
  runCommand(spec, async () => {
    const options = parseCommandLine(spec, args)
    if (options === undefined) return EXIT_OK
    const executions =
      options.executions === undefined ? DEFAULT_EXECUTIONS : Number(options.executions)
    if (!Number.isInteger(executions) || executions < 10 || executions > 5000) {
      throw new UsageError(
        `--executions must be an integer from 10 to 5000, not ${JSON.stringify(options.executions)}`,
      )
    }
    const finishWithinS =
      options["finish-within"] === undefined ? FINISH_WITHIN_S : Number(options["finish-within"])
    if (!Number.isInteger(finishWithinS) || finishWithinS < 1) {
      throw new UsageError(
        `--finish-within must be a positive number of seconds, not ${JSON.stringify(options["finish-within"])}`,
      )
    }
    const finishWithinMs = finishWithinS * 1000
    const say = (line: string) => console.log(line)

    say("akter demo: preparing the SDK, the database and a runner process…")

    // 1. The SDK the example app imports must match the manifests.
    const { generate } = await import("../../codegen/emit/generate.js")
    const generated = await generate({
      root: ROOT,
      manifestsDir: path.join(ROOT, "manifests"),
      outDir: path.join(ROOT, "generated"),
    })
    if (generated.kind === "invalid") {
      for (const diagnostic of generated.diagnostics) console.error(formatDiagnostic(diagnostic))
      console.error("akter demo: the manifests have errors; fix them first")
      return EXIT_INVALID
    }
    if (generated.kind === "generated") {
      const { missing, stale, orphans } = generated.differences
      const changed = missing.length + stale.length + orphans.length
      if (changed > 0) say(`akter demo: regenerated generated/ (${changed} files changed)`)
    }

    // 2. The database, and a way into it for the runner processes.
    const [
      { createAkter, internalsOf },
      { makeLogger },
      inspect,
      plans,
      drive,
      view,
      witness,
      crash,
      runners,
    ] = await Promise.all([
      import("../../runtime/akter.js"),
      import("../../runtime/log.js"),
      import("../../runtime/inspect/executionQueries.js"),
      import("./plan.js"),
      import("./drive.js"),
      import("./liveView.js"),
      import("../activityLog.js"),
      import("./crashCheck.js"),
      import("./runnerProcess.js"),
    ])
    const givenUrl = options["database-url"] ?? process.env["DATABASE_URL"]
    let backend: string
    let databaseUrl: string
    let closeDatabase = async () => {}
    if (givenUrl === undefined) {
      const [{ PGlite }, { servePglite }] = await Promise.all([
        import("@electric-sql/pglite"),
        import("../../runtime/storage/pgliteServer.js"),
      ])
      const pglite = await PGlite.create()
      const server = await servePglite(pglite)
      databaseUrl = server.url
      backend = "embedded PGlite"
      closeDatabase = async () => {
        await server.close()
        await pglite.close()
      }
    } else {
      databaseUrl = givenUrl
      backend = `Postgres ${new URL(givenUrl).host}`
    }
    const akter = await createAkter({
      databaseUrl,
      poolSize: 4,
      logger: makeLogger({ level: "warn" }),
    }).catch(async (error: unknown) => {
      await closeDatabase()
      throw new Error(`cannot open ${backend}: ${errorText(error)}`)
    })
    const db = internalsOf(akter).storage.db
    const runId = `demo-${randomBytes(3).toString("hex")}`
    const scope = { ownerIdPrefix: `${runId}-` }
    const plan = plans.planDemo(runId, executions)
    const expected = plans.expectedOutcomes(plan)
    const expectedTotal = [...expected.values()].reduce((total, count) => total + count, 0)
    const actionsTotal = plans.plannedActionCount(plan)
    const workDir = mkdtempSync(path.join(tmpdir(), "akter-demo-"))
    const activityLog = path.join(workDir, "activities.log")
    const runnerArgs = [
      ...RUNNER_ARGS,
      ...(givenUrl === undefined ? ["--pool-size", PGLITE_RUNNER_POOL] : []),
    ]
    const startRunner = () =>
      runners.startRunnerProcess({ root: ROOT, databaseUrl, activityLog, args: runnerArgs })
    const live: { kill: (signal: NodeJS.Signals) => unknown }[] = []
    const killAll = () => {
      for (const runner of live) runner.kill("SIGKILL")
    }
    process.once("exit", killAll)

    const interactive = process.stdout.isTTY === true
    let phase = "starting runner 1"
    const problems: string[] = []
    let actionsDone = 0
    let eventsEmitted = 0
    let interrupts = 0
    try {
      say(
        `akter demo: ${plan.executions.length} executions of Order.fulfill, User.signUp and Subscription.billingCycle on ${backend} (run ${runId})`,
      )
      let runner = startRunner()
      live.push(runner)
      await runner.ready
      const killedPid = runner.pid
      phase = `runner 1 (pid ${runner.pid}) serving`
      if (!interactive) say(`akter demo: runner 1 started (pid ${runner.pid})`)

      // 3. Start everything, and send each execution's events on its schedule.
      const clients = drive.demoClients(akter)
      const startedAt = Date.now()
      const due: { at: number; run: () => Promise<void> }[] = []
      const inFlight = new Set<Promise<void>>()
      const startedIds = new Map<(typeof plan.executions)[number], string>()
      const starting = inParallel(plan.executions, CLIENT_CONCURRENCY, async (planned) => {
        try {
          const executionId = await drive.startPlanned(clients, planned)
          startedIds.set(planned, executionId)
          const at = Date.now()
          for (const action of planned.actions) {
            due.push({
              at: at + action.afterMs,
              run: async () => {
                await drive.performAction(clients, planned, executionId, action)
                if (action.kind === "cancel") interrupts += 1
                eventsEmitted += 1
              },
            })
          }
        } catch (error) {
          problems.push(
            `starting ${planned.start.workflow} for ${planned.start.ownerId} failed: ${errorText(error)}`,
          )
        }
      })
      let startsDone = false
      void starting.then(() => (startsDone = true))

      let killedAtMs: number | undefined
      let atKill: Awaited<ReturnType<typeof inspect.recordedSteps>> = []
      let openAtKill = new Set<string>()
      let replacementPid = -1
      let counts: Awaited<ReturnType<typeof inspect.tallyExecutions>> = []
      let lastFrame = 0
      let countedAt = 0
      let lastLine = 0
      let frameLines = 0
      const show = (final = false) => {
        const progress = {
          elapsedMs: Date.now() - startedAt,
          phase,
          counts,
          expectedTotal,
          actionsDone,
          actionsTotal,
        }
        if (interactive) {
          const frame = view.renderLiveFrame(progress)
          process.stdout.write(`${frameLines > 0 ? `\x1b[${frameLines}F\x1b[J` : ""}${frame}\n`)
          frameLines = frame.split("\n").length
        } else if (final || Date.now() - lastLine >= LOG_LINE_MS) {
          say(view.renderProgressLine(progress))
          lastLine = Date.now()
        }
      }
      const finishedCount = () =>
        counts.filter((count) => count.status === "finished").reduce((n, c) => n + c.count, 0)
      const openCount = () =>
        counts.filter((count) => count.status !== "finished").reduce((n, c) => n + c.count, 0)

      for (;;) {
        const now = Date.now()
        due.sort((a, b) => a.at - b.at)
        while (due.length > 0 && due[0]!.at <= now && inFlight.size < CLIENT_CONCURRENCY) {
          const action = due.shift()!
          const work = action
            .run()
            .catch((error: unknown) => {
              problems.push(`sending a planned event failed: ${errorText(error)}`)
            })
            .finally(() => {
              actionsDone += 1
              inFlight.delete(work)
            })
          inFlight.add(work)
        }
        if (now - countedAt >= COUNT_EVERY_MS) {
          counts = await inspect.tallyExecutions(db, scope, { outcomes: false })
          countedAt = now
        }
        if (
          killedAtMs === undefined &&
          startsDone &&
          (finishedCount() >= expectedTotal * KILL_AT_FINISHED_SHARE ||
            now - startedAt >= KILL_AT_LATEST_MS)
        ) {
          // 4. The crash: SIGKILL, no goodbye. What the database holds now is all that is left.
          await runner.kill("SIGKILL")
          killedAtMs = Date.now() - startedAt
          await sleep(100)
          atKill = await inspect.recordedSteps(db, scope)
          openAtKill = new Set(
            (
              await inspect.queryExecutions(db, { ...scope, status: "open" }, { limit: 1_000_000 })
            ).map((execution) => execution.executionId),
          )
          phase = `runner 1 killed with SIGKILL at ${(killedAtMs / 1000).toFixed(1)} s; starting runner 2`
          if (!interactive) {
            say(
              `akter demo: killed runner 1 with SIGKILL at ${(killedAtMs / 1000).toFixed(1)} s, ${openAtKill.size} executions in flight`,
            )
          }
          runner = startRunner()
          live.push(runner)
          await runner.ready
          replacementPid = runner.pid
          phase = `runner 2 (pid ${runner.pid}) resuming what runner 1 left`
          if (!interactive) say(`akter demo: runner 2 started (pid ${runner.pid})`)
        }
        if (interactive ? now - lastFrame >= TTY_FRAME_MS : true) {
          show()
          lastFrame = now
        }
        const quiet =
          killedAtMs !== undefined &&
          startsDone &&
          due.length === 0 &&
          inFlight.size === 0 &&
          openCount() === 0
        // Finished and no staged start of another workflow left to relay: nothing more can happen.
        if (quiet && (await inspect.stagedStarts(db, scope)).length === 0) break
        if (now - startedAt > finishWithinMs) {
          const staged = await inspect.stagedStarts(db, scope)
          problems.push(
            [
              `not finished after ${finishWithinS} s: ${openCount()} executions still open, ${staged.length} start steps staged and not relayed, ${due.length + inFlight.size} planned events unsent`,
              ...staged.map(
                (start) =>
                  `  staged start of ${start.executionId} by owner ${start.ownerType}/${start.ownerId}: due ${start.dueAtMs - Date.now()} ms from now, claimed ${start.attempts} times`,
              ),
              "the runner's last words:",
              runner.tail(),
            ].join("\n"),
          )
          break
        }
        await sleep(TICK_MS)
      }
      const elapsedMs = Date.now() - startedAt
      counts = await inspect.tallyExecutions(db, scope)
      phase = "done"
      show(true)
      await runner.kill("SIGTERM")

      // 5. The proof.
      const check = crash.checkActivityRuns(
        witness.readActivityRuns(activityLog),
        atKill,
        killedPid,
        replacementPid,
      )
      problems.push(...check.violations)
      const finishedIds = new Set(
        (
          await inspect.queryExecutions(db, { ...scope, status: "finished" }, { limit: 1_000_000 })
        ).map((execution) => execution.executionId),
      )
      const recovered = [...openAtKill].filter((id) => finishedIds.has(id)).length
      // A sign-up whose runner was down past both its verification email and its deadline replays
      // a race with both branches ready, which either may win: then it bills nothing. Not a fault,
      // so its executions are taken out of the plan, and the summary says so.
      const notes: string[] = []
      let lostRaces = 0
      for (const [planned, executionId] of startedIds) {
        if (!planned.actions.some((action) => action.kind === "emailVerified")) continue
        const detail = await inspect.showExecution(db, executionId)
        const value = detail?.result?._tag === "Success" ? detail.result.value : undefined
        if (value === null || typeof value !== "object" || "billing" in value) continue
        lostRaces += 1
        for (const caused of planned.caused) {
          const key = `${caused.workflow} ${caused.outcome}`
          expected.set(key, (expected.get(key) ?? 0) - 1)
        }
      }
      if (lostRaces > 0) {
        notes.push(
          `${lostRaces} sign-up${lostRaces === 1 ? "'s deadline" : "s' deadlines"} won the race against the verification email: the runner was down past both, and a race replayed with both branches ready may go either way`,
        )
      }
      for (const [key, count] of expected) {
        if (count === 0) continue
        const [workflow, outcome] = key.split(" ") as [string, string]
        const got = counts
          .filter((c) => `${c.ownerType}.${c.workflow}` === workflow && c.outcome === outcome)
          .reduce((n, c) => n + c.count, 0)
        if (got !== count) problems.push(`${workflow}: expected ${count} ${outcome}, found ${got}`)
      }
      for (const count of counts) {
        const key = `${count.ownerType}.${count.workflow} ${count.outcome ?? count.status}`
        if (!expected.has(key))
          problems.push(
            `${count.count} ${count.ownerType}.${count.workflow} executions are ${count.outcome ?? count.status}, which the plan never leads to`,
          )
      }
      say("")
      say(
        view.renderSummary({
          backend,
          counts,
          elapsedMs,
          killedAtMs: killedAtMs ?? 0,
          attempts: check.attempts,
          retries: check.retries,
          eventsEmitted,
          interrupts,
          executionsAtKill: openAtKill.size,
          stepsAtKill: check.stepsAtKill,
          settledAtKill: check.settledAtKill,
          recovered,
          pendingRerun: check.pendingRerun,
          abandonedRerun: check.abandonedRerun,
          notes,
          problems,
        }),
      )
      return problems.length === 0 ? EXIT_OK : EXIT_NO
    } finally {
      killAll()
      process.removeListener("exit", killAll)
      await Promise.allSettled(live.map((runner) => runner.kill("SIGKILL")))
      await akter.close()
      await closeDatabase()
      rmSync(workDir, { recursive: true, force: true })
    }
  })
