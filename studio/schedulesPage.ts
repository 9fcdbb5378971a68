/**
 * The Schedules page: every schedule the runners of this database tick (their rows in
 * `akter.schedules`, read by the schedule store's `listSchedules`) beside its declaration — the
 * workflow it starts, its cron expression and time zone or interval, its overlap and catch-up
 * policies — with its next and last tick and whether it is paused, and a pause or resume button
 * where the studio may act. The database keeps a schedule's state, not its declaration: that comes
 * from the manifests the studio is given (`StudioOptions.schedules`; `akter studio` reads the
 * project's), and a schedule declared there that no runner has declared yet shows as such.
 */
import type { CanonicalOwner } from "../runtime/model/canonicalManifest.js"
import { nextTickAfter, timingOf, type CanonicalSchedule } from "../runtime/model/schedule.js"
import type { ScheduleRow } from "../runtime/schedules/scheduleStore.js"
import { html, queryString, type Html } from "./html.js"
import { executionHref } from "./jsonView.js"
import { formatTime, layout, relative, type PageContext } from "./studioPages.js"

/** The schedules of one owner's manifest, as its canonical form holds them. */
export type ScheduleDeclarations = Pick<CanonicalOwner, "owner" | "schedules">

export interface SchedulesView {
  /** Every schedule's row, by owner type and name. */
  readonly rows: readonly ScheduleRow[]
  /** The declarations the studio was given; undefined when it was given none. */
  readonly declared: readonly ScheduleDeclarations[] | undefined
  /** Why the declarations could not be read, when they could not. */
  readonly declarationProblem: string | undefined
  readonly nowMs: number
}

/** One schedule: its row, its declaration, or both. */
interface ScheduleEntry {
  readonly ownerType: string
  readonly schedule: string
  readonly row: ScheduleRow | undefined
  readonly declaration: CanonicalSchedule | undefined
}

const entriesOf = (view: SchedulesView): ScheduleEntry[] => {
  const entries = new Map<string, ScheduleEntry>()
  const id = (ownerType: string, schedule: string) => JSON.stringify([ownerType, schedule])
  for (const row of view.rows) {
    entries.set(id(row.owner_type, row.schedule), {
      ownerType: row.owner_type,
      schedule: row.schedule,
      row,
      declaration: undefined,
    })
  }
  for (const owner of view.declared ?? []) {
    for (const [schedule, declaration] of Object.entries(owner.schedules ?? {})) {
      const known = entries.get(id(owner.owner, schedule))
      entries.set(id(owner.owner, schedule), {
        ownerType: owner.owner,
        schedule,
        row: known?.row,
        declaration,
      })
    }
  }
  return [...entries.values()].sort(
    (a, b) => a.ownerType.localeCompare(b.ownerType) || a.schedule.localeCompare(b.schedule),
  )
}

