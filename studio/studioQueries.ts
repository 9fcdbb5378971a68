/**
 * The studio's own read-only queries, where the public listing API has no equivalent: pages with
 * the studio's extra filters (outcome, key, a field of the input), capped counts, the overview's
 * aggregates, an owner's event log, runners and their leases, an execution's live fingerprint.
 * Nothing here writes. Every query is bounded (a page, a time window, a cap), so a database of
 * millions of executions costs a page, not a table scan; bench/studio.ts measures it.
 */
import { sql } from "kysely"
import {
  executionListQuery,
  summaryColumns,
  summaryOf,
  type ExecutionFilter,
  type ExecutionSummary,
  type ListingPosition,
} from "../runtime/inspect/executionQueries.js"
import { inspectValue, type Outcome } from "../runtime/inspect/storedValues.js"
import { nowMs, type DatabaseClock } from "../runtime/storage/clock.js"
import type { Db } from "../runtime/storage/database.js"

export const OUTCOMES: readonly Outcome[] = ["succeeded", "failed", "interrupted", "defect"]

/** What the executions page filters by: the public filter, plus outcome, key and an input field. */
export interface StudioFilter extends ExecutionFilter {
  readonly outcome?: Outcome | undefined
  readonly key?: string | undefined
  /** `input.customerId = c-42`: the input's field at this dotted path, compared as text. */
  readonly inputField?: { readonly path: readonly string[]; readonly value: string } | undefined
}

export interface StudioPage {
  readonly executions: readonly ExecutionSummary[]
  /** The position after which the next page starts; undefined on the last page. */
  readonly next: ListingPosition | undefined
  /** Rows read to find this page (an input-field filter reads rows it then drops). */
  readonly scanned: number
  /** The input-field filter stopped at its scan budget before the page was full. */
  readonly budgetSpent: boolean
}

/** How many candidates an input-field filter reads for one page before it returns what it found. */
export const INPUT_SCAN_BUDGET = 5000
/** At most this many candidates come back from one statement of an input-field page. */
const SCAN_BATCH = 250

const withStudioFilters = <Q extends ReturnType<typeof executionListQuery>>(
  query: Q,
  filter: StudioFilter,
): Q => {
  let next = query
  if (filter.key !== undefined) next = next.where("execution_key", "=", filter.key) as Q
  if (filter.outcome !== undefined) {
    next = next.where("status", "=", "finished").where("outcome", "=", filter.outcome) as Q
  }
  return next
}

const fieldAt = (value: unknown, path: readonly string[]): unknown => {
  let current = value
  for (const name of path) {
    if (current === null || typeof current !== "object") return undefined
    current = (current as Record<string, unknown>)[name]
  }
  return current
}

const fieldMatches = (input: Buffer, field: NonNullable<StudioFilter["inputField"]>): boolean => {
  const decoded = inspectValue(input)
  if (!decoded.readable) return false
  const found = fieldAt(decoded.value, field.path)
  if (found === undefined) return false
  return (typeof found === "string" ? found : JSON.stringify(found)) === field.value
}

/**
 * Byte strings of which a plain stored input (format 0x00) holds at least one whenever
 * `fieldMatches` accepts it, or undefined when no such strings exist. Plain inputs are
 * JSON.stringify's UTF-8 output (codec.ts `jsonBytes` writes every one), which spells each value
 * v inside them as JSON.stringify(v), the way decoding and re-encoding v spells it again. So a
 * string field equal to VALUE leaves JSON.stringify(VALUE) in the bytes, and a non-string one whose
 * JSON is VALUE leaves VALUE itself, possible only when VALUE is how JSON.stringify writes some
 * non-string. A path through a name every object or array inherits (`length`, `__proto__`) finds a
 * value the stored text does not spell: then the test stays entirely in JavaScript.
 */
