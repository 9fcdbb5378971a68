/**
 * `studioHandler(akter, options)`: the studio as a standard Fetch handler (`Request` →
 * `Response`), which `akter studio` serves with node:http and an application can mount in its own
 * server. It routes the pages, the live event stream, the two assets and the actions; it checks
 * the token (a cookie set from the printed URL's `?token=`, or `Authorization: Bearer`), refuses
 * every action of a read-only studio whoever asks, and requires on every action a CSRF token
 * derived from the studio's token plus a same-origin request.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { internalsOf, type Akter } from "../runtime/akter.js"
import { ForeignTenant, InvalidExecutionId } from "../runtime/errors.js"
import { inspectExecution } from "../runtime/inspect/executionListing.js"
import type { ListingPosition } from "../runtime/inspect/executionQueries.js"
import { decodeExecutionId } from "../runtime/model/executionId.js"
import { placeOwner } from "../runtime/owners/routing.js"
import { listSchedules } from "../runtime/schedules/scheduleStore.js"
import { compatibilityPage, type CompatibilityVerdict } from "./compatibilityPage.js"
import { queryString } from "./html.js"
import { LiveHub } from "./liveUpdates.js"
import { schedulesPage, type ScheduleDeclarations } from "./schedulesPage.js"
import { STUDIO_CSS, STUDIO_JS } from "./studioAssets.js"
import {
  interruptMatching,
  interruptOne,
  makeTimerDueNow,
  openPartOf,
  pauseSchedule,
  type ActionContext,
} from "./studioActions.js"
import {
  bulkConfirmPage,
  executionPage,
  executionsPage,
  FILTER_FIELDS,
  messagePage,
  overviewPage,
  ownerPage,
  STATUS_CHOICES,
  type FilterForm,
  type PageContext,
} from "./studioPages.js"
import {
  cappedCount,
  eventsBySequence,
  OUTCOMES,
  overviewFigures,
  ownerEvents,
  studioPage,
  type StudioFilter,
} from "./studioQueries.js"

export interface StudioOptions {
  /**
   * The secret that opens the studio: visit `…/?token=TOKEN` once (a cookie keeps it), or send
   * `Authorization: Bearer TOKEN`. Required unless `readOnly`; a read-only studio without a
   * token is open to whoever reaches it (put it behind your own authentication).
   */
  readonly token?: string | undefined
  /** Show everything, change nothing: no action is rendered or accepted. Default false. */
  readonly readOnly?: boolean | undefined
  /** Where the handler is mounted (`/studio`); default the root. */
  readonly basePath?: string | undefined
  /** Show only this tenant's executions and owners (a tenant-restricted handle implies its own). */
  readonly tenant?: string | undefined
  /**
   * The Compatibility page's verdict: the check of the manifests on disk against the lock file
   * and the open executions. `akter studio` passes `akter check`'s own; without it the page says
   * how to get one.
   */
  readonly compatibility?: (() => Promise<CompatibilityVerdict>) | undefined
  /**
   * The Schedules page's declarations — each schedule's workflow, timing and policies, which the
   * database does not keep (it keeps their state). `akter studio` passes the manifests on disk; a
   * mounted handler may pass its generated owners' canonical forms
   * (`async () => [Report.registration.canonical]`). Without it the page shows their state only.
   */
  readonly schedules?: (() => Promise<readonly ScheduleDeclarations[]>) | undefined
  /** How often live pages look for changes, in ms (default 1000; notifications also wake them). */
  readonly liveIntervalMs?: number | undefined
  /** Names the studio in the audit log lines of its actions (default `studio`). */
  readonly name?: string | undefined
}

/** A Fetch handler; `close()` ends its live streams and its database listener. */
export interface StudioHandler {
  (request: Request): Promise<Response>
  close(): Promise<void>
}

const PAGE_SIZE = 50
const SESSION_COOKIE = "akter_studio"