/** `90_000` → `1m30s`. */
export const intervalText = (ms: number): string => {
  const parts: string[] = []
  let rest = ms
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1_000],
    ["ms", 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`)
      rest %= size
    }
  }
  return parts.join("") || "0ms"
}

const instant = (ms: number | null | undefined, nowMs: number): Html =>
  ms === null || ms === undefined
    ? html`<span class="muted">none</span>`
    : html`<time datetime="${new Date(ms).toISOString()}">${formatTime(ms)}</time>
        <span class="muted">(${relative(ms, nowMs)})</span>`

const unknown = html`<span class="muted">not declared in the manifests given</span>`

/**
 * When the schedule ticks next, as far as the page can tell. The row's cursor is the oldest tick
 * not yet decided — or, for a new or resumed schedule, the time from which ticks count — so with
 * the declaration the next tick is the first at or after it (an overdue one shows as such); a
 * declaration whose timing the runners do not tick yet restarts from now.
 */
const nextTick = (entry: ScheduleEntry, restarted: boolean, nowMs: number): Html => {
  const { row, declaration } = entry
  if (row === undefined) return html`<span class="muted">when a runner declares it</span>`
  if (row.paused) return html`<span class="muted">none while paused</span>`
  if (declaration === undefined) {
    return row.next_tick_ms === null
      ? html`<span class="muted">the first after now</span>`
      : html`${instant(row.next_tick_ms, nowMs)}
          <div class="muted">or the first tick after it</div>`
  }
  const from = restarted || row.next_tick_ms === null ? nowMs : row.next_tick_ms - 1
  const next = nextTickAfter(declaration, from)
  return next === null ? html`<span class="muted">never again</span>` : instant(next, nowMs)
}

const stateOf = (entry: ScheduleEntry, nowMs: number): Html => {
  const { row } = entry
  if (row === undefined) {
    return html`<span class="status" data-state="undeclared"
      >not ticked: no runner has declared it yet</span
    >`
  }
  return html`${
    row.paused
      ? html`<span class="status interrupted" data-state="paused">paused</span>`
      : html`<span class="status running" data-state="active">active</span>`
  }${
    row.queued_tick_ms === null
      ? ""
      : html` <span class="muted"
          >tick ${formatTime(row.queued_tick_ms)} queued behind the last execution</span
        >`
  }${
    row.claimed_by !== null && row.claimed_until_ms > nowMs
      ? html` <span class="muted">being decided by ${row.claimed_by}</span>`
      : ""
  }`
}

const actionOf = (context: PageContext, entry: ScheduleEntry): Html => {
  if (context.readOnly || entry.row === undefined) return html``
  const pause = !entry.row.paused
  return html`<form
    class="inline"
    method="post"
    action="${context.base}/actions/${pause ? "schedule-pause" : "schedule-resume"}"
    ${pause ? html`data-confirm="Pause ${entry.ownerType}.${entry.schedule}? It starts nothing until resumed, and a resume does not catch up the ticks it missed."` : ""}
  >
    <input type="hidden" name="csrf" value="${context.csrf ?? ""}" /><input
      type="hidden"
      name="ownerType"
      value="${entry.ownerType}"
    /><input type="hidden" name="schedule" value="${entry.schedule}" /><button
      type="submit"
      ${pause ? html`class="danger"` : ""}
      data-action="${pause ? "schedule-pause" : "schedule-resume"}"
    >
      ${pause ? "Pause" : "Resume"}
    </button>
  </form>`
}

export const schedulesPage = (
  context: PageContext,
  view: SchedulesView,
  options: { readonly notice?: string | undefined; readonly error?: string | undefined } = {},
): string => {
  const now = view.nowMs
  const entries = entriesOf(view)
  const source =
    view.declarationProblem !== undefined
      ? html`<p class="notice error" role="alert">
          The manifests could not be read, so workflows, timings and policies are not shown:
          ${view.declarationProblem}
        </p>`
      : view.declared === undefined
        ? html`<p class="muted">
            This studio was not given the manifests: the database keeps each schedule's state, not
            its declaration. <code>akter studio</code> reads the project's manifests; a mounted
            handler passes <code>schedules</code>.
          </p>`
        : ""
  const rows = entries.map((entry) => {
    const { declaration, row } = entry
    const restarted =
      declaration !== undefined && row !== undefined && timingOf(declaration) !== row.definition
    return html`<tr data-schedule="${entry.ownerType}.${entry.schedule}">
      <td>
        <span class="mono">${entry.ownerType}.${entry.schedule}</span>
      </td>
      <td data-cell="workflow">
        ${
          declaration === undefined
            ? unknown
            : html`<a
                  href="${context.base}/executions${queryString({
                    ownerType: entry.ownerType,
                    workflow: declaration.workflow,
                  })}"
                  >${declaration.workflow}</a
                >
                <div class="muted">owner id ${declaration.ownerId}</div>`
        }
      </td>
      <td data-cell="timing">
        ${
          declaration === undefined
            ? unknown
            : declaration.cron !== null
              ? html`<code>${declaration.cron}</code>`
              : html`every <code>${intervalText(declaration.everyMs ?? 0)}</code>`
        }${
          restarted
            ? html`<div class="muted">
                the runners tick another timing; a runner with this declaration restarts it from now
              </div>`
            : ""
        }
      </td>
      <td data-cell="time-zone">
        ${
          declaration === undefined
            ? unknown
            : declaration.cron === null
              ? html`<span class="muted">(interval)</span>`
              : declaration.timeZone
        }
      </td>
      <td data-cell="next">${nextTick(entry, restarted, now)}</td>
      <td data-cell="last">
        ${
          row?.last_tick_ms == null
            ? html`<span class="muted">none</span>`
            : html`${instant(row.last_tick_ms, now)}${
                row.last_execution_id === null
                  ? ""
                  : html`<div>
                      <a href="${executionHref(context.base, row.last_execution_id)}"
                        >its execution</a
                      >
                    </div>`
              }`
        }
      </td>
      <td data-cell="state">${stateOf(entry, now)}</td>
      <td data-cell="overlap">${declaration?.overlap ?? unknown}</td>
      <td data-cell="catch-up">${declaration?.catchUp ?? unknown}</td>
      ${context.readOnly ? "" : html`<td>${actionOf(context, entry)}</td>`}
    </tr>`
  })
  return layout(
    context,
    "Schedules",
    html`<h1>Schedules</h1>
      ${source}
      ${
        entries.length === 0
          ? html`<p class="muted">
              No schedules: a runner declares its workflows' schedules when it starts.
            </p>`
          : html`<table class="schedules">
              <thead>
                <tr>
                  <th>schedule</th>
                  <th>workflow</th>
                  <th>cron / interval</th>
                  <th>time zone</th>
                  <th>next tick</th>
                  <th>last tick</th>
                  <th>state</th>
                  <th>overlap</th>
                  <th>catch-up</th>
                  ${context.readOnly ? "" : html`<th></th>`}
                </tr>
              </thead>
              <tbody>
                ${rows}
              </tbody>
            </table>`
      }
      <p class="muted">
        Times are UTC. Pausing drops a queued tick; resuming starts from the next tick, without
        catching up the ticks missed while paused (as <code>akter schedule pause|resume</code>).
      </p>`,
    options,
  )
}