export const inputFieldNeedles = (
  field: NonNullable<StudioFilter["inputField"]>,
): Buffer[] | undefined => {
  if (field.path.some((name) => name in Object.prototype || name in Array.prototype)) {
    return undefined
  }
  const needles = [JSON.stringify(field.value)]
  let parsed: unknown
  try {
    parsed = JSON.parse(field.value)
  } catch {
    parsed = undefined
  }
  if (
    parsed !== undefined &&
    typeof parsed !== "string" &&
    JSON.stringify(parsed) === field.value
  ) {
    needles.push(field.value)
  }
  return needles.map((needle) => Buffer.from(needle, "utf8"))
}

/**
 * The candidates of an input-field page after `after`, at most `budget` of them in listing order,
 * numbered from 1 (`ordinal`), of which only these come back: those that may match (brotli or
 * otherwise non-plain inputs, which SQL cannot read, and plain ones holding one of the needles: a
 * byte search, so a corrupt input cannot fail the statement), the last candidate (`final`) and the
 * one at the budget. The caller gets at most SCAN_BATCH rows and continues after the last.
 */
const inputFieldCandidates = (
  db: Db,
  filter: StudioFilter,
  after: ListingPosition | undefined,
  budget: number,
  needles: readonly Buffer[] | undefined,
) => {
  const listing = withStudioFilters(
    executionListQuery(db, filter, { after, limit: budget })
      .select("input")
      .select([
        sql<number>`(row_number() OVER (ORDER BY started_at_ms DESC, execution_id DESC))::int`.as(
          "ordinal",
        ),
        sql<boolean>`NOT lead(true, 1, false) OVER (ORDER BY started_at_ms DESC, execution_id DESC)`.as(
          "final",
        ),
      ]),
    filter,
  )
  // The format byte by substring, not get_byte: an empty (corrupt) input has no byte 0.
  const mayMatch =
    needles === undefined
      ? sql<boolean>`true`
      : sql<boolean>`(substring(candidate.input from 1 for 1) <> '\\x00'::bytea OR ${sql.join(
          needles.map((needle) => sql`position(${needle}::bytea in candidate.input) > 0`),
          sql` OR `,
        )})`
  return db
    .selectFrom(listing.as("candidate"))
    .selectAll("candidate")
    .select(mayMatch.as("may_match"))
    .where((eb) => eb.or([mayMatch, eb("final", "=", true), eb("ordinal", "=", budget)]))
    .orderBy("started_at_ms", "desc")
    .orderBy("execution_id", "desc")
    .limit(SCAN_BATCH)
}

/**
 * A page of executions, newest first, after `after`. The other filters narrow the candidates
 * through their index. An input-field filter reads at most `INPUT_SCAN_BUDGET` candidates per
 * page; a byte search in SQL drops the plain inputs that cannot match (`inputFieldNeedles`), and
 * the rest are decoded here and tested (brotli-stored inputs, above 256 bytes, always are).
 */
export const studioPage = async (
  db: Db,
  filter: StudioFilter,
  after: ListingPosition | undefined,
  limit: number,
): Promise<StudioPage> => {
  if (filter.inputField === undefined) {
    const rows = await withStudioFilters(
      executionListQuery(db, filter, { after, limit: limit + 1 }),
      filter,
    ).execute()
    const executions = rows.slice(0, limit).map(summaryOf)
    const last = executions.at(-1)
    return {
      executions,
      next:
        rows.length > limit && last !== undefined
          ? { startedAtMs: last.startedAtMs, executionId: last.executionId }
          : undefined,
      scanned: rows.length,
      budgetSpent: false,
    }
  }
  const needles = inputFieldNeedles(filter.inputField)
  const found: ExecutionSummary[] = []
  let position = after
  let scanned = 0
  for (;;) {
    const budget = INPUT_SCAN_BUDGET - scanned
    const readBefore = scanned
    const rows = await inputFieldCandidates(db, filter, position, budget, needles).execute()
    for (const row of rows) {
      scanned = readBefore + row.ordinal
      position = { startedAtMs: row.started_at_ms, executionId: row.execution_id }
      if (!row.may_match || !fieldMatches(row.input, filter.inputField)) continue
      if (found.length === limit) {
        // One match beyond the page: there is a next page, starting after the page's last row.
        const last = found.at(-1)!
        return {
          executions: found,
          next: { startedAtMs: last.startedAtMs, executionId: last.executionId },
          scanned,
          budgetSpent: false,
        }
      }
      found.push(summaryOf(row))
    }
    const last = rows.at(-1)
    if (last !== undefined && last.ordinal === budget) {
      return { executions: found, next: position, scanned, budgetSpent: true }
    }
    if (last === undefined || last.final) {
      return { executions: found, next: undefined, scanned, budgetSpent: false }
    }
  }
}

