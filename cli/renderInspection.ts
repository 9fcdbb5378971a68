/**
 * `akter inspect`'s text: a table of executions, or one execution with its markers, steps, timer,
 * and parent (a start step's row names its child). JSON output is the query results themselves (runtime/inspect/executionQueries.ts), so
 * scripts and this text never disagree.
 */
import type {
  ConcurrencyPlace,
  ExecutionDetail,
  ExecutionSummary,
} from "../runtime/inspect/executionQueries.js"
import { describeExit } from "../runtime/inspect/storedValues.js"
import { scheduledBy } from "../runtime/model/schedule.js"
import { textTable, timeWithRelative, relativeTime } from "../runtime/inspect/textTable.js"

/** `finished: interrupted by deadline`, `suspended (interrupting)`, … */
const statusText = (
  execution: Pick<ExecutionSummary, "status" | "outcome" | "interrupting" | "interruptedBy">,
): string =>
  execution.status === "finished"
    ? execution.outcome === "interrupted" && execution.interruptedBy === "deadline"
      ? "finished: interrupted by deadline"
      : `finished: ${execution.outcome ?? "?"}`
    : execution.interrupting
      ? `${execution.status} (interrupting${execution.interruptedBy === "deadline" ? " by deadline" : ""})`
      : execution.status

/**
 * @example
 * console.log(renderExecutionList(await listExecutions(db, { status: "open" }), Date.now()))
 */
export const renderExecutionList = (
  executions: readonly ExecutionSummary[],
  nowMs: number,
): string => {
  if (executions.length === 0) return "no executions match"
  return textTable(
    [
      { title: "OWNER" },
      { title: "WORKFLOW" },
      { title: "STATUS" },
      { title: "STARTED" },
      { title: "EXECUTION ID" },
    ],
    executions.map((execution) => [
      `${execution.ownerType}/${execution.ownerId}`,
      execution.workflow,
      statusText(execution),
      relativeTime(execution.startedAtMs, nowMs),
      execution.executionId,
    ]),
  )
}

/**
 * An execution's concurrency group and its place in it, on one line.
 *
 * @example
 * concurrencyText({ key: "customerId", value: "c3", limit: 1, admitted: 1, queued: 2, queuedAhead: 1 })
 * // "customerId=c3, limit 1: queued, 1 ahead of it; 1 running or suspended, 2 queued"
 */
export const concurrencyText = (place: ConcurrencyPlace): string => {
  const group = `${place.key}=${place.value}, limit ${place.limit ?? "? (start manifest not stored)"}`
  const counts = `${place.admitted} running or suspended, ${place.queued} queued`
  return place.queuedAhead === undefined
    ? `${group}: ${counts}`
    : `${group}: queued, ${place.queuedAhead} ahead of it; ${counts}`
}

const MAX_VALUE_TEXT = 160

const shortened = (text: string) =>
  text.length > MAX_VALUE_TEXT ? `${text.slice(0, MAX_VALUE_TEXT - 1)}…` : text

/**
 * @example
 * const detail = await showExecution(db, id)
 * if (detail !== undefined) console.log(renderExecutionDetail(detail, Date.now()))
 */
export const renderExecutionDetail = (detail: ExecutionDetail, nowMs: number): string => {
  const fields: [string, string][] = [
    ["execution", detail.executionId],
    ["owner", `${detail.ownerType}/${detail.ownerId} (tenant ${detail.tenant})`],
    ["workflow", `${detail.ownerType}.${detail.workflow}`],
    ["key", detail.key],
  ]
  const schedule = scheduledBy(detail.key)
  if (schedule !== undefined) {
    fields.push(["schedule", `started by schedule ${schedule.schedule}, tick ${schedule.tick}`])
  }
  fields.push(
    ["manifest", detail.manifestHash],
    ["status", statusText(detail)],
    ["started", timeWithRelative(detail.startedAtMs, nowMs)],
  )
  if (detail.concurrency !== undefined) {
    fields.push(["concurrency", concurrencyText(detail.concurrency)])
  }
  if (detail.finishedAtMs !== null) {
    fields.push(["finished", timeWithRelative(detail.finishedAtMs, nowMs)])
  }
  if (detail.deadlineAtMs !== null) {
    fields.push(["deadline", timeWithRelative(detail.deadlineAtMs, nowMs)])
  }
  if (detail.parent !== undefined) {
    const { parent } = detail
    fields.push([
      "parent",
      `${parent.executionId} (its step ${parent.step}, ${parent.awaits ? "awaiting this result" : "not awaiting"}; parentClose ${parent.parentClose})`,
    ])
  }
  fields.push(["caller", JSON.stringify(detail.caller)])
  fields.push([
    "input",
    detail.input.readable
      ? shortened(JSON.stringify(detail.input.value))
      : `DEFECT unreadable input: ${detail.input.defect}`,
  ])
  if (detail.result !== undefined) fields.push(["result", shortened(describeExit(detail.result))])
  fields.push([
    "markers",
    detail.markers.length === 0
      ? detail.status === "finished"
        ? "(deleted with the steps at finish)"
        : "none"
      : detail.markers.map((marker) => `${marker.name}=${marker.value}`).join(", "),
  ])
  fields.push([
    "timer",
    detail.timer === undefined
      ? "none"
      : `due ${timeWithRelative(detail.timer.dueAtMs, nowMs)}, claimed ${detail.timer.attempts} time${detail.timer.attempts === 1 ? "" : "s"}`,
  ])
  const width = Math.max(...fields.map(([name]) => name.length))
  const lines = fields.map(([name, value]) => `${name.padEnd(width)}  ${value}`)
  lines.push("")
  if (detail.steps.length === 0) {
    lines.push(
      detail.status === "finished"
        ? "steps: none (a finished execution keeps its result; its steps are deleted)"
        : "steps: none recorded yet",
    )
  } else {
    lines.push(
      textTable(
        [
          { title: "STEP" },
          { title: "KIND" },
          { title: "ATTEMPT", align: "right" },
          { title: "STATE" },
          { title: "DUE" },
          { title: "EXIT" },
        ],
        detail.steps.map((step) => [
          step.step,
          step.kind,
          String(step.attempt),
          step.settled ? "settled" : "pending",
          step.dueAtMs === null ? "" : relativeTime(step.dueAtMs, nowMs),
          step.exit === undefined
            ? step.wait !== undefined
              ? `waiting for ${step.wait.event} after #${step.wait.after}`
              : step.child !== undefined
                ? `awaiting child ${step.child}`
                : ""
            : shortened(describeExit(step.exit)),
        ]),
      ),
    )
  }
  if (detail.defects.length > 0) {
    lines.push("", `defects (${detail.defects.length}):`)
    for (const defect of detail.defects) lines.push(`  ${defect}`)
  }
  return lines.join("\n")
}
