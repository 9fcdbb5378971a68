/**
 * `npm run faults -- --rounds N [--executions M] [--faults restart,stop,pause] [--pgbouncer]`:
 * the database fault suite's rounds, more of them than CI runs, printing one Markdown table row per
 * round (see faultRound.ts for what each measures). Starts its own private Postgres 15 cluster
 * (and PgBouncer with --pgbouncer); never touches the shared server.
 */
import { parseArgs } from "node:util"
import { reportHeader, reportRow, runFaultRound, type Fault } from "./faultRound.js"
import { startPgbouncer } from "./pgbouncer.js"
import { clusterMissing, pgbouncerMissing, startPrivateCluster } from "./privateCluster.js"

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "1" },
    executions: { type: "string", default: "150" },
    faults: { type: "string", default: "restart,stop,pause" },
    pgbouncer: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
})
if (values.help) {
  console.log(
    "usage: npm run faults -- [--rounds N] [--executions M] [--faults restart,stop,pause] [--pgbouncer]",
  )
  process.exit(0)
}
const missing = clusterMissing() ?? (values.pgbouncer ? pgbouncerMissing() : undefined)
if (missing !== undefined) {
  console.error(`faults: ${missing}`)
  process.exit(1)
}
const cluster = await startPrivateCluster()
const progress = (line: string) => console.error(`[${new Date().toISOString()}] ${line}`)
try {
  console.log(reportHeader)
  console.log(`|${"---|".repeat(12)}`)
  for (let round = 1; round <= Number(values.rounds); round++) {
    if (values.pgbouncer) {
      for (const mode of ["transaction", "session"] as const) {
        for (const listen of mode === "transaction" ? [false, true] : [false]) {
          const bouncer = await startPgbouncer(cluster.port, mode)
          try {
            const report = await runFaultRound({
              cluster,
              fault: "none",
              executions: Number(values.executions),
              connectUrl: (database) => bouncer.url.replace(/\/postgres$/, `/${database}`),
              ...(listen
                ? {
                    runnerEnv: (database) => ({
                      AKTER_LISTEN_URL: cluster.url.replace(/\/postgres$/, `/${database}`),
                    }),
                  }
                : {}),
              listenSessions: mode === "transaction" && !listen ? 0 : 3,
              progress,
            })
            console.log(
              reportRow({
                ...report,
                fault: `pgbouncer ${mode}${listen ? " + listenUrl" : ""}` as Fault,
              }),
            )
            const warned =
              report.runnerLog.split("notifications do not reach this runner").length - 1
            console.log(`|  | runner warnings about notifications: ${warned} |`)
          } finally {
            await bouncer.stop()
          }
        }
      }
      continue
    }
    for (const fault of values.faults.split(",") as Fault[]) {
      const report = await runFaultRound({
        cluster,
        fault,
        executions: Number(values.executions),
        progress,
      })
      console.log(reportRow(report))
    }
  }
} finally {
  cluster.destroy()
}