/** Counts stop here: the page says "more than 1,000" rather than count a million rows per load (bench/studio.ts on 1,010,000 executions: with a cap of 10,000 a workflow's failed page took 198 ms, with 1,000 it takes 15 ms). */
export const COUNT_CAP = 1_000

/** How many executions match (up to `COUNT_CAP`, then `COUNT_CAP + 1`), input field aside. */
export const cappedCount = async (db: Db, filter: StudioFilter): Promise<number> => {
  const matching = withStudioFilters(
    executionListQuery(db, filter, { limit: COUNT_CAP + 1 }),
    filter,
  )
    .clearSelect()
    .select(sql<number>`1`.as("one"))
  const { rows } = await sql<{
    count: number
  }>`SELECT count(*)::int AS count FROM (${matching}) AS matching`.execute(db)
  return rows[0]?.count ?? 0
}

export interface OverviewFigures {
  readonly nowMs: number
  /** Open executions by owner type, workflow and status. */
  readonly open: readonly {
    ownerType: string
    workflow: string
    status: string
    count: number
  }[]
  /** Executions finished in the last 24 hours by owner type, workflow and outcome. */
  readonly finishedToday: readonly {
    ownerType: string
    workflow: string
    outcome: string
    count: number
  }[]
  /** Finishes per minute over the last hour, oldest minute first (60 entries). */
  readonly finishesPerMinute: readonly number[]
  readonly oldestOpen:
    { executionId: string; ownerType: string; workflow: string; startedAtMs: number } | undefined
  /** The longest a due timer has waited to be claimed, and how many are due. */
  readonly dueTimers: { readonly count: number; readonly oldestDueAtMs: number | null }
  readonly runners: readonly {
    runnerId: string
    startedAtMs: number
    heartbeatAtMs: number
    buckets: number
    leaseExpiresAtMs: number | null
  }[]
  /** Failed or defect executions finished in the last hour, newest first (at most 20). */
  readonly recentFailures: readonly ExecutionSummary[]
  readonly failuresLastHour: number
}

const MINUTE = 60_000
const HOUR = 60 * MINUTE

