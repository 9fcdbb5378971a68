/**
 * The studio's pages, rendered on the server: every value from the database goes through `html`,
 * which escapes it. Each page takes what its queries read and returns markup; forms for actions
 * appear only when the studio may act, and carry the CSRF token.
 */
import type {
  ConcurrencyPlace,
  ExecutionDetail,
  ExecutionSummary,
  InspectedStep,
} from "../runtime/inspect/executionQueries.js"
import type { InspectedExit, InspectedValue } from "../runtime/inspect/storedValues.js"
import { html, queryString, type Html, type HtmlValue } from "./html.js"
import { executionHref, jsonView } from "./jsonView.js"
import { COUNT_CAP, OUTCOMES, type OverviewFigures, type OwnerEvent } from "./studioQueries.js"

/** What every page needs to know about the studio serving it. */
export interface PageContext {
  /** Mount path, without a trailing slash (`""` at the root). */
  readonly base: string
  readonly readOnly: boolean
  /** The CSRF token forms carry (undefined when read-only). */
  readonly csrf: string | undefined
  readonly tenant: string | undefined
  readonly backend: string
}

export const STATUS_CHOICES = [
  "open",
  "queued",
  "running",
  "suspended",
  "finished",
  ...OUTCOMES,
] as const

export const formatTime = (ms: number | null | undefined): string =>
  ms === null || ms === undefined
    ? ""
    : new Date(ms)
        .toISOString()
        .replace("T", " ")
        .replace(/\.\d+Z$/, "Z")

export const formatDuration = (ms: number): string => {
  const abs = Math.abs(ms)
  if (abs < 1000) return `${Math.round(abs)} ms`
  if (abs < 60_000) return `${(abs / 1000).toFixed(1)} s`
  if (abs < 3_600_000) return `${Math.round(abs / 60_000)} min`
  if (abs < 86_400_000) return `${(abs / 3_600_000).toFixed(1)} h`
  return `${(abs / 86_400_000).toFixed(1)} d`
}

export const relative = (ms: number | null | undefined, nowMs: number): string => {
  if (ms === null || ms === undefined) return ""
  const text = formatDuration(ms - nowMs)
  return ms <= nowMs ? `${text} ago` : `in ${text}`
}

const timeCell = (ms: number | null | undefined, nowMs: number): Html =>
  ms === null || ms === undefined
    ? html``
    : html`<time datetime="${new Date(ms).toISOString()}" title="${formatTime(ms)}"
        >${relative(ms, nowMs)}</time
      >`

export const statusBadge = (
  execution: Pick<ExecutionSummary, "status" | "outcome" | "interrupting">,
): Html => {
  if (execution.status === "finished") {
    const outcome = execution.outcome ?? "unknown"
    return html`<span class="status ${outcome}" data-status="${outcome}">${outcome}</span>`
  }
  return execution.interrupting
    ? html`<span class="status interrupting" data-status="${execution.status}"
        >${execution.status} · interrupting</span
      >`
    : html`<span class="status ${execution.status}" data-status="${execution.status}"
        >${execution.status}</span
      >`
}

export const ownerHref = (
  base: string,
  owner: { tenant: string; ownerType: string; ownerId: string },
) =>
  `${base}/owners/${encodeURIComponent(owner.ownerType)}/${encodeURIComponent(owner.ownerId)}${queryString({ tenant: owner.tenant })}`