const derive = (token: string, purpose: string) =>
  createHmac("sha256", token).update(`akter-studio:${purpose}`).digest("base64url")

const sameText = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

const cookieOf = (request: Request, name: string): string | undefined => {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=")
    if (key === name) return decodeURIComponent(value.join("="))
  }
  return undefined
}

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  // Not no-referrer: under it Chromium sends `Origin: null` with a form's POST.
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
}

const page = (body: string, status = 200, headers: Record<string, string> = {}) =>
  new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      ...SECURITY_HEADERS,
      ...headers,
    },
  })

const redirect = (location: string, headers: Record<string, string> = {}) =>
  new Response(null, { status: 303, headers: { location, ...SECURITY_HEADERS, ...headers } })

/** A filter the page refuses, naming the field. */
class FilterRefused extends Error {
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`filter ${field}: ${detail}`)
  }
}

const CURSOR_PREFIX = "s1."

const encodeCursor = (position: ListingPosition) =>
  `${CURSOR_PREFIX}${Buffer.from(JSON.stringify([position.startedAtMs, position.executionId])).toString("base64url")}`

const decodeCursor = (cursor: string): ListingPosition => {
  try {
    if (!cursor.startsWith(CURSOR_PREFIX)) throw new Error()
    const parsed: unknown = JSON.parse(
      Buffer.from(cursor.slice(CURSOR_PREFIX.length), "base64url").toString(),
    )
    if (Array.isArray(parsed) && Number.isSafeInteger(parsed[0]) && typeof parsed[1] === "string") {
      return { startedAtMs: parsed[0] as number, executionId: parsed[1] }
    }
  } catch {
    // refused below
  }
  throw new FilterRefused("cursor", "not a cursor this page made; follow the next-page link")
}

const MAX_PAGE_SIZE = 500

const limitOf = (value: string | null): number | undefined => {
  if (value === null || value === "") return undefined
  const limit = Number(value)
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new FilterRefused("limit", `must be an integer from 1 to ${MAX_PAGE_SIZE}`)
  }
  return limit
}

/** `2026-05-04T10:00` (UTC, seconds optional), a full ISO time, or epoch milliseconds. */
const timeField = (field: string, value: string | undefined): number | undefined => {
  if (value === undefined || value === "") return undefined
  if (/^\d+$/.test(value)) return Number(value)
  const iso = /[zZ]|[+-]\d\d:\d\d$/.test(value) ? value : `${value}Z`
  const ms = Date.parse(iso)
  if (!Number.isFinite(ms)) {
    throw new FilterRefused(
      field,
      `${JSON.stringify(value)} is not a time (write 2026-05-04T10:00, UTC)`,
    )
  }
  return ms
}

/** `customerId = c-42`, `input.customer.id=c-42`. */
const inputField = (value: string | undefined): StudioFilter["inputField"] => {
  if (value === undefined || value.trim() === "") return undefined
  const match = /^\s*(?:input\.)?([A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+)*)\s*=\s*(.*?)\s*$/.exec(
    value,
  )
  if (match === null) {
    throw new FilterRefused(
      "input",
      `${JSON.stringify(value)} is not FIELD = VALUE (customerId = c-42)`,
    )
  }
  return { path: match[1]!.split("."), value: match[2]! }
}

const formOf = (params: URLSearchParams): FilterForm =>
  Object.fromEntries(
    FILTER_FIELDS.map((name) => [name, params.get(name)?.trim() || undefined]),
  ) as FilterForm

