/**
 * The timer claim, statement by statement, on PGlite and on Postgres: a runner claims only due
 * timers of its buckets (or wanting a manifest it serves), earliest first, up to its limit; the
 * claim moves each a recovery interval ahead so no one else takes it, and it comes due again if
 * its claimer never finishes; concurrent claims never take one timer twice, and a claim skips a
 * timer another claim holds rather than waiting for it; a claimed timer is deleted only if nobody
 * re-armed it since. Times are the test clock's, far apart. The claim and the look-up of the next
 * due time read only rows due by then, however many timers fall due later (judged from the plan
 * the database ran, not from a time).
 */
import { randomUUID } from "node:crypto"
import { RawNode, sql, type Kysely, type KyselyPlugin, type RootOperationNode } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import {
  armTimerPart,
  claimDue,
  deleteClaimedPart,
  markWanted,
  nextDue,
  type ClaimedRow,
} from "../../runtime/outbox/outboxStore.js"
import { placeOwner, type OwnerPlacement } from "../../runtime/owners/routing.js"
import { composeStatement } from "../../runtime/storage/statementParts.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { sleep } from "../support/waitUntil.js"

const RECOVERY_MS = 60_000

interface PlanNode {
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Actual Rows"?: number
  readonly "Actual Loops"?: number
  readonly "Rows Removed by Filter"?: number
  readonly "Rows Removed by Index Recheck"?: number
  readonly "Rows Removed by Join Filter"?: number
  readonly Plans?: readonly PlanNode[]
}

/**
 * `db` with every statement run under EXPLAIN ANALYZE: the statement still runs (and writes), its
 * rows are replaced by none, and the plans it ran are kept.
 */
const explaining = (db: Kysely<never>) => {
  const plans: PlanNode[] = []
  const plugin: KyselyPlugin = {
    transformQuery: ({ node }) =>
      RawNode.create(["EXPLAIN (ANALYZE, FORMAT JSON) ", ""], [node]) as RootOperationNode,
    transformResult: async ({ result }) => {
      const cell = Object.values(result.rows[0] as Record<string, unknown>)[0]
      const explained = (typeof cell === "string" ? JSON.parse(cell) : cell) as [{ Plan: PlanNode }]
      plans.push(explained[0].Plan)
      return { ...result, rows: [] }
    },
  }
  return { db: db.withPlugin(plugin), plans }
}

/** Rows of akter.outbox a plan read: returned by its scans, or read and then filtered out. */
const outboxRowsRead = (node: PlanNode): number => {
  const loops = node["Actual Loops"] ?? 1
  const scansOutbox =
    node["Relation Name"] === "outbox" || (node["Index Name"] ?? "").startsWith("outbox")
  const read = scansOutbox
    ? ((node["Actual Rows"] ?? 0) +
        (node["Rows Removed by Filter"] ?? 0) +
        (node["Rows Removed by Index Recheck"] ?? 0)) *
      loops
    : 0
  return (
    read +
    (node["Rows Removed by Join Filter"] ?? 0) * loops +
    (node.Plans ?? []).reduce((sum, child) => sum + outboxRowsRead(child), 0)
  )
}