/** The page around a `<main>`; `watch` makes it live (`list`, or an execution id). */
export const layout = (
  context: PageContext,
  title: string,
  content: Html,
  options: {
    readonly watch?: string
    readonly notice?: string | undefined
    readonly error?: string | undefined
  } = {},
): string =>
  `<!doctype html>\n${
    html`<html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · akter studio</title>
        <link rel="stylesheet" href="${context.base}/assets/studio.css" />
      </head>
      <body
        data-base="${context.base}"
        ${options.watch === undefined ? "" : html`data-watch="${options.watch}"`}
      >
        <header>
          <span class="brand">akter studio</span>
          <nav>
            <a href="${context.base}/">Overview</a
            ><a href="${context.base}/executions">Executions</a
            ><a href="${context.base}/compatibility">Compatibility</a
            ><a href="${context.base}/schedules">Schedules</a>
          </nav>
          <span class="badge"
            >${context.backend}${context.tenant === undefined ? "" : ` · tenant ${context.tenant}`}${context.readOnly ? " · read-only" : ""}</span
          >${options.watch === undefined ? "" : html`<span id="live" class="live">connecting</span>`}
        </header>
        <main>
          ${options.notice === undefined ? "" : html`<p class="notice" role="status">${options.notice}</p>`}${options.error === undefined ? "" : html`<p class="notice error" role="alert">${options.error}</p>`}${content}
        </main>
        <script src="${context.base}/assets/studio.js"></script>
      </body>
    </html>`.text
  }`

const csrfField = (context: PageContext): Html =>
  html`<input type="hidden" name="csrf" value="${context.csrf ?? ""}" />`

// ---------------------------------------------------------------------------------------------
// Overview

