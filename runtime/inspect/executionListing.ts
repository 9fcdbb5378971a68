/**
 * Reading executions from an application: `listExecutions` pages through them by tenant, owner,
 * owner type, workflow, status and start time, in a stable order with an opaque cursor;
 * `countExecutions` counts the same selection by status; `inspectExecution` shows one with its
 * steps. Nothing here writes. Each query is served by an index (migration 0005), so a page costs
 * the same on page one and page one thousand. Every read is an idempotent call: connection-class
 * failures are retried within the handle's `callTimeout`, then fail with `DatabaseUnavailable`.
 */
import { internalsOf, type Akter } from "../akter.js"
import { idempotentCall } from "../client/databaseCalls.js"
import { InvalidQuery } from "../errors.js"
import {
  DEFAULT_LIST_LIMIT,
  STATUS_FILTERS,
  countByStatus,
  queryExecutions,
  showExecution,
  type ExecutionDetail,
  type ExecutionFilter,
  type ExecutionSummary,
  type ListingPosition,
  type StatusFilter,
} from "./executionQueries.js"
import type { Db } from "../storage/database.js"

export const MAX_LIST_LIMIT = 1000

export interface ExecutionQuery {
  /** Only this tenant's executions. Default: every tenant (a tenant-restricted handle: its own). */
  readonly tenant?: string | undefined
  /** Only executions of this owner type (`Order`). */
  readonly ownerType?: string | undefined
  /** Only this owner's executions; pair it with `ownerType`. */
  readonly ownerId?: string | undefined
  /** Only this workflow (`fulfill`); pair it with `ownerType`, since workflow names repeat across owner types. */
  readonly workflow?: string | undefined
  /** `queued`, `running`, `suspended`, `finished`, or `open` (any but finished). */
  readonly status?: StatusFilter | undefined
  /** Only executions started at or after this time. */
  readonly startedFrom?: Date | number | undefined
  /** Only executions started before this time. */
  readonly startedBefore?: Date | number | undefined
  /** `newest` first (default) or `oldest` first; ties in start time go by execution id. */
  readonly order?: "newest" | "oldest" | undefined
  /** Page size, 1 to 1000 (default 50). */
  readonly limit?: number | undefined
  /** The `nextCursor` of the previous page, with the same query. */
  readonly cursor?: string | undefined
}

export interface ExecutionPage {
  readonly executions: readonly ExecutionSummary[]
  /** Pass as `cursor` to read the next page; undefined on the last page. */
  readonly nextCursor: string | undefined
}

export interface ExecutionCounts {
  readonly total: number
  /** Waiting for their concurrency group to admit them (see the README's concurrency keys). */
  readonly queued: number
  readonly running: number
  readonly suspended: number
  readonly finished: number
}

const CURSOR_PREFIX = "c1."

const encodeCursor = (order: "newest" | "oldest", position: ListingPosition): string =>
  `${CURSOR_PREFIX}${Buffer.from(
    JSON.stringify([order, position.startedAtMs, position.executionId]),
  ).toString("base64url")}`

const decodeCursor = (cursor: string, order: "newest" | "oldest"): ListingPosition => {
  const refused = new InvalidQuery(
    "cursor",
    "not a cursor listExecutions returned; pass the nextCursor of the previous page",
  )
  if (!cursor.startsWith(CURSOR_PREFIX)) throw refused
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor.slice(CURSOR_PREFIX.length), "base64url").toString())
  } catch {
    throw refused
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    (parsed[0] !== "newest" && parsed[0] !== "oldest") ||
    !Number.isSafeInteger(parsed[1]) ||
    typeof parsed[2] !== "string"
  ) {
    throw refused
  }
  if (parsed[0] !== order) {
    throw new InvalidQuery(
      "cursor",
      `the cursor continues a listing ordered ${parsed[0]} first, not ${order} first; keep the query of the first page`,
    )
  }
  return { startedAtMs: parsed[1] as number, executionId: parsed[2] as string }
}

const timeOf = (field: string, value: Date | number | undefined): number | undefined => {
  if (value === undefined) return undefined
  const ms = value instanceof Date ? value.getTime() : value
  if (!Number.isFinite(ms))
    throw new InvalidQuery(field, "must be a valid Date or epoch milliseconds")
  return Math.trunc(ms)
}

const text = (field: string, value: unknown): string | undefined => {
  if (value === undefined) return undefined
  if (typeof value !== "string" || value === "") {
    throw new InvalidQuery(field, "must be a non-empty string")
  }
  return value
}