describeEachBackend("the timer claim", (backend) => {
  let akter: TestAkter

  beforeAll(async () => {
    akter = await openTestAkter(backend)
  })

  afterAll(() => akter?.close())

  const internals = () => internalsOf(akter)
  const db = () => internals().storage.db
  const clock = () => internals().clock

  const now = async () => {
    const { rows } = await sql<{ now: number }>`
      SELECT akter.now_ms(${clock().offsetMs}::bigint) AS now`.execute(db())
    return Number(rows[0]!.now)
  }

  /** An owner whose bucket no earlier test used: each test sees only its own timers. */
  const usedBuckets = new Set<number>()
  const freshOwner = (): OwnerPlacement => {
    for (;;) {
      const owner = placeOwner({
        tenant: "default",
        ownerType: "Probe",
        ownerId: `o-${randomUUID().slice(0, 8)}`,
      })
      if (!usedBuckets.has(owner.bucket)) {
        usedBuckets.add(owner.bucket)
        return owner
      }
    }
  }

  /** Arms a timer `offsetMs` from the database's now (negative: overdue). */
  const arm = async (owner: OwnerPlacement, id: string, offsetMs: number) => {
    const due = (await now()) + offsetMs
    await composeStatement(
      [armTimerPart(clock(), owner, id, due, { when: sql`true` })],
      sql`true AS armed`,
    ).execute(db())
    return due
  }

  const claim = (buckets: readonly number[], served: readonly string[] = [], limit = 10) =>
    claimDue(db(), clock(), buckets, served, limit, RECOVERY_MS)

  /** Arms `count` timers of `owner` at once, `offsetMs` from the database's now. */
  const armMany = async (
    owner: OwnerPlacement,
    prefix: string,
    count: number,
    offsetMs: number,
  ) => {
    const due = (await now()) + offsetMs
    await sql`INSERT INTO akter.outbox
        (routing_key, kind, id, bucket, tenant, owner_type, owner_id, due_at_ms)
      SELECT ${owner.routingKey}::bigint, 'timer', ${prefix} || n, ${owner.bucket}, ${owner.tenant},
        ${owner.ownerType}, ${owner.ownerId}, ${due}::bigint
      FROM generate_series(1, ${count}::int) AS n`.execute(db())
  }

  const dueOf = async (id: string) => {
    const row = await db()
      .selectFrom("akter.outbox")
      .select(["due_at_ms"])
      .where("id", "=", id)
      .executeTakeFirst()
    return row?.due_at_ms
  }

  it("claims only due timers of the given buckets, earliest first, up to the limit, each moved a recovery interval ahead", async () => {
    const mine = freshOwner()
    const other = freshOwner()
    await arm(mine, "later-due", -1_000)
    await arm(mine, "earliest", -5_000)
    await arm(mine, "not-due", 3_600_000)
    await arm(other, "other-bucket", -10_000)

    const before = await now()
    const first = await claim([mine.bucket], [], 1)
    const after = await now()
    expect(first.map((row) => row.id)).toEqual(["earliest"])
    expect(first[0]).toMatchObject({
      kind: "timer",
      bucket: mine.bucket,
      ownerId: mine.ownerId,
      routingKey: mine.routingKey,
      attempts: 1,
      wanted: false,
      payload: null,
    })
    expect(first[0]!.claimedDueAtMs).toBeGreaterThanOrEqual(before + RECOVERY_MS)
    expect(first[0]!.claimedDueAtMs).toBeLessThanOrEqual(after + RECOVERY_MS)
    expect(await dueOf("earliest")).toBe(first[0]!.claimedDueAtMs)

    expect((await claim([mine.bucket])).map((row) => row.id)).toEqual(["later-due"])
    expect(await claim([mine.bucket])).toEqual([])
    expect(await dueOf("not-due")).toBeGreaterThan(after + 3_000_000)
    expect((await claim([other.bucket])).map((row) => row.id)).toEqual(["other-bucket"])
  })

  it("reads only the rows due by now: timers due later cost a claim nothing, however many", async () => {
    const owner = freshOwner()
    await armMany(owner, "later-", 500, 3_600_000)
    await arm(owner, "due", -1_000)
    const explained = explaining(db() as unknown as Kysely<never>)
    await claimDue(explained.db as never, clock(), [owner.bucket], [], 10, RECOVERY_MS)
    expect(explained.plans).toHaveLength(1)
    // The due row (read once to find it, once to move it ahead), and not the 500 later ones.
    expect(outboxRowsRead(explained.plans[0]!)).toBeLessThan(10)
    expect(await dueOf("due")).toBeGreaterThan((await now()) + RECOVERY_MS / 2)
    expect(await dueOf("later-1")).toBeGreaterThan((await now()) + 3_000_000)
  })

  it("looks up the earliest due time within a horizon, of its buckets' timers wanting no other manifest, reading no later row", async () => {
    const owner = freshOwner()
    const other = freshOwner()
    await armMany(owner, "far-", 500, 3_600_000)
    expect(await nextDue(db(), clock(), [owner.bucket], 60_000)).toBeNull()
    const soon = await arm(owner, "soon", 30_000)
    await arm(owner, "sooner-wanted", 10_000)
    await markWanted(db(), clock(), owner.routingKey, "sooner-wanted", "some-other-manifest")
    const otherDue = await arm(other, "other-bucket", 5_000)
    expect(await nextDue(db(), clock(), [owner.bucket], 60_000)).toBe(soon)
    expect(await nextDue(db(), clock(), [owner.bucket], 20_000)).toBeNull()
    expect(await nextDue(db(), clock(), [owner.bucket, other.bucket], 60_000)).toBe(otherDue)
    expect(await nextDue(db(), clock(), [], 60_000)).toBeNull()
    const overdue = await arm(owner, "overdue", -2_000)
    expect(await nextDue(db(), clock(), [owner.bucket], 60_000)).toBe(overdue)

    const explained = explaining(db() as unknown as Kysely<never>)
    await nextDue(explained.db as never, clock(), [owner.bucket], 60_000)
    expect(explained.plans).toHaveLength(1)
    expect(outboxRowsRead(explained.plans[0]!)).toBeLessThan(10)
  })

  it("claims nothing for no buckets, no manifests or no room", async () => {
    const owner = freshOwner()
    await arm(owner, "idle", -1_000)
    expect(await claim([], [])).toEqual([])
    expect(await claim([owner.bucket], [], 0)).toEqual([])
    // Less than no room (more in flight than the runner's concurrency): nothing, not an error
    // from a negative LIMIT.
    expect(await claim([owner.bucket], [], -1)).toEqual([])
    expect((await claim([owner.bucket], [], 1)).map((row) => row.id)).toEqual(["idle"])
  })

  it("brings a claimed timer back once its recovery interval has passed, counting its attempts", async () => {
    const owner = freshOwner()
    await arm(owner, "abandoned", -1_000)
    expect((await claim([owner.bucket])).map((row) => [row.id, row.attempts])).toEqual([
      ["abandoned", 1],
    ])
    akter.advance(RECOVERY_MS - 5_000)
    expect(await claim([owner.bucket])).toEqual([])
    akter.advance("10 seconds")
    expect((await claim([owner.bucket])).map((row) => [row.id, row.attempts])).toEqual([
      ["abandoned", 2],
    ])
  })

  it("gives a timer that wants a manifest to a runner serving it, wherever its bucket, and not to its bucket's runner", async () => {
    const owner = freshOwner()
    await arm(owner, "wanting", -1_000)
    await markWanted(db(), clock(), owner.routingKey, "wanting", "hash-b")
    expect(await claim([owner.bucket])).toEqual([])
    expect(await claim([], ["hash-a"])).toEqual([])
    const claimed = await claim([], ["hash-a", "hash-b"])
    expect(claimed.map((row) => [row.id, row.wanted, row.bucket])).toEqual([
      ["wanting", true, owner.bucket],
    ])
  })

  it("never hands one timer to two concurrent claims", async () => {
    const owner = freshOwner()
    const ids = Array.from({ length: 24 }, (_, n) => `t-${n}`)
    for (const id of ids) await arm(owner, id, -1_000)
    const claims = await Promise.all([0, 1, 2].map(() => claim([owner.bucket], [], ids.length)))
    const claimed = claims.flatMap((rows) => rows.map((row) => row.id))
    expect(claimed.sort()).toEqual([...ids].sort())
    expect(await claim([owner.bucket], [], ids.length)).toEqual([])
  })

  // One connection in PGlite: no claim can be in flight beside another.
  if (backend === "postgres") {
    it("skips a timer another claim holds locked, instead of waiting for it and claiming it again", async () => {
      const owner = freshOwner()
      await arm(owner, "held", -2_000)
      await arm(owner, "free", -1_000)
      const claimed = await db()
        .transaction()
        .execute(async (tx) => {
          // Another runner's claim, still in flight: its rows are locked until it commits.
          await sql`SELECT id FROM akter.outbox WHERE id = 'held' FOR UPDATE`.execute(tx)
          return Promise.race([
            claim([owner.bucket]),
            sleep(5_000).then(() => "waited for the lock" as const),
          ])
        })
      expect(claimed === "waited for the lock" ? claimed : claimed.map((row) => row.id)).toEqual([
        "free",
      ])
    })
  }

  it("deletes a claimed timer only if nobody re-armed it since the claim", async () => {
    const owner = freshOwner()
    await arm(owner, "done", -2_000)
    await arm(owner, "rearmed", -1_000)
    const [done, rearmed] = (await claim([owner.bucket])) as [ClaimedRow, ClaimedRow]
    expect([done.id, rearmed.id]).toEqual(["done", "rearmed"])
    const rearmedDue = await arm(owner, "rearmed", 120_000)

    for (const row of [done, rearmed]) {
      await composeStatement([deleteClaimedPart(row)], sql`true AS deleted`).execute(db())
    }
    expect(await dueOf("done")).toBeUndefined()
    expect(await dueOf("rearmed")).toBe(rearmedDue)
  })
})
