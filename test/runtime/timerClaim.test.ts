/**
 * The timer claim, statement by statement, on PGlite and on Postgres: a runner claims only due
 * timers of its buckets (or wanting a manifest it serves), earliest first, up to its limit; the
 * claim moves each a recovery interval ahead so no one else takes it, and it comes due again if
 * its claimer never finishes; concurrent claims never take one timer twice, and a claim skips a
 * timer another claim holds rather than waiting for it; a claimed timer is deleted only if nobody
 * re-armed it since. Times are the test clock's, far apart.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import {
  armTimerPart,
  claimDue,
  deleteClaimedPart,
  markWanted,
  type ClaimedRow,
} from "../../runtime/outbox/outboxStore.js"
import { placeOwner, type OwnerPlacement } from "../../runtime/owners/routing.js"
import { composeStatement } from "../../runtime/storage/statementParts.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { sleep } from "../support/waitUntil.js"

const RECOVERY_MS = 60_000

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