const filterOf = (form: FilterForm, tenant: string | undefined): StudioFilter => {
  const status = form.status
  if (status !== undefined && !(STATUS_CHOICES as readonly string[]).includes(status)) {
    throw new FilterRefused("status", `must be one of ${STATUS_CHOICES.join(", ")}`)
  }
  if (form.ownerId !== undefined && form.ownerType === undefined) {
    throw new FilterRefused(
      "ownerId",
      "pick the owner type too: owner ids repeat across owner types",
    )
  }
  const outcome = (OUTCOMES as readonly string[]).includes(status ?? "")
    ? (status as StudioFilter["outcome"])
    : undefined
  return {
    tenant: tenant ?? form.tenant,
    ownerType: form.ownerType,
    ownerId: form.ownerId,
    workflow: form.workflow,
    status: outcome !== undefined ? "finished" : (status as StudioFilter["status"]),
    outcome,
    key: form.key,
    startedFrom: timeField("from", form.from),
    startedBefore: timeField("to", form.to),
    inputField: inputField(form.input),
  }
}

/**
 * The studio as a Fetch handler.
 *
 * @example
 * import { createServer } from "node:http"
 * import { createAkter } from "akter"
 * import { studioHandler, serveFetchHandler } from "akter/studio"
 *
 * const akter = await createAkter({ databaseUrl: process.env.DATABASE_URL })
 * const studio = studioHandler(akter, { token: process.env.STUDIO_TOKEN, basePath: "/studio" })
 * createServer(serveFetchHandler(studio)).listen(4000, "127.0.0.1")
 */
