/**
 * `npm run soak`: the long soak of issue 3 — three runner processes, 500 executions over 100
 * owners started over two minutes, one random runner SIGKILLed and replaced every 2–4 s once the
 * fleet is whole (at most 30 kills, for at most 3 minutes), every fourth disruption a pause past the
 * lease instead. Prints the report and exits
 * 1 if any invariant broke. Needs Postgres: `DATABASE_URL` (default the local test server).
 */
if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(
    "usage: npm run soak — takes no options; DATABASE_URL names the Postgres (default the local test server). Exits 1 if an invariant broke.",
  )
  process.exit(0)
}
process.env["DATABASE_URL"] ??= "postgres://postgres@127.0.0.1:5432/test"
const { runSoak } = await import("./soakRun.js")

const report = await runSoak({
  executions: 500,
  owners: 100,
  runners: 3,
  startOverMs: 120_000,
  disruptEveryMs: [2000, 4000],
  maxKills: 30,
  pauseEvery: 4,
  disruptForMs: 180_000,
  settleMs: 180_000,
  leaseMs: 2000,
  recoveryMs: 2000,
  progress: (line) => console.log(`${new Date().toISOString()} ${line}`),
})

const { resumeLatenciesMs, ...summary } = report
console.log(JSON.stringify({ ...summary, resumes: resumeLatenciesMs.length }, null, 2))
const broken = [
  report.finished !== report.executions && `${report.executions - report.finished} unfinished`,
  ...report.unexpectedExits,
  ...report.wrongResults,
  ...report.duplicateSettles,
  ...report.overwrites,
  ...report.fenceBreaches,
  ...report.duplicateFinishes,
  ...report.journalProblems,
  ...report.neverRan.map((attempt) => `${attempt} was recorded settled but never ran`),
  report.leftSteps > 0 && `${report.leftSteps} step rows left`,
  report.leftOutbox > 0 && `${report.leftOutbox} outbox rows left`,
].filter((problem): problem is string => typeof problem === "string")
console.log(
  `executions ${report.executions}, kills ${report.kills}, pauses ${report.pauses}, writes refused by the fence under a stale generation ${report.staleRefusals}, withheld by the runner on a lapsed lease ${report.leaseWithheld}, kill → resumed step p50 ${report.resumeP50Ms} ms, p99 ${report.resumeP99Ms} ms over ${resumeLatenciesMs.length} interrupted attempts`,
)
if (broken.length > 0) {
  console.error(`soak failed:\n${broken.join("\n")}`)
  process.exit(1)
}
console.log("soak passed")