export const overviewPage = (context: PageContext, figures: OverviewFigures): string => {
  const now = figures.nowMs
  const openTotal = figures.open.reduce((sum, row) => sum + row.count, 0)
  const finishedHour = figures.finishesPerMinute.reduce((sum, count) => sum + count, 0)
  const peak = Math.max(1, ...figures.finishesPerMinute)
  const workflows = new Map<string, Map<string, number>>()
  const add = (ownerType: string, workflow: string, column: string, count: number) => {
    const name = `${ownerType}.${workflow}`
    const row = workflows.get(name) ?? new Map<string, number>()
    row.set(column, (row.get(column) ?? 0) + count)
    workflows.set(name, row)
  }
  for (const row of figures.open) add(row.ownerType, row.workflow, row.status, row.count)
  for (const row of figures.finishedToday) add(row.ownerType, row.workflow, row.outcome, row.count)
  // Queued (concurrency keys) and unknown outcomes show only when there are some.
  const columns = ["queued", "running", "suspended", ...OUTCOMES, "unknown"].filter((column) =>
    column === "unknown"
      ? figures.finishedToday.some((row) => row.outcome === "unknown")
      : column !== "queued" || figures.open.some((row) => row.status === "queued"),
  )
  const listHref = (workflow: string, status: string) => {
    const dot = workflow.indexOf(".")
    return `${context.base}/executions${queryString({ ownerType: workflow.slice(0, dot), workflow: workflow.slice(dot + 1), status: status === "unknown" ? "finished" : status })}`
  }
  const content = html`<h1>Overview</h1>
    <div class="cards">
      <div class="card">
        <div class="muted">open executions</div>
        <div class="figure" data-figure="open">${openTotal}</div>
      </div>
      <div class="card">
        <div class="muted">finished, last hour</div>
        <div class="figure" data-figure="finished-hour">${finishedHour}</div>
      </div>
      <div class="card">
        <div class="muted">failed or defect, last hour</div>
        <div class="figure" data-figure="failures-hour">
          <a href="${context.base}/executions?status=failed"
            >${figures.failuresLastHour > 20 ? "20+" : figures.failuresLastHour}</a
          >
        </div>
      </div>
      <div class="card">
        <div class="muted">oldest open execution</div>
        <div class="figure">
          ${figures.oldestOpen === undefined ? "none" : html`<a href="${executionHref(context.base, figures.oldestOpen.executionId)}">${relative(figures.oldestOpen.startedAtMs, now)}</a>`}
        </div>
        ${figures.oldestOpen === undefined ? "" : html`<div class="muted">${figures.oldestOpen.ownerType}.${figures.oldestOpen.workflow}</div>`}
      </div>
      <div class="card">
        <div class="muted">due timers waiting</div>
        <div class="figure" data-figure="due-timers">${figures.dueTimers.count}</div>
        <div class="muted">
          ${figures.dueTimers.oldestDueAtMs === null ? "no lag" : `lag ${formatDuration(now - figures.dueTimers.oldestDueAtMs)}`}
        </div>
      </div>
    </div>
    <h2>
      Executions by workflow <span class="muted">(open now; finished in the last 24 hours)</span>
    </h2>
    ${
      workflows.size === 0
        ? html`<p class="muted">No executions yet.</p>`
        : html`<table class="by-workflow">
            <thead>
              <tr>
                <th>workflow</th>
                ${columns.map((column) => html`<th class="num">${column}</th>`)}
              </tr>
            </thead>
            <tbody>
              ${[...workflows.entries()]
                .sort(([a], [b]) => (a < b ? -1 : 1))
                .map(
                  ([workflow, counts]) =>
                    html`<tr>
                      <td>${workflow}</td>
                      ${columns.map((column) => {
                        const count = counts.get(column) ?? 0
                        return html`<td class="num">
                          ${count === 0 ? html`<span class="muted">0</span>` : html`<a href="${listHref(workflow, column)}">${count}</a>`}
                        </td>`
                      })}
                    </tr>`,
                )}
            </tbody>
          </table>`
    }
    <h2>Finishes per minute <span class="muted">(last hour, ${finishedHour} in all)</span></h2>
    <svg
      class="bars"
      viewBox="0 0 600 60"
      preserveAspectRatio="none"
      role="img"
      aria-label="finishes per minute, oldest on the left"
    >
      ${figures.finishesPerMinute.map((count, minute) => {
        // Attributes, not inline styles: the Content-Security-Policy allows no inline style.
        const height = count === 0 ? 0.5 : Math.max(1, Math.round((count / peak) * 58))
        return html`<rect x="${minute * 10 + 1}" y="${60 - height}" width="8" height="${height}"
          ><title>${count}</title></rect
        >`
      })}
    </svg>
    <h2>Runners</h2>
    ${
      figures.runners.length === 0
        ? html`<p class="muted">No runner is registered.</p>`
        : html`<table>
            <thead>
              <tr>
                <th>runner</th>
                <th>started</th>
                <th>heartbeat</th>
                <th class="num">buckets</th>
                <th>lease expiry</th>
              </tr>
            </thead>
            <tbody>
              ${figures.runners.map(
                (runner) =>
                  html`<tr>
                    <td class="mono">${runner.runnerId}</td>
                    <td>${timeCell(runner.startedAtMs, now)}</td>
                    <td>${timeCell(runner.heartbeatAtMs, now)}</td>
                    <td class="num">${runner.buckets}</td>
                    <td>${timeCell(runner.leaseExpiresAtMs, now)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <h2>Failures in the last hour</h2>
    ${figures.recentFailures.length === 0 ? html`<p class="muted">None.</p>` : executionTable(context, figures.recentFailures, now)}`
  return layout(context, "Overview", content, { watch: "list" })
}

// ---------------------------------------------------------------------------------------------
// Executions

export const executionTable = (
  context: PageContext,
  executions: readonly ExecutionSummary[],
  now: number,
): Html =>
  html`<table class="executions">
    <thead>
      <tr>
        <th>owner</th>
        <th>workflow</th>
        <th>key</th>
        <th>status</th>
        <th>started</th>
        <th>finished</th>
        <th>execution</th>
      </tr>
    </thead>
    <tbody>
      ${executions.map(
        (execution) =>
          html`<tr data-execution="${execution.executionId}">
            <td>
              <a href="${ownerHref(context.base, execution)}"
                >${execution.ownerType}/${execution.ownerId}</a
              >${context.tenant === undefined && execution.tenant !== "default" ? html` <span class="muted">(${execution.tenant})</span>` : ""}
            </td>
            <td>${execution.workflow}</td>
            <td>${execution.key}</td>
            <td>${statusBadge(execution)}</td>
            <td>${timeCell(execution.startedAtMs, now)}</td>
            <td>${timeCell(execution.finishedAtMs, now)}</td>
            <td class="mono">
              <a class="execution-link" href="${executionHref(context.base, execution.executionId)}"
                >${shortId(execution.executionId)}</a
              >
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`

const shortId = (id: string) => (id.length > 28 ? `${id.slice(0, 14)}…${id.slice(-10)}` : id)

/** The executions page's filter as the form holds it (strings, as typed). */
export interface FilterForm {
  readonly tenant?: string | undefined
  readonly ownerType?: string | undefined
  readonly workflow?: string | undefined
  readonly status?: string | undefined
  readonly ownerId?: string | undefined
  readonly key?: string | undefined
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly input?: string | undefined
}

export const FILTER_FIELDS = [
  "tenant",
  "ownerType",
  "workflow",
  "status",
  "ownerId",
  "key",
  "from",
  "to",
  "input",
] as const

const filterParams = (form: FilterForm): Record<string, string | undefined> =>
  Object.fromEntries(FILTER_FIELDS.map((name) => [name, form[name]]))

const hiddenFilter = (form: FilterForm): Html =>
  html`${FILTER_FIELDS.map((name) =>
    form[name] === undefined || form[name] === ""
      ? ""
      : html`<input type="hidden" name="${name}" value="${form[name]}" />`,
  )}`

export interface ExecutionsView {
  readonly form: FilterForm
  readonly executions: readonly ExecutionSummary[]
  readonly nextCursor: string | undefined
  /** Matching executions, up to COUNT_CAP + 1 (undefined with an input filter: not counted). */
  readonly count: number | undefined
  readonly scanned: number
  readonly budgetSpent: boolean
  readonly nowMs: number
  readonly workflows: readonly { ownerType: string; workflow: string }[]
  readonly openMatching: boolean
  readonly firstPage: boolean
  /** The page size asked for, kept in the next page's link. */
  readonly limit: number | undefined
}

export const executionsPage = (
  context: PageContext,
  view: ExecutionsView,
  options: { readonly notice?: string | undefined; readonly error?: string | undefined } = {},
): string => {
  const { form } = view
  const option = (value: string, current: string | undefined, label = value) =>
    html`<option value="${value}" ${value === (current ?? "") ? html`selected` : ""}>
      ${label}
    </option>`
  const ownerTypes = [...new Set(view.workflows.map((workflow) => workflow.ownerType))]
  const countText =
    view.count === undefined
      ? `scanned ${view.scanned} executions${view.budgetSpent ? " (scan budget reached: next page continues)" : ""}`
      : view.count > COUNT_CAP
        ? `more than ${COUNT_CAP.toLocaleString("en-US")} match`
        : `${view.count} match`
  const content = html`<h1>Executions</h1>
    <form class="filters" method="get" action="${context.base}/executions">
      ${context.tenant === undefined ? html`<label>tenant<input name="tenant" value="${form.tenant ?? ""}" placeholder="any" /></label>` : ""}
      <label
        >owner type<select name="ownerType">
          ${option("", form.ownerType, "any")}${ownerTypes.map((type) => option(type, form.ownerType))}
        </select></label
      >
      <label
        >workflow<select name="workflow">
          ${option("", form.workflow, "any")}${[...new Set(view.workflows.map((w) => w.workflow))].sort().map((name) => option(name, form.workflow))}
        </select></label
      >
      <label
        >status<select name="status">
          ${option("", form.status, "any")}${STATUS_CHOICES.map((status) => option(status, form.status))}
        </select></label
      >
      <label>owner id<input name="ownerId" value="${form.ownerId ?? ""}" /></label>
      <label>key<input name="key" value="${form.key ?? ""}" /></label>
      <label
        >started from (UTC)<input
          name="from"
          value="${form.from ?? ""}"
          placeholder="2026-05-04T10:00"
      /></label>
      <label>started before (UTC)<input name="to" value="${form.to ?? ""}" /></label>
      <label
        >input field<input name="input" value="${form.input ?? ""}" placeholder="customerId = c-42"
      /></label>
      <button type="submit">Filter</button> <a href="${context.base}/executions">clear</a>
    </form>
    <p class="muted" data-count="${view.count === undefined ? "" : String(view.count)}">
      ${countText}
    </p>
    ${
      !context.readOnly && view.openMatching
        ? html`<form class="inline" method="post" action="${context.base}/actions/bulk-interrupt">
            ${csrfField(context)}${hiddenFilter(form)}<button
              type="submit"
              class="danger"
              data-action="bulk-interrupt"
            >
              Interrupt every open execution matching…
            </button>
          </form>`
        : ""
    }
    ${view.executions.length === 0 ? html`<p class="muted">No executions match.</p>` : executionTable(context, view.executions, view.nowMs)}
    <p>
      ${view.firstPage ? "" : html`<a href="${context.base}/executions${queryString(filterParams(form))}">first page</a> · `}${
        view.nextCursor === undefined
          ? html`<span class="muted">last page</span>`
          : html`<a
              rel="next"
              href="${context.base}/executions${queryString({ ...filterParams(form), limit: view.limit === undefined ? undefined : String(view.limit), cursor: view.nextCursor })}"
              >next page</a
            >`
      }
    </p>`
  return layout(context, "Executions", content, { watch: "list", ...options })
}

export const bulkConfirmPage = (context: PageContext, form: FilterForm, count: number): string => {
  const content = html`<h1>
      Interrupt ${count > COUNT_CAP ? `more than ${COUNT_CAP}` : count} open executions?
    </h1>
    <p>
      Every open execution matching this filter will be asked to stop: its next pass runs the
      compensations of its completed steps and records <code>Interrupt</code>. Executions that
      finish meanwhile keep their result.
    </p>
    <p class="mono">
      ${FILTER_FIELDS.filter((name) => form[name] !== undefined && form[name] !== "").map((name) => html`${name}=${form[name]} `)}
    </p>
    <form method="post" action="${context.base}/actions/bulk-interrupt">
      ${csrfField(context)}${hiddenFilter(form)}<input
        type="hidden"
        name="confirm"
        value="${String(count)}"
      />
      <div class="actions">
        <button type="submit" class="danger" data-action="confirm-bulk-interrupt">
          Interrupt ${count} executions</button
        ><a href="${context.base}/executions${queryString(filterParams(form))}">cancel</a>
      </div>
    </form>`
  return layout(context, "Confirm interrupt", content)
}

// ---------------------------------------------------------------------------------------------
// Execution

const exitView = (base: string, exit: InspectedExit | undefined): Html => {
  if (exit === undefined) return html`<span class="muted">pending</span>`
  switch (exit._tag) {
    case "Success":
      return html`<span class="status succeeded">Success</span> ${jsonView(base, exit.value)}`
    case "Failure":
      return html`<span class="status failed">Failure ${exit.error._tag}</span>
        ${jsonView(base, exit.error)}`
    case "Die":
      return html`<span class="status defect">Defect</span>
        <pre class="mono">${exit.message}</pre>`
    case "Interrupt":
      return html`<span class="status interrupted">Interrupted</span>`
    case "Unreadable":
      return html`<span class="status defect">Unreadable</span> ${exit.defect}`
  }
}

const valueView = (base: string, value: InspectedValue): Html =>
  value.readable
    ? jsonView(base, value.value)
    : html`<span class="status defect">unreadable</span> ${value.defect}`

const stepDue = (step: InspectedStep, now: number): HtmlValue => {
  if (step.dueAtMs === null) return ""
  const what =
    step.kind === "sleep"
      ? "due"
      : step.kind === "wait"
        ? "times out"
        : step.kind === "activity"
          ? "next attempt"
          : "due"
  return html`${what} ${timeCell(step.dueAtMs, now)}`
}

export interface ExecutionView {
  readonly detail: ExecutionDetail
  readonly nowMs: number
  readonly matchedEvents: readonly OwnerEvent[]
}

/** An execution's concurrency group and its place there (as `akter inspect` says it). */
const concurrencyField = (place: ConcurrencyPlace): Html =>
  html`<dt>concurrency</dt>
    <dd data-field="concurrency">
      <code>${place.key}=${place.value}</code>, limit
      ${place.limit ?? "? (start manifest not stored)"}:
      ${place.queuedAhead === undefined ? "" : `queued, ${place.queuedAhead} ahead of it; `}
      ${place.admitted} running or suspended, ${place.queued} queued
    </dd>`

export const executionPage = (
  context: PageContext,
  view: ExecutionView,
  options: { readonly notice?: string | undefined; readonly error?: string | undefined } = {},
): string => {
  const { detail, nowMs: now } = view
  const base = context.base
  const events = new Map(view.matchedEvents.map((event) => [event.sequence, event]))
  const open = detail.status !== "finished"
  const actions =
    context.readOnly || !open
      ? ""
      : html`<div class="actions">
          ${
            detail.interrupting
              ? ""
              : html`<form
                  class="inline"
                  method="post"
                  action="${base}/actions/interrupt"
                  data-confirm="Interrupt this execution? Its compensations run and it records Interrupt."
                >
                  ${csrfField(context)}<input
                    type="hidden"
                    name="executionId"
                    value="${detail.executionId}"
                  /><button class="danger" type="submit" data-action="interrupt">Interrupt</button>
                </form>`
          }${
            detail.timer === undefined || detail.timer.dueAtMs <= now
              ? ""
              : html`<form class="inline" method="post" action="${base}/actions/timer-due-now">
                  ${csrfField(context)}<input
                    type="hidden"
                    name="executionId"
                    value="${detail.executionId}"
                  /><button type="submit" data-action="timer-due-now">
                    Make its timer due now
                  </button>
                </form>`
          }
        </div>`
  const caller = detail.caller as { traceparent?: unknown } | null
  const content = html`<h1>
      ${detail.ownerType}.${detail.workflow}
      <span class="muted">${detail.key}</span> ${statusBadge(detail)}
    </h1>
    ${actions}
    <dl class="header">
      <dt>execution</dt>
      <dd class="mono" data-field="executionId">${detail.executionId}</dd>
      <dt>owner</dt>
      <dd><a href="${ownerHref(base, detail)}">${detail.ownerType}/${detail.ownerId}</a></dd>
      <dt>tenant</dt>
      <dd>${detail.tenant}</dd>
      <dt>key</dt>
      <dd>${detail.key}</dd>
      <dt>caller</dt>
      <dd>${jsonView(base, caller)}</dd>
      <dt>start manifest</dt>
      <dd class="mono">${detail.manifestHash}</dd>
      <dt>markers</dt>
      <dd>
        ${detail.markers.length === 0 ? html`<span class="muted">none recorded</span>` : detail.markers.map((marker) => html`<code>${marker.name}=${marker.value}</code> `)}
      </dd>
      <dt>status</dt>
      <dd data-field="status">${statusBadge(detail)}</dd>
      ${detail.concurrency === undefined ? "" : concurrencyField(detail.concurrency)}
      <dt>started</dt>
      <dd>
        ${formatTime(detail.startedAtMs)}
        <span class="muted">(${relative(detail.startedAtMs, now)})</span>
      </dd>
      ${
        detail.finishedAtMs === null
          ? ""
          : html`<dt>finished</dt>
              <dd>
                ${formatTime(detail.finishedAtMs)}
                <span class="muted"
                  >(after ${formatDuration(detail.finishedAtMs - detail.startedAtMs)})</span
                >
              </dd>`
      }
      <dt>timer</dt>
      <dd>
        ${detail.timer === undefined ? html`<span class="muted">none</span>` : html`due ${timeCell(detail.timer.dueAtMs, now)} <span class="muted">(${formatTime(detail.timer.dueAtMs)}; claimed ${detail.timer.attempts} times)</span>`}
      </dd>
    </dl>
    ${detail.defects.length === 0 ? "" : html`<p class="notice error">${detail.defects.map((defect) => html`${defect}<br />`)}</p>`}
    ${
      detail.result === undefined
        ? ""
        : html`<h2>Result</h2>
            <div data-field="result">${exitView(base, detail.result)}</div>`
    }
    <h2>Input</h2>
    <div data-field="input">${valueView(base, detail.input)}</div>
    <h2>Steps</h2>
    ${
      detail.steps.length === 0
        ? html`<p class="muted">
            ${detail.status === "finished" ? "A finished execution keeps no steps: they are deleted with its result." : "No step recorded yet."}
          </p>`
        : html`<table class="steps">
            <thead>
              <tr>
                <th>step</th>
                <th>kind</th>
                <th class="num">attempt</th>
                <th>state</th>
                <th>started</th>
                <th>duration</th>
                <th>due</th>
                <th>exit</th>
              </tr>
            </thead>
            <tbody>
              ${detail.steps.map((step) => {
                const matched =
                  step.wait?.matched === null || step.wait === undefined
                    ? undefined
                    : events.get(step.wait.matched)
                return html`<tr data-step="${step.step}" data-attempt="${step.attempt}">
                  <td>${step.step}</td>
                  <td>${step.kind}</td>
                  <td class="num">${step.attempt}</td>
                  <td>
                    ${step.settled ? "settled" : html`<span class="status running">pending</span>`}
                  </td>
                  <td>${timeCell(step.startedAtMs, now)}</td>
                  <td>
                    ${step.settledAtMs === null ? "" : formatDuration(step.settledAtMs - step.startedAtMs)}
                  </td>
                  <td>${stepDue(step, now)}</td>
                  <td>
                    ${
                      step.wait === undefined
                        ? ""
                        : html`<div class="muted">
                              waits for ${step.wait.event} after
                              #${step.wait.after}${step.wait.matched === null ? "" : `, matched #${step.wait.matched}`}
                            </div>
                            ${matched === undefined ? "" : html`<div>event ${matched.name} #${matched.sequence}: ${valueView(base, matched.payload)}</div>`}`
                    }${step.settled ? exitView(base, step.exit) : ""}
                  </td>
                </tr>`
              })}
            </tbody>
          </table>`
    }`
  return layout(context, `${detail.ownerType}.${detail.workflow} ${detail.key}`, content, {
    watch: detail.executionId,
    ...options,
  })
}

