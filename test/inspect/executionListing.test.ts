/**
 * `listExecutions` and `countExecutions`, the public reading API: pages of executions by tenant,
 * owner, owner type, workflow, status and start time, newest or oldest first, resumed exactly by an
 * opaque cursor; counts by status; every query planned on an index; malformed queries refused with
 * `InvalidQuery`. Expected pages are computed from what the test started, in the order it started
 * them (the test clock moves a second between starts).
 */
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  countExecutions,
  InvalidQuery,
  listExecutions,
  makeOwnerClient,
  startRunner,
  type ExecutionQuery,
  type ExecutionSummary,
  type Runner,
} from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { executionListQuery } from "../../runtime/inspect/executionQueries.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { makeVault } from "../hostile/vaultWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

interface Started {
  readonly executionId: string
  readonly tenant: string
  readonly ownerType: string
  readonly ownerId: string
  readonly workflow: string
  /** What it is once the runner is idle. */
  readonly status: "suspended" | "finished"
}

describeEachBackend("listing executions", (backend) => {
  let akter: TestAkter
  let runner: Runner
  /** In the order they were started, a second apart. */
  const started: Started[] = []

  beforeAll(async () => {
    const vault = await makeVault()
    akter = await openTestAkter(backend)
    runner = await startRunner({ akter, workflows: vault.workflows, pollMs: 20 })
    const clients = {
      default: {
        Vault: makeOwnerClient<AnyClient>(akter, vault.vault),
        Ledger: makeOwnerClient<AnyClient>(akter, vault.ledger),
      },
      acme: {
        Vault: makeOwnerClient<AnyClient>(akter, vault.vault, { tenant: "acme" }),
        Ledger: makeOwnerClient<AnyClient>(akter, vault.ledger, { tenant: "acme" }),
      },
    }
    const entry = { name: "n", note: "x", tags: [] }
    const plan: [keyof typeof clients, "Vault" | "Ledger", string, string, unknown][] = [
      ["default", "Vault", "o-1", "store", { name: "s1", amount: 1, entry }],
      ["default", "Vault", "o-1", "listen", { name: "l1" }],
      ["default", "Vault", "o-2", "hold", undefined],
      ["acme", "Vault", "o-1", "listen", { name: "l2" }],
      ["default", "Ledger", "o-1", "store", { name: "s2" }],
      ["default", "Vault", "o-2", "store", { name: "s3", amount: 3, entry }],
      ["acme", "Vault", "o-1", "store", { name: "s4", amount: 4, entry }],
      ["default", "Vault", "o-1", "listen", { name: "l3" }],
    ]
    for (const [tenant, ownerType, ownerId, workflow, input] of plan) {
      akter.advance("1 second")
      const run = await clients[tenant][ownerType][workflow].start(ownerId, input)
      started.push({
        executionId: run.executionId,
        tenant,
        ownerType,
        ownerId,
        workflow,
        status: workflow === "store" ? "finished" : "suspended",
      })
    }
    await runUntilIdle(akter, runner)
  })

  afterAll(async () => {
    await runner?.close()
    await akter?.close()
  })

  const ids = (executions: readonly { executionId: string }[]) =>
    executions.map((execution) => execution.executionId)
  const newestFirst = (keep: (run: Started) => boolean) => ids(started.filter(keep).reverse())

  /** Every page of a query, following the cursors. */
  const allPages = async (query: ExecutionQuery) => {
    const pages: ExecutionSummary[][] = []
    let cursor: string | undefined
    do {
      const page = await listExecutions(akter, { ...query, cursor })
      pages.push([...page.executions])
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return pages
  }

  it("pages through every execution newest first, and oldest first, each exactly once", async () => {
    const pages = await allPages({ limit: 3 })
    expect(pages.map((page) => page.length)).toEqual([3, 3, 2])
    expect(ids(pages.flat())).toEqual(newestFirst(() => true))
    const oldest = await allPages({ limit: 3, order: "oldest" })
    expect(ids(oldest.flat())).toEqual(ids(started))
    // A page of one at a time walks the same order as one page of all.
    expect(ids((await allPages({ limit: 1 })).flat())).toEqual(
      ids((await listExecutions(akter, { limit: 1000 })).executions),
    )
    const whole = await listExecutions(akter)
    expect(whole.nextCursor).toBeUndefined()
    expect(whole.executions[0]).toMatchObject({
      executionId: started.at(-1)!.executionId,
      tenant: "default",
      ownerType: "Vault",
      ownerId: "o-1",
      workflow: "listen",
      status: "suspended",
      outcome: undefined,
      finishedAtMs: null,
    })
    expect(whole.executions.find((e) => e.workflow === "store")?.outcome).toBe("succeeded")
  })

  it("filters by owner (in a tenant, or in every tenant), owner type, workflow and status", async () => {
    const cases: [ExecutionQuery, (run: Started) => boolean][] = [
      [
        { tenant: "default", ownerType: "Vault", ownerId: "o-1" },
        (r) => r.tenant === "default" && r.ownerType === "Vault" && r.ownerId === "o-1",
      ],
      [
        { tenant: "acme", ownerType: "Vault", ownerId: "o-1" },
        (r) => r.tenant === "acme" && r.ownerType === "Vault" && r.ownerId === "o-1",
      ],
      [
        { ownerType: "Vault", ownerId: "o-1" },
        (r) => r.ownerType === "Vault" && r.ownerId === "o-1",
      ],
      [{ tenant: "acme" }, (r) => r.tenant === "acme"],
      [{ ownerType: "Ledger" }, (r) => r.ownerType === "Ledger"],
      [
        { ownerType: "Vault", workflow: "store" },
        (r) => r.ownerType === "Vault" && r.workflow === "store",
      ],
      [{ workflow: "store" }, (r) => r.workflow === "store"],
      [{ status: "open" }, (r) => r.status !== "finished"],
      [{ status: "suspended" }, (r) => r.status === "suspended"],
      [{ status: "finished" }, (r) => r.status === "finished"],
      [{ status: "running" }, () => false],
      [
        { ownerType: "Vault", ownerId: "o-1", status: "open", tenant: "default" },
        (r) =>
          r.tenant === "default" &&
          r.ownerType === "Vault" &&
          r.ownerId === "o-1" &&
          r.status !== "finished",
      ],
    ]
    for (const [query, keep] of cases) {
      const pages = await allPages({ ...query, limit: 2 })
      expect(ids(pages.flat()), JSON.stringify(query)).toEqual(newestFirst(keep))
    }
  })

  it("filters by start time: from (inclusive) and before (exclusive), as Dates or epoch ms", async () => {
    const times = (await listExecutions(akter, { order: "oldest" })).executions.map(
      (execution) => execution.startedAtMs,
    )
    expect(new Set(times).size).toBe(started.length)
    const from = times[2]!
    const before = times[5]!
    const window = await listExecutions(akter, {
      startedFrom: new Date(from),
      startedBefore: before,
    })
    expect(ids(window.executions)).toEqual(ids(started.slice(2, 5)).reverse())
    const later = await listExecutions(akter, { startedFrom: from, order: "oldest" })
    expect(ids(later.executions)).toEqual(ids(started.slice(2)))
  })

  it("counts the same selections by status", async () => {
    const countOf = (keep: (run: Started) => boolean) => {
      const matching = started.filter(keep)
      const by = (status: string) => matching.filter((r) => r.status === status).length
      return {
        total: matching.length,
        queued: 0,
        running: 0,
        suspended: by("suspended"),
        finished: by("finished"),
      }
    }
    expect(await countExecutions(akter)).toEqual(countOf(() => true))
    expect(await countExecutions(akter, { ownerType: "Vault", workflow: "listen" })).toEqual(
      countOf((r) => r.ownerType === "Vault" && r.workflow === "listen"),
    )
    expect(await countExecutions(akter, { tenant: "acme", limit: 1, cursor: undefined })).toEqual(
      countOf((r) => r.tenant === "acme"),
    )
  })

  it("plans every kind of query on an index ending in the listing order", async () => {
    const db = internalsOf(akter).storage.db
    const plan = async (filter: Parameters<typeof executionListQuery>[1]) =>
      db.transaction().execute(async (tx) => {
        // On a handful of rows a scan is cheaper: forbid it, to see which index serves the query.
        await sql`SET LOCAL enable_seqscan = off`.execute(tx)
        await sql`SET LOCAL enable_sort = off`.execute(tx)
        const rows = await executionListQuery(tx, filter, {
          after: { startedAtMs: Date.now(), executionId: "~" },
        }).explain()
        return rows.map((row) => String(Object.values(row)[0])).join("\n")
      })
    expect(await plan({})).toContain("executions_by_start")
    expect(await plan({ ownerType: "Vault", workflow: "store" })).toContain(
      "executions_by_workflow",
    )
    expect(await plan({ ownerType: "Vault", ownerId: "o-1" })).toContain("executions_by_owner")
    expect(await plan({ tenant: "default", ownerType: "Vault", ownerId: "o-1" })).toMatch(
      /executions_pkey|executions_by_owner/,
    )
    for (const filter of [{}, { ownerType: "Vault", workflow: "store" }]) {
      expect(await plan(filter)).not.toMatch(/Sort|Seq Scan/)
    }
  })

  it("refuses a malformed query with InvalidQuery naming the field", async () => {
    const refused = async (query: ExecutionQuery) => {
      const error = await listExecutions(akter, query).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(InvalidQuery)
      return error as InvalidQuery
    }
    expect((await refused({ cursor: "c1.garbage" })).message).toBe(
      "invalid execution query: cursor not a cursor listExecutions returned; pass the nextCursor of the previous page",
    )
    expect((await refused({ limit: 0 })).field).toBe("limit")
    expect((await refused({ limit: 1001 })).message).toBe(
      "invalid execution query: limit must be an integer from 1 to 1000",
    )
    expect((await refused({ startedFrom: new Date("not a date") })).field).toBe("startedFrom")
    expect((await refused({ ownerId: "" })).field).toBe("ownerId")
    const newest = await listExecutions(akter, { limit: 1 })
    expect((await refused({ limit: 1, order: "oldest", cursor: newest.nextCursor })).message).toBe(
      "invalid execution query: cursor the cursor continues a listing ordered newest first, not oldest first; keep the query of the first page",
    )
  })
})