/** The query as a filter, checked; the tenant of a tenant-restricted handle applies. */
const filterOf = (akter: Akter, query: ExecutionQuery): ExecutionFilter => {
  const restricted = internalsOf(akter).tenant
  const tenant = text("tenant", query.tenant) ?? restricted
  if (restricted !== undefined && tenant !== restricted) {
    throw new InvalidQuery(
      "tenant",
      `this handle is restricted to tenant ${JSON.stringify(restricted)} (row-level-security mode)`,
    )
  }
  if (query.status !== undefined && !STATUS_FILTERS.includes(query.status)) {
    throw new InvalidQuery("status", `must be one of ${STATUS_FILTERS.join(", ")}`)
  }
  return {
    tenant,
    ownerType: text("ownerType", query.ownerType),
    ownerId: text("ownerId", query.ownerId),
    workflow: text("workflow", query.workflow),
    status: query.status,
    startedFrom: timeOf("startedFrom", query.startedFrom),
    startedBefore: timeOf("startedBefore", query.startedBefore),
  }
}

/** The listing part of a query (`order`, `limit`, `cursor`), checked. */
export const listingOf = (
  query: Pick<ExecutionQuery, "order" | "limit" | "cursor">,
): {
  readonly order: "newest" | "oldest"
  readonly limit: number
  readonly after: ListingPosition | undefined
} => {
  const order = query.order ?? "newest"
  if (order !== "newest" && order !== "oldest") {
    throw new InvalidQuery("order", "must be newest or oldest")
  }
  const limit = query.limit ?? DEFAULT_LIST_LIMIT
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new InvalidQuery("limit", `must be an integer from 1 to ${MAX_LIST_LIMIT}`)
  }
  return {
    order,
    limit,
    after: query.cursor === undefined ? undefined : decodeCursor(query.cursor, order),
  }
}

/** One page of the executions matching `filter`, and the cursor of the next. */
export const pageOfExecutions = async (
  db: Db,
  filter: ExecutionFilter,
  listing: ReturnType<typeof listingOf>,
): Promise<ExecutionPage> => {
  // One more than the page: whether it exists says if there is a next page.
  const rows = await queryExecutions(db, filter, { ...listing, limit: listing.limit + 1 })
  const executions = rows.slice(0, listing.limit)
  const last = executions.at(-1)
  return {
    executions,
    nextCursor:
      rows.length > listing.limit && last !== undefined
        ? encodeCursor(listing.order, last)
        : undefined,
  }
}

/**
 * One page of the executions matching `query`, newest first unless asked otherwise; pass
 * `nextCursor` back as `cursor` for the next page. Throws `InvalidQuery` for a malformed query.
 *
 * @example
 * // This customer's open orders, twenty at a time.
 * const query = { ownerType: "Order", ownerId: "c-42", status: "open", limit: 20 } as const
 * let page = await listExecutions(akter, query)
 * while (page.nextCursor !== undefined) {
 *   page = await listExecutions(akter, { ...query, cursor: page.nextCursor })
 * }
 */
export const listExecutions = async (
  akter: Akter,
  query: ExecutionQuery = {},
): Promise<ExecutionPage> => {
  const internals = internalsOf(akter)
  const filter = filterOf(akter, query)
  const listing = listingOf(query)
  return idempotentCall("listExecutions", internals, () =>
    pageOfExecutions(internals.storage.db, filter, listing),
  )
}

/**
 * How many executions match `query` (its `order`, `limit` and `cursor` aside), by status. It
 * counts every matching row: cheap for one owner or workflow, slower for a whole large table.
 *
 * @example
 * const { running, suspended } = await countExecutions(akter, { ownerType: "Order", workflow: "fulfill" })
 */
export const countExecutions = async (
  akter: Akter,
  query: ExecutionQuery = {},
): Promise<ExecutionCounts> => {
  const internals = internalsOf(akter)
  const filter = filterOf(akter, query)
  const counts = await idempotentCall("countExecutions", internals, () =>
    countByStatus(internals.storage.db, filter),
  )
  return {
    total: counts.queued + counts.running + counts.suspended + counts.finished,
    ...counts,
  }
}

/**
 * Everything recorded about one execution, decoded — its status, markers, every step with its
 * attempt and exit, the pending timer — as `akter inspect EXECUTION_ID --format json` prints it;
 * undefined when no such execution exists. Throws `InvalidExecutionId` for a string akter did not
 * issue.
 *
 * @example
 * const detail = await inspectExecution(akter, run.executionId)
 * for (const step of detail?.steps ?? []) console.log(step.step, step.attempt, step.exit)
 */
export const inspectExecution = (
  akter: Akter,
  executionId: string,
): Promise<ExecutionDetail | undefined> => {
  const internals = internalsOf(akter)
  return idempotentCall("inspectExecution", internals, () =>
    showExecution(internals.storage.db, executionId),
  )
}
