/**
 * `akter schedule list|pause|resume [NAME]`: shows the schedules the runners of a database tick
 * (their next tick, a queued tick, the execution each started last, paused or not), or pauses or
 * resumes one. A paused schedule starts nothing; resuming it starts from the next tick, without
 * catching up the ticks that passed while it was paused. NAME is the schedule's name, or
 * `Owner.name` where two owner types declare the same one. Exit 0 done, 1 no such schedule, 2 bad
 * input or no database.
 */
import { didYouMean } from "../codegen/manifest/didYouMean.js"
import {
  listSchedules,
  setSchedulePaused,
  type ScheduleRow,
} from "../runtime/schedules/scheduleStore.js"
import { makeClock } from "../runtime/storage/clock.js"
import { outputFormatOf, runReporting } from "./commandOutput.js"
import {
  DEFAULT_PGLITE_DIR,
  databaseUrlProblem,
  withDatabase,
  type DatabaseTarget,
} from "./databaseSession.js"
import { slowProgress } from "./slowProgress.js"
import {
  EXIT_NO,
  EXIT_OK,
  FORMAT_OPTION,
  HELP_LINE,
  UsageError,
  parseCommandLine,
  type CommandSpec,
} from "./commandLine.js"

const ACTIONS = ["list", "pause", "resume"] as const
type Action = (typeof ACTIONS)[number]

const spec = {
  name: "schedule list|pause|resume [NAME]",
  summary:
    "Lists the schedules runners tick in a database (next tick, queued tick, last execution, paused), or pauses or resumes one. A paused schedule starts nothing; a resumed one starts from its next tick, without catching up the ticks it missed while paused.",
  options: {
    "database-url": { type: "string" },
    "data-dir": { type: "string" },
    ...FORMAT_OPTION.spec,
  },
  optionHelp: [
    ["NAME", "the schedule (nightly), or Owner.nightly where two owner types declare one"],
    ["--database-url URL", "Postgres (default: $DATABASE_URL, else embedded PGlite)"],
    [
      "--data-dir DIR",
      `PGlite data directory when no database URL is given (default ${DEFAULT_PGLITE_DIR})`,
    ],
    FORMAT_OPTION.help("json prints { schedules: [...] }, or the changed schedule"),
    HELP_LINE,
  ],
} as const satisfies CommandSpec<Record<string, { type: "string" | "boolean" }>>

/** A schedule as the command prints it. */
export interface ScheduleView {
  readonly owner: string
  readonly schedule: string
  readonly paused: boolean
  readonly nextTick: string | null
  readonly queuedTick: string | null
  readonly lastTick: string | null
  readonly lastExecutionId: string | null
}

const instant = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

const viewOf = (row: ScheduleRow): ScheduleView => ({
  owner: row.owner_type,
  schedule: row.schedule,
  paused: row.paused,
  nextTick: instant(row.next_tick_ms),
  queuedTick: instant(row.queued_tick_ms),
  lastTick: instant(row.last_tick_ms),
  lastExecutionId: row.last_execution_id,
})

/** The one row `name` (`nightly` or `Report.nightly`) names, or why there is none. */
const findSchedule = (
  rows: readonly ScheduleRow[],
  name: string,
): ScheduleRow | { readonly missing: string } => {
  const dot = name.indexOf(".")
  const [owner, schedule] = dot < 0 ? [undefined, name] : [name.slice(0, dot), name.slice(dot + 1)]
  const found = rows.filter(
    (row) => row.schedule === schedule && (owner === undefined || row.owner_type === owner),
  )
  if (found.length > 1) {
    throw new UsageError(
      `${found.length} owner types declare a schedule "${schedule}": name one, e.g. ${found[0]!.owner_type}.${schedule}`,
    )
  }
  if (found.length === 1) return found[0]!
  const known = rows.map((row) => row.schedule)
  const hint = didYouMean(schedule, known)
  return {
    missing: `no schedule "${name}" in this database${
      hint !== undefined
        ? ` (${hint})`
        : known.length === 0
          ? " (a runner declares its workflows' schedules when it starts)"
          : ""
    }`,
  }
}

const line = (view: ScheduleView) =>
  `${view.owner}.${view.schedule}  ${view.paused ? "paused" : "active"}  next ${view.nextTick ?? "-"}` +
  `${view.queuedTick === null ? "" : `  queued ${view.queuedTick}`}` +
  `  last ${view.lastTick ?? "-"}${view.lastExecutionId === null ? "" : ` (${view.lastExecutionId})`}`

export const run = (args: readonly string[]): Promise<number> =>
  runReporting(spec, args, async () => {
    const positionals: string[] = []
    let rest = [...args]
    while (rest[0] !== undefined && !rest[0].startsWith("-") && positionals.length < 2) {
      positionals.push(rest[0])
      rest = rest.slice(1)
    }
    const options = parseCommandLine(spec, rest)
    if (options === undefined) return EXIT_OK
    const format = outputFormatOf(options.format, ["text", "json"] as const)
    const [actionText, name] = positionals
    if (actionText === undefined || !(ACTIONS as readonly string[]).includes(actionText)) {
      throw new UsageError(
        actionText === undefined
          ? "say what to do: list, pause NAME or resume NAME"
          : `unknown action ${JSON.stringify(actionText)}: list, pause or resume`,
      )
    }
    const action = actionText as Action
    if (action !== "list" && name === undefined) {
      throw new UsageError(`${action} needs the schedule's name`)
    }
    const databaseUrl = options["database-url"] ?? (process.env["DATABASE_URL"] || undefined)
    if (databaseUrl !== undefined && options["data-dir"] !== undefined) {
      throw new UsageError("--data-dir is for PGlite; it cannot be combined with a database URL")
    }
    if (databaseUrl !== undefined) {
      const problem = databaseUrlProblem(databaseUrl)
      if (problem !== undefined) throw new UsageError(problem)
    }
    const target: DatabaseTarget =
      databaseUrl !== undefined
        ? { databaseUrl }
        : { dataDir: options["data-dir"] ?? DEFAULT_PGLITE_DIR }
    const outcome = await withDatabase(target, slowProgress("schedule"), async (storage) => {
      const rows = await listSchedules(storage.db)
      if (action === "list" || name === undefined) {
        const shown =
          name === undefined
            ? rows
            : rows.filter((row) => !("missing" in findSchedule([row], name)))
        return { schedules: shown.map(viewOf) }
      }
      const found = findSchedule(rows, name)
      if ("missing" in found) return found
      const changed = await setSchedulePaused(
        storage.db,
        makeClock(),
        found.owner_type,
        found.schedule,
        action === "pause",
      )
      return changed === undefined ? { missing: `schedule "${name}" is gone` } : viewOf(changed)
    })
    if ("missing" in outcome) {
      if (format === "json") console.log(JSON.stringify({ found: false, schedule: name }))
      else console.error(`akter schedule: ${outcome.missing}`)
      return EXIT_NO
    }
    if (format === "json") {
      console.log(JSON.stringify(outcome, null, 2))
      return EXIT_OK
    }
    if ("schedules" in outcome) {
      if (outcome.schedules.length === 0) console.log("akter schedule: no schedules")
      for (const view of outcome.schedules) console.log(line(view))
      return EXIT_OK
    }
    console.log(`akter schedule: ${action === "pause" ? "paused" : "resumed"} ${line(outcome)}`)
    return EXIT_OK
  })
