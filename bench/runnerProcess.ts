/**
 * One runner process of shape r (`runnersTrial.ts` forks 1, 2 or 4 of them on the trial's
 * database): a runner of the bench workflows and nothing else — no client — that answers the
 * trial over IPC with what it has done (`RunnerReport`: buckets held, workflows finished, its CPU
 * and statements), and closes when told.
 */
import pg from "pg"
import { createAkter, makeLogger, startRunner } from "../runtime/index.js"
import { benchImplementations } from "./akterWorkflows.js"
import { stepName } from "./shapes.js"
import { logStatements, summarize, type StatementSummary } from "./statementLog.js"

const statementLog = logStatements(pg.Client)

export interface RunnerProcessRequest {
  readonly databaseUrl: string
  readonly concurrency: number
  readonly leaseMs: number
  readonly heartbeatMs: number
}

/** What a runner process did since it started: the trial subtracts two reports. */
export interface RunnerReport {
  readonly buckets: number
  /** Workflows of 3 activities whose last activity ran here. */
  readonly finished: number
  readonly cpuMs: number
  readonly statements: StatementSummary
}

export type RunnerCommand = { readonly kind: "report" } | { readonly kind: "close" }

const main = async () => {
  const request = JSON.parse(process.argv[2] ?? "{}") as RunnerProcessRequest
  const akter = await createAkter({
    databaseUrl: request.databaseUrl,
    logger: makeLogger({ level: "warn" }),
  })
  let finished = 0
  const lastStep = stepName(2)
  const runner = await startRunner({
    akter,
    workflows: await benchImplementations((name) => {
      if (name === lastStep) finished += 1
    }),
    concurrency: request.concurrency,
    leaseMs: request.leaseMs,
    heartbeatMs: request.heartbeatMs,
  })
  const report = (): RunnerReport => {
    const cpu = process.cpuUsage()
    return {
      buckets: runner.buckets.length,
      finished,
      cpuMs: (cpu.user + cpu.system) / 1000,
      statements: summarize(statementLog.snapshot()),
    }
  }
  process.on("message", (command: RunnerCommand) => {
    if (command.kind === "report") process.send!({ kind: "report", report: report() })
    else {
      void runner
        .close()
        .then(() => akter.close())
        .then(() => process.send!({ kind: "closed" }, () => process.exit(0)))
    }
  })
  process.send!({ kind: "ready" })
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
