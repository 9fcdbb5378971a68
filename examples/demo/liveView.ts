/**
 * What the demo prints: a live frame redrawn in place on a terminal (a progress bar and executions
 * by workflow and status), a plain line every few seconds elsewhere (CI logs), and the summary.
 */
import type { ExecutionCount } from "../../runtime/inspect/executionQueries.js"
import { textTable } from "../../runtime/inspect/textTable.js"

export interface DemoProgress {
  readonly elapsedMs: number
  /** What is happening: `runner 1 serving`, `runner 1 killed with SIGKILL; runner 2 resuming`. */
  readonly phase: string
  readonly counts: readonly ExecutionCount[]
  /** Executions the plan leads to, start steps' included. */
  readonly expectedTotal: number
  readonly actionsDone: number
  readonly actionsTotal: number
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

const sumOf = (counts: readonly ExecutionCount[], status?: string) =>
  counts
    .filter((count) => status === undefined || count.status === status)
    .reduce((total, count) => total + count.count, 0)

const bar = (done: number, total: number, width: number) => {
  const filled = total === 0 ? 0 : Math.min(width, Math.round((done / total) * width))
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`
}

const byWorkflow = (counts: readonly ExecutionCount[]) => {
  const workflows = [
    ...new Set(counts.map((count) => `${count.ownerType}.${count.workflow}`)),
  ].sort()
  return workflows.map((workflow) => {
    const of = (status: string) =>
      String(
        sumOf(
          counts.filter((count) => `${count.ownerType}.${count.workflow}` === workflow),
          status,
        ),
      )
    return [workflow, of("running"), of("suspended"), of("finished")]
  })
}

/** The frame a terminal shows, redrawn in place. */
export const renderLiveFrame = (progress: DemoProgress): string => {
  const finished = sumOf(progress.counts, "finished")
  const total = Math.max(progress.expectedTotal, sumOf(progress.counts))
  return [
    `akter demo  ${seconds(progress.elapsedMs)}  ${progress.phase}`,
    `${bar(finished, total, 40)} ${finished}/${total} finished, ${progress.actionsDone}/${progress.actionsTotal} events and interrupts sent`,
    "",
    textTable(
      [
        { title: "workflow" },
        { title: "running", align: "right" },
        { title: "suspended", align: "right" },
        { title: "finished", align: "right" },
      ],
      byWorkflow(progress.counts),
    ),
  ].join("\n")
}

/** One line for a log that is not a terminal. */
export const renderProgressLine = (progress: DemoProgress): string => {
  const total = Math.max(progress.expectedTotal, sumOf(progress.counts))
  return `akter demo: ${seconds(progress.elapsedMs)}  ${sumOf(progress.counts, "finished")}/${total} finished, ${sumOf(progress.counts, "running")} running, ${sumOf(progress.counts, "suspended")} suspended, ${progress.actionsDone}/${progress.actionsTotal} sent  (${progress.phase})`
}

export interface DemoSummary {
  readonly backend: string
  readonly counts: readonly ExecutionCount[]
  readonly elapsedMs: number
  readonly killedAtMs: number
  readonly attempts: number
  readonly retries: number
  readonly eventsEmitted: number
  readonly interrupts: number
  readonly executionsAtKill: number
  readonly stepsAtKill: number
  readonly settledAtKill: number
  readonly recovered: number
  readonly pendingRerun: number
  readonly abandonedRerun: number
  /** Things worth knowing that are not faults. */
  readonly notes: readonly string[]
  readonly problems: readonly string[]
}

/** The summary printed at the end; its first line says whether everything finished. */
export const renderSummary = (summary: DemoSummary): string => {
  const total = sumOf(summary.counts)
  const finished = sumOf(summary.counts, "finished")
  const outcomes = ["succeeded", "failed", "interrupted", "defect"] as const
  const workflows = [
    ...new Set(summary.counts.map((count) => `${count.ownerType}.${count.workflow}`)),
  ].sort()
  const rows = workflows.map((workflow) => {
    const of =
      workflow === ""
        ? []
        : summary.counts.filter((c) => `${c.ownerType}.${c.workflow}` === workflow)
    return [
      workflow,
      ...outcomes.map((outcome) =>
        String(of.filter((c) => c.outcome === outcome).reduce((n, c) => n + c.count, 0)),
      ),
      String(sumOf(of) - sumOf(of, "finished")),
    ]
  })
  const totals = [
    "total",
    ...outcomes.map((outcome) =>
      String(summary.counts.filter((c) => c.outcome === outcome).reduce((n, c) => n + c.count, 0)),
    ),
    String(total - finished),
  ]
  const throughput = summary.elapsedMs === 0 ? 0 : (finished / summary.elapsedMs) * 1000
  const verdict =
    summary.problems.length === 0
      ? `akter demo: all ${total} executions finished on ${summary.backend} in ${seconds(summary.elapsedMs)}, through a runner killed with SIGKILL at ${seconds(summary.killedAtMs)}`
      : `akter demo: FAILED — ${summary.problems.length} problem${summary.problems.length === 1 ? "" : "s"}`
  const lines = [
    verdict,
    "",
    textTable(
      [
        { title: "workflow" },
        ...outcomes.map((title) => ({ title, align: "right" as const })),
        { title: "unfinished", align: "right" },
      ],
      [...rows, totals],
    ),
    "",
    `activity attempts recorded  ${summary.attempts} (${summary.retries} of them retries of a failed attempt)`,
    `events emitted              ${summary.eventsEmitted}, and ${summary.interrupts} interrupts`,
    `at the kill                 ${summary.executionsAtKill} executions in flight with ${summary.stepsAtKill} steps on record (${summary.settledAtKill} settled)`,
    `after the kill              ${summary.recovered} executions recovered by the new runner; no settled step ran again; ${summary.pendingRerun} pending attempts reran under their idempotency key`,
    ...(summary.abandonedRerun === 0
      ? []
      : [
          `                            ${summary.abandonedRerun} more reruns of pending attempts after a runner lost its leases (CPU-starved for longer than the lease)`,
        ]),
    `elapsed                     ${seconds(summary.elapsedMs)}, ${throughput.toFixed(1)} executions finished per second`,
  ]
  for (const note of summary.notes) lines.push(`note                        ${note}`)
  if (summary.problems.length > 0) {
    lines.push("", "problems:", ...summary.problems.map((problem) => `  ${problem}`))
  }
  return lines.join("\n")
}