export const studioHandler = (akter: Akter, options: StudioOptions = {}): StudioHandler => {
  const internals = internalsOf(akter)
  const readOnly = options.readOnly ?? false
  const token = options.token
  if (!readOnly && (token === undefined || token.length < 16)) {
    throw new Error(
      "studioHandler: actions need a token of at least 16 characters (options.token); or pass readOnly: true",
    )
  }
  if (
    options.tenant !== undefined &&
    internals.tenant !== undefined &&
    options.tenant !== internals.tenant
  ) {
    throw new Error(
      `studioHandler: the handle is restricted to tenant ${JSON.stringify(internals.tenant)}, not ${JSON.stringify(options.tenant)}`,
    )
  }
  const tenant = options.tenant ?? internals.tenant
  const base = (options.basePath ?? "").replace(/\/+$/, "")
  const session = token === undefined ? undefined : derive(token, "session")
  const csrf = token === undefined ? undefined : derive(token, "csrf")
  const hub = new LiveHub(akter, options.liveIntervalMs ?? 1000)
  const context: PageContext = {
    base,
    readOnly,
    csrf: readOnly ? undefined : csrf,
    tenant,
    backend: internals.storage.backend === "postgres" ? "Postgres" : "PGlite",
  }
  const db = internals.storage.db
  const cookie = (value: string) =>
    `${SESSION_COOKIE}=${value}; Path=${base === "" ? "/" : base}; HttpOnly; SameSite=Strict`

  const signedIn = (request: Request): boolean => {
    if (session === undefined) return true
    const bearer = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1]
    if (bearer !== undefined && token !== undefined && sameText(bearer, token)) return true
    const held = cookieOf(request, SESSION_COOKIE)
    return held !== undefined && sameText(held, session)
  }

  const sameOrigin = (request: Request, url: URL): boolean => {
    const site = request.headers.get("sec-fetch-site")
    if (site !== null && site !== "same-origin" && site !== "none") return false
    const origin = request.headers.get("origin")
    return origin === null || origin === url.origin
  }

  const workflows = async () =>
    (
      await db
        .selectFrom("akter.manifests")
        .select(["owner_type", "workflow"])
        .distinct()
        .orderBy("owner_type")
        .orderBy("workflow")
        .execute()
    ).map((row) => ({ ownerType: row.owner_type, workflow: row.workflow }))

  /** The database's clock as this process estimates it (relative times on pages). */
  const dbNow = () => Date.now() + internals.clock.skewMs + internals.clock.offsetMs

  const executionsView = async (params: URLSearchParams, notice?: string) => {
    const form = formOf(params)
    try {
      const filter = filterOf(form, tenant)
      const cursor = params.get("cursor") ?? undefined
      const after = cursor === undefined || cursor === "" ? undefined : decodeCursor(cursor)
      const limit = limitOf(params.get("limit"))
      const [result, count, known] = await Promise.all([
        studioPage(db, filter, after, limit ?? PAGE_SIZE),
        filter.inputField === undefined ? cappedCount(db, filter) : Promise.resolve(undefined),
        workflows(),
      ])
      return page(
        executionsPage(
          context,
          {
            form,
            executions: result.executions,
            nextCursor: result.next === undefined ? undefined : encodeCursor(result.next),
            count,
            scanned: result.scanned,
            budgetSpent: result.budgetSpent,
            nowMs: dbNow(),
            workflows: known,
            openMatching: openPartOf(filter) !== undefined && (count === undefined || count > 0),
            firstPage: after === undefined,
            limit,
          },
          { notice },
        ),
      )
    } catch (error) {
      if (!(error instanceof FilterRefused)) throw error
      return page(
        executionsPage(
          context,
          {
            form,
            executions: [],
            nextCursor: undefined,
            count: 0,
            scanned: 0,
            budgetSpent: false,
            nowMs: dbNow(),
            workflows: await workflows(),
            openMatching: false,
            firstPage: true,
            limit: undefined,
          },
          { error: error.message },
        ),
        400,
      )
    }
  }

  const executionView = async (executionId: string, notice?: string, error?: string) => {
    const address = decodeExecutionId(executionId)
    if (address instanceof InvalidExecutionId) {
      return page(messagePage(context, "Not an execution id", address.message), 404)
    }
    const detail = await inspectExecution(akter, executionId)
    if (detail === undefined || (tenant !== undefined && detail.tenant !== tenant)) {
      return page(
        messagePage(context, "No such execution", `${executionId} is not in this database.`),
        404,
      )
    }
    const owner = placeOwner(detail)
    const matched = detail.steps.flatMap((step) =>
      step.wait?.matched === null || step.wait?.matched === undefined ? [] : [step.wait.matched],
    )
    const matchedEvents = await eventsBySequence(db, owner, matched)
    return page(
      executionPage(context, { detail, nowMs: dbNow(), matchedEvents }, { notice, error }),
    )
  }

  const ownerView = async (ownerType: string, ownerId: string, params: URLSearchParams) => {
    const ownerTenant = tenant ?? params.get("tenant") ?? "default"
    if (tenant !== undefined && params.get("tenant") !== null && params.get("tenant") !== tenant) {
      return page(messagePage(context, "No such owner", "This studio shows one tenant only."), 404)
    }
    const owner = placeOwner({ tenant: ownerTenant, ownerType, ownerId })
    const [events, executions] = await Promise.all([
      ownerEvents(db, owner, 100),
      studioPage(db, { tenant: ownerTenant, ownerType, ownerId }, undefined, PAGE_SIZE),
    ])
    return page(ownerPage(context, owner, events, executions.executions, dbNow()))
  }

  const schedulesView = async (notice?: string, error?: string, status = 200) => {
    // Schedules belong to owner types, not tenants (and a tenant's role reads no schedule row).
    if (tenant !== undefined) {
      return page(
        messagePage(
          context,
          "Schedules",
          "Schedules belong to the whole database, not to a tenant: a studio given a tenant shows none. Open the studio without a tenant to see them.",
        ),
      )
    }
    let declared: readonly ScheduleDeclarations[] | undefined
    let declarationProblem: string | undefined
    try {
      declared = await options.schedules?.()
    } catch (problem) {
      declarationProblem = problem instanceof Error ? problem.message : String(problem)
    }
    return page(
      schedulesPage(
        context,
        { rows: await listSchedules(db), declared, declarationProblem, nowMs: dbNow() },
        { notice, error },
      ),
      status,
    )
  }

  const actionContext = (request: Request): ActionContext => ({
    akter,
    tenant,
    actor: `${options.name ?? "studio"}${request.headers.get("x-forwarded-for") === null ? "" : ` for ${request.headers.get("x-forwarded-for")}`}`,
  })

  const act = async (request: Request, url: URL, action: string): Promise<Response> => {
    if (readOnly) {
      return page(
        messagePage(
          context,
          "Read-only studio",
          "This studio changes nothing: it was started read-only.",
        ),
        403,
      )
    }
    if (!sameOrigin(request, url)) {
      return page(
        messagePage(context, "Refused", "Actions are accepted from the studio's own pages only."),
        403,
      )
    }
    const form = new URLSearchParams(await request.text())
    const given = form.get("csrf") ?? request.headers.get("x-csrf-token") ?? ""
    if (csrf === undefined || !sameText(given, csrf)) {
      return page(
        messagePage(
          context,
          "Refused",
          "The form's CSRF token is missing or wrong: reload the page and try again.",
        ),
        403,
      )
    }
    const context_ = actionContext(request)
    try {
      switch (action) {
        case "interrupt": {
          const executionId = form.get("executionId") ?? ""
          await interruptOne(context_, executionId)
          return redirect(
            `${base}/executions/${encodeURIComponent(executionId)}?notice=interrupt-requested`,
          )
        }
        case "timer-due-now": {
          const executionId = form.get("executionId") ?? ""
          const moved = await makeTimerDueNow(context_, executionId)
          return redirect(
            `${base}/executions/${encodeURIComponent(executionId)}?notice=${moved ? "timer-due" : "no-timer"}`,
          )
        }
        case "bulk-interrupt": {
          const filterForm = formOf(form)
          let filter: StudioFilter
          try {
            filter = filterOf(filterForm, tenant)
          } catch (error) {
            if (error instanceof FilterRefused)
              return page(messagePage(context, "Refused", error.message), 400)
            throw error
          }
          const open = openPartOf(filter)
          if (open === undefined) {
            return page(
              messagePage(
                context,
                "Nothing to interrupt",
                "This filter selects finished executions only.",
              ),
              400,
            )
          }
          if (form.get("confirm") === null) {
            const count = await cappedCount(db, open)
            return page(bulkConfirmPage(context, filterForm, count))
          }
          const interrupted = await interruptMatching(context_, filter)
          const params = new URLSearchParams()
          for (const name of FILTER_FIELDS) {
            const value = filterForm[name]
            if (value !== undefined) params.set(name, value)
          }
          params.set("interrupted", String(interrupted))
          return redirect(`${base}/executions?${params.toString()}`)
        }
        case "schedule-pause":
        case "schedule-resume": {
          if (tenant !== undefined) {
            return page(
              messagePage(context, "Refused", "A studio given a tenant changes no schedule."),
              403,
            )
          }
          const paused = action === "schedule-pause"
          const ownerType = form.get("ownerType") ?? ""
          const schedule = form.get("schedule") ?? ""
          const changed = await pauseSchedule(context_, ownerType, schedule, paused)
          if (changed === undefined) {
            return schedulesView(
              undefined,
              `No schedule ${ownerType}.${schedule} in this database: no runner has declared it.`,
              404,
            )
          }
          return redirect(
            `${base}/schedules${queryString({ notice: paused ? "schedule-paused" : "schedule-resumed", schedule: `${ownerType}.${schedule}` })}`,
          )
        }
        default:
          return page(messagePage(context, "Not found", `No action ${action}.`), 404)
      }
    } catch (error) {
      if (error instanceof InvalidExecutionId || error instanceof ForeignTenant) {
        return page(messagePage(context, "Refused", error.message), 400)
      }
      throw error
    }
  }

  const NOTICES: Readonly<Record<string, string>> = {
    "interrupt-requested":
      "Interrupt requested: the next pass runs the compensations and records Interrupt.",
    "timer-due": "Its timer is due now: a runner takes it at once.",
    "no-timer":
      "It has no pending timer to move (finished, or waiting for an event without a timeout).",
    "schedule-paused": "Paused: it starts nothing until resumed.",
    "schedule-resumed":
      "Resumed: it starts from its next tick, without catching up the ticks it missed.",
  }

  const route = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    if (base !== "" && url.pathname !== base && !url.pathname.startsWith(`${base}/`)) {
      return page(messagePage(context, "Not found", "Not a studio page."), 404)
    }
    const path = url.pathname.slice(base.length) || "/"
    if (request.method === "GET" && path === "/assets/studio.css") {
      return new Response(STUDIO_CSS, {
        headers: {
          "content-type": "text/css; charset=utf-8",
          "cache-control": "max-age=300",
          ...SECURITY_HEADERS,
        },
      })
    }
    if (request.method === "GET" && path === "/assets/studio.js") {
      return new Response(STUDIO_JS, {
        headers: {
          "content-type": "text/javascript; charset=utf-8",
          "cache-control": "max-age=300",
          ...SECURITY_HEADERS,
        },
      })
    }
    const offered = url.searchParams.get("token")
    if (request.method === "GET" && offered !== null && token !== undefined) {
      if (!sameText(offered, token)) {
        return page(
          messagePage(context, "Wrong token", "This is not the token akter studio printed."),
          401,
        )
      }
      url.searchParams.delete("token")
      return redirect(`${url.pathname}${url.search}`, { "set-cookie": cookie(session!) })
    }
    if (!signedIn(request)) {
      return page(
        messagePage(
          context,
          "Sign in",
          "Open the URL akter studio printed (it carries the token), or send Authorization: Bearer TOKEN.",
        ),
        401,
      )
    }
    if (request.method === "POST" && path.startsWith("/actions/")) {
      return act(request, url, path.slice("/actions/".length))
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return page(
        messagePage(context, "Not allowed", `${request.method} is not served here.`),
        405,
        { allow: "GET, HEAD" },
      )
    }
    const notice = NOTICES[url.searchParams.get("notice") ?? ""]
    if (path === "/") {
      return page(overviewPage(context, await overviewFigures(db, internals.clock, tenant)))
    }
    if (path === "/events") {
      return hub.subscribe(url.searchParams.get("execution") ?? undefined, request.signal)
    }
    if (path === "/executions") {
      const interrupted = url.searchParams.get("interrupted")
      return executionsView(
        url.searchParams,
        interrupted === null
          ? undefined
          : `Interrupt requested for ${Number(interrupted)} executions.`,
      )
    }
    const execution = /^\/executions\/([^/]+)$/.exec(path)
    if (execution !== null) return executionView(decodeURIComponent(execution[1]!), notice)
    const owner = /^\/owners\/([^/]+)\/(.+)$/.exec(path)
    if (owner !== null) {
      return ownerView(
        decodeURIComponent(owner[1]!),
        decodeURIComponent(owner[2]!),
        url.searchParams,
      )
    }
    if (path === "/schedules") {
      const named = url.searchParams.get("schedule")
      return schedulesView(notice === undefined || named === null ? notice : `${named}: ${notice}`)
    }
    if (path === "/compatibility") {
      // Its groups count every tenant's open executions unless the database restricts the handle.
      if (tenant !== undefined && internals.tenant === undefined) {
        return page(
          messagePage(
            context,
            "Compatibility",
            "A studio given a tenant on an unrestricted handle shows no compatibility verdict: it would count every tenant's open executions. Open the studio with a tenant-restricted handle (row-level security), or without a tenant.",
          ),
        )
      }
      return page(compatibilityPage(context, await options.compatibility?.(), dbNow()))
    }
    return page(messagePage(context, "Not found", `No page at ${path}.`), 404)
  }

  const handler = async (request: Request): Promise<Response> => {
    try {
      return await route(request)
    } catch (error) {
      internals.log.error("studio: request failed", { url: request.url, error: String(error) })
      return page(
        messagePage(
          context,
          "Something failed",
          error instanceof Error ? error.message : String(error),
        ),
        500,
      )
    }
  }
  return Object.assign(handler, { close: () => hub.close() })
}