/** The overview's figures, each from a bounded query. */
export const overviewFigures = async (
  db: Db,
  clock: DatabaseClock,
  tenant: string | undefined,
): Promise<OverviewFigures> => {
  const { rows: nowRows } = await sql<{ now: number }>`SELECT ${nowMs(clock)} AS now`.execute(db)
  const now = nowRows[0]!.now
  const ofTenant = tenant === undefined ? sql`true` : sql`tenant = ${tenant}`
  const [open, finishedToday, perMinute, oldestOpen, dueTimers, runners, failures] =
    await Promise.all([
      sql<{ owner_type: string; workflow: string; status: string; count: number }>`
        SELECT owner_type, workflow, status, count(*)::int AS count FROM akter.executions
        WHERE status <> 'finished' AND ${ofTenant}
        GROUP BY owner_type, workflow, status ORDER BY owner_type, workflow, status`.execute(db),
      sql<{ owner_type: string; workflow: string; outcome: string; count: number }>`
        SELECT owner_type, workflow, coalesce(outcome, 'unknown') AS outcome, count(*)::int AS count
        FROM akter.executions
        WHERE status = 'finished' AND finished_at_ms >= ${now - 24 * HOUR}::bigint AND ${ofTenant}
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`.execute(db),
      sql<{ minute: number; count: number }>`
        SELECT ((${now}::bigint - finished_at_ms) / ${MINUTE})::int AS minute, count(*)::int AS count
        FROM akter.executions
        WHERE status = 'finished' AND finished_at_ms > ${now - HOUR}::bigint AND ${ofTenant}
        GROUP BY 1`.execute(db),
      sql<{ execution_id: string; owner_type: string; workflow: string; started_at_ms: number }>`
        SELECT execution_id, owner_type, workflow, started_at_ms FROM akter.executions
        WHERE status <> 'finished' AND ${ofTenant}
        ORDER BY started_at_ms, execution_id LIMIT 1`.execute(db),
      sql<{ count: number; oldest: number | null }>`
        SELECT count(*)::int AS count, min(due_at_ms) AS oldest FROM akter.outbox
        WHERE kind = 'timer' AND due_at_ms <= ${now}::bigint AND ${ofTenant}`.execute(db),
      sql<{
        runner_id: string
        started_at_ms: number
        heartbeat_at_ms: number
        buckets: number
        expires: number | null
      }>`
        SELECT r.runner_id, r.started_at_ms, r.heartbeat_at_ms, count(l.bucket)::int AS buckets,
          min(l.expires_at_ms) AS expires
        FROM akter.runners r LEFT JOIN akter.leases l ON l.runner_id = r.runner_id
        GROUP BY r.runner_id, r.started_at_ms, r.heartbeat_at_ms
        ORDER BY r.started_at_ms`.execute(db),
      db
        .selectFrom("akter.executions")
        .select(summaryColumns)
        .where("status", "=", "finished")
        .where("outcome", "in", ["failed", "defect"])
        .where("finished_at_ms", ">=", now - HOUR)
        .$if(tenant !== undefined, (query) => query.where("tenant", "=", tenant!))
        .orderBy("finished_at_ms", "desc")
        .limit(21)
        .execute(),
    ])
  const finishesPerMinute = Array.from({ length: 60 }, () => 0)
  for (const row of perMinute.rows) {
    if (row.minute >= 0 && row.minute < 60) finishesPerMinute[59 - row.minute]! += row.count
  }
  const oldest = oldestOpen.rows[0]
  return {
    nowMs: now,
    open: open.rows.map((row) => ({
      ownerType: row.owner_type,
      workflow: row.workflow,
      status: row.status,
      count: row.count,
    })),
    finishedToday: finishedToday.rows.map((row) => ({
      ownerType: row.owner_type,
      workflow: row.workflow,
      outcome: row.outcome,
      count: row.count,
    })),
    finishesPerMinute,
    oldestOpen:
      oldest === undefined
        ? undefined
        : {
            executionId: oldest.execution_id,
            ownerType: oldest.owner_type,
            workflow: oldest.workflow,
            startedAtMs: oldest.started_at_ms,
          },
    dueTimers: {
      count: dueTimers.rows[0]?.count ?? 0,
      oldestDueAtMs: dueTimers.rows[0]?.oldest ?? null,
    },
    runners: runners.rows.map((row) => ({
      runnerId: row.runner_id,
      startedAtMs: row.started_at_ms,
      heartbeatAtMs: row.heartbeat_at_ms,
      buckets: row.buckets,
      leaseExpiresAtMs: row.expires,
    })),
    recentFailures: failures.slice(0, 20).map(summaryOf),
    failuresLastHour: failures.length,
  }
}

export interface OwnerEvent {
  readonly sequence: number
  readonly name: string
  readonly payload: ReturnType<typeof inspectValue>
  readonly emittedAtMs: number
}

/** An owner's events, newest first, before `beforeSequence` (a page of `limit`). */
export const ownerEvents = async (
  db: Db,
  owner: {
    readonly routingKey: string
    readonly tenant: string
    readonly ownerType: string
    readonly ownerId: string
  },
  limit: number,
  beforeSequence?: number,
): Promise<OwnerEvent[]> => {
  let query = db
    .selectFrom("akter.events")
    .select(["sequence", "name", "payload", "emitted_at_ms"])
    .where("routing_key", "=", owner.routingKey)
    .where("tenant", "=", owner.tenant)
    .where("owner_type", "=", owner.ownerType)
    .where("owner_id", "=", owner.ownerId)
  if (beforeSequence !== undefined) query = query.where("sequence", "<", beforeSequence)
  const rows = await query.orderBy("sequence", "desc").limit(limit).execute()
  return rows.map((row) => ({
    sequence: row.sequence,
    name: row.name,
    payload: inspectValue(row.payload),
    emittedAtMs: row.emitted_at_ms,
  }))
}