// ---------------------------------------------------------------------------------------------
// Owner

export const ownerPage = (
  context: PageContext,
  owner: { tenant: string; ownerType: string; ownerId: string },
  events: readonly OwnerEvent[],
  executions: readonly ExecutionSummary[],
  nowMs: number,
): string => {
  const content = html`<h1>
      ${owner.ownerType}/${owner.ownerId} <span class="muted">tenant ${owner.tenant}</span>
    </h1>
    <h2>Executions <span class="muted">(newest ${executions.length})</span></h2>
    ${executions.length === 0 ? html`<p class="muted">None.</p>` : executionTable(context, executions, nowMs)}
    <p>
      <a
        href="${context.base}/executions${queryString({ tenant: context.tenant === undefined ? owner.tenant : undefined, ownerType: owner.ownerType, ownerId: owner.ownerId })}"
        >all of this owner's executions</a
      >
    </p>
    <h2>Event log <span class="muted">(newest ${events.length})</span></h2>
    ${
      events.length === 0
        ? html`<p class="muted">No events.</p>`
        : html`<table class="events">
            <thead>
              <tr>
                <th class="num">#</th>
                <th>event</th>
                <th>emitted</th>
                <th>payload</th>
              </tr>
            </thead>
            <tbody>
              ${events.map(
                (event) =>
                  html`<tr>
                    <td class="num">${event.sequence}</td>
                    <td>${event.name}</td>
                    <td>${timeCell(event.emittedAtMs, nowMs)}</td>
                    <td>${valueView(context.base, event.payload)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }`
  return layout(context, `${owner.ownerType}/${owner.ownerId}`, content, { watch: "list" })
}

export const messagePage = (context: PageContext, title: string, message: string): string =>
  layout(
    context,
    title,
    html`<h1>${title}</h1>
      <p>${message}</p>`,
  )