/** The events of an owner with these sequences (the events its waits matched). */
export const eventsBySequence = async (
  db: Db,
  owner: {
    readonly routingKey: string
    readonly tenant: string
    readonly ownerType: string
    readonly ownerId: string
  },
  sequences: readonly number[],
): Promise<OwnerEvent[]> => {
  if (sequences.length === 0) return []
  const rows = await db
    .selectFrom("akter.events")
    .select(["sequence", "name", "payload", "emitted_at_ms"])
    .where("routing_key", "=", owner.routingKey)
    .where("tenant", "=", owner.tenant)
    .where("owner_type", "=", owner.ownerType)
    .where("owner_id", "=", owner.ownerId)
    .where("sequence", "in", [...sequences])
    .execute()
  return rows.map((row) => ({
    sequence: row.sequence,
    name: row.name,
    payload: inspectValue(row.payload),
    emittedAtMs: row.emitted_at_ms,
  }))
}

/**
 * What the live page of an execution shows, condensed: it changes whenever the page would. Read
 * by primary key for every watched execution in one statement.
 */
export const executionFingerprints = async (
  db: Db,
  executions: readonly { readonly routingKey: string; readonly executionId: string }[],
): Promise<Map<string, string>> => {
  const fingerprints = new Map<string, string>()
  if (executions.length === 0) return fingerprints
  const { rows } = await sql<{ execution_id: string; fingerprint: string }>`
    SELECT e.execution_id, concat_ws('/', e.status, e.interrupt, e.finished_at_ms,
      (SELECT count(*) || ':' || count(s.exit) || ':' || coalesce(max(s.settled_at_ms), 0)
         FROM akter.steps s WHERE s.routing_key = e.routing_key AND s.execution_id = e.execution_id),
      (SELECT o.due_at_ms || ':' || o.pokes FROM akter.outbox o
         WHERE o.routing_key = e.routing_key AND o.kind = 'timer' AND o.id = e.execution_id)) AS fingerprint
    FROM akter.executions e
    WHERE (e.routing_key, e.execution_id) IN (${sql.join(
      executions.map(
        (execution) => sql`(${execution.routingKey}::bigint, ${execution.executionId})`,
      ),
    )})`.execute(db)
  for (const row of rows) fingerprints.set(row.execution_id, row.fingerprint)
  return fingerprints
}

/**
 * Open executions whose statuses the list stamp follows, newest first: a list's status filters
 * show the newest executions first, and reading more would read every open row once a second.
 */
const STAMPED_OPEN_EXECUTIONS = 500

/**
 * A cheap stamp of every execution list: it changes when an execution starts or finishes, when an
 * interrupt is asked for, and when one of the newest `STAMPED_OPEN_EXECUTIONS` open executions
 * changes status (running, suspended, queued) — a pass that suspends or resumes writes no start
 * or finish. Index lookups, and that many rows read by `executions_open_by_start`.
 */
export const listingStamp = async (db: Db): Promise<string> => {
  const { rows } = await sql<{ stamp: string }>`
    SELECT concat_ws('/',
      (SELECT max(started_at_ms) FROM akter.executions),
      (SELECT max(finished_at_ms) FROM akter.executions WHERE status = 'finished'),
      (SELECT count(*) FROM akter.executions WHERE status <> 'finished'),
      (SELECT count(*) FROM akter.executions WHERE interrupt AND status <> 'finished'),
      (SELECT md5(string_agg(o.status, ',' ORDER BY o.started_at_ms DESC, o.execution_id DESC))
        FROM (SELECT status, started_at_ms, execution_id FROM akter.executions
          WHERE status <> 'finished'
          ORDER BY started_at_ms DESC, execution_id DESC
          LIMIT ${STAMPED_OPEN_EXECUTIONS}) o)) AS stamp`.execute(db)
  return rows[0]?.stamp ?? ""
}
