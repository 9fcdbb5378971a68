/**
 * The snapshot a claim reads (engine/executionStore.ts `claimedSnapshotColumn`), on PGlite and on
 * Postgres: the claim of a timer returns what a pass replays from — the execution's row, its steps
 * and its pokes — equal to what a separate read returns, so the runner's pass needs no read of its
 * own; nothing for a timer whose execution is gone. On Postgres, a row another commit changed
 * between the claim's snapshot and its lock (a poke while the claim was under way) is claimed with
 * nothing attached, and its pass reads afresh, instead of replaying from a snapshot that misses
 * that commit.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { implementWorkflow, makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import {
  claimedSnapshotColumn,
  readExecutionSnapshots,
  snapshotFromJson,
} from "../../runtime/engine/executionStore.js"
import { armTimerPart, claimDue, makeDueNow } from "../../runtime/outbox/outboxStore.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import { composeStatement } from "../../runtime/storage/statementParts.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { sleep } from "../support/waitUntil.js"
import { waitUntilSuspended } from "../support/executionStatus.js"
import { withRunner } from "../support/withRunner.js"

const registration = await registrationFromYaml(
  `
akter: 1
owner: Sleeper
workflows:
  doze:
    input: { note: string }
    output: { done: boolean }
    steps:
      first: { kind: activity, output: { bytes: string } }
      second: { kind: activity, output: { n: integer } }
      nap: { kind: sleep }
`,
  "manifests/sleeper.yaml",
)

const RECOVERY_MS = 60_000

describeEachBackend("the snapshot a claim reads", (backend) => {
  let akter: TestAkter

  const doze = implementWorkflow(registration, "doze", {
    activities: {
      first: async () => ({ bytes: "é✓".repeat(300) }),
      second: async () => ({ n: 42 }),
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (_input: { note: string }, wf: any) =>
      Effect.gen(function* () {
        yield* wf.first() as Effect.Effect<unknown>
        yield* wf.second() as Effect.Effect<unknown>
        yield* wf.nap(3_600_000) as Effect.Effect<void>
        return { done: true }
      }),
  })

  beforeAll(async () => {
    akter = await openTestAkter(backend)
  })

  afterAll(() => akter?.close())

  const internals = () => internalsOf(akter)
  const db = () => internals().storage.db
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = () => makeOwnerClient<any>(akter, registration)

  /** An execution parked on its hour-long sleep, its timer made due now, no runner left. */
  const dueExecution = async () => {
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    const owner = placeOwner({ tenant: "default", ownerType: "Sleeper", ownerId })
    let executionId = ""
    await withRunner({ akter, workflows: [doze] }, async () => {
      const run = await client().doze.start(ownerId, { note: "x".repeat(50) })
      executionId = run.executionId as string
      await waitUntilSuspended(db(), executionId, "the sleep is written")
    })
    await makeDueNow(db(), internals().clock, [{ routingKey: owner.routingKey, executionId }])
    return { owner, executionId }
  }

  const claim = (bucket: number) =>
    claimDue(db(), internals().clock, [bucket], [], 10, RECOVERY_MS, claimedSnapshotColumn)

  it("returns with each claimed timer what a separate read of its execution returns", async () => {
    const { owner, executionId } = await dueExecution()
    const [read] = await readExecutionSnapshots(db(), [
      { routingKey: owner.routingKey, executionId },
    ])
    const claimed = (await claim(owner.bucket)).filter((row) => row.id === executionId)
    expect(claimed).toHaveLength(1)
    expect(claimed[0]!.attached).toBeDefined()
    const snapshot = snapshotFromJson(claimed[0]!.attached)
    expect(read!.steps.map((step) => step.step)).toEqual(
      expect.arrayContaining(["first", "second", "nap"]),
    )
    expect(snapshot).toEqual(read)
  })

  it("attaches no snapshot for a timer whose execution is gone", async () => {
    const owner = placeOwner({
      tenant: "default",
      ownerType: "Sleeper",
      ownerId: `o-${randomUUID().slice(0, 8)}`,
    })
    await composeStatement(
      [armTimerPart(internals().clock, owner, "no-such-execution", "now", { when: sql`true` })],
      sql`true AS armed`,
    ).execute(db())
    const claimed = (await claim(owner.bucket)).filter((row) => row.id === "no-such-execution")
    expect(claimed).toHaveLength(1)
    expect(snapshotFromJson(claimed[0]!.attached)).toBeNull()
  })

  // One connection in PGlite: no commit can land while a claim is under way.
  if (backend === "postgres") {
    it("attaches nothing to a row a commit changed while the claim was under way", async () => {
      const { owner, executionId } = await dueExecution()
      const { rows } = await sql<{ definition: string }>`
        SELECT pg_get_functiondef('akter.now_ms(bigint)'::regprocedure) AS definition`.execute(db())
      const original = rows[0]!.definition
      const pokesOf = async () =>
        Number(
          (
            await db()
              .selectFrom("akter.outbox")
              .select("pokes")
              .where("id", "=", executionId)
              .executeTakeFirstOrThrow()
          ).pokes,
        )
      const pokesBefore = await pokesOf()
      // The claim's clock now takes a while: its snapshot is taken before, its lock after.
      await sql
        .raw(
          `CREATE OR REPLACE FUNCTION akter.now_ms(offset_ms bigint) RETURNS bigint
            LANGUAGE sql VOLATILE AS $$
              SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint + offset_ms
                + 0 * (SELECT count(*) FROM pg_sleep(0.5)) $$`,
        )
        .execute(db())
      try {
        const claiming = claim(owner.bucket)
        await sleep(150)
        // An emit's poke, committed while the claim sleeps: its snapshot does not have it.
        await sql`UPDATE akter.outbox SET pokes = pokes + 1 WHERE id = ${executionId}`.execute(db())
        const claimed = (await claiming).filter((row) => row.id === executionId)
        expect(claimed).toHaveLength(1)
        expect(claimed[0]!.pokes).toBe(pokesBefore + 1)
        expect(claimed[0]!.attached).toBeUndefined()
      } finally {
        await sql.raw(original).execute(db())
      }
      // The guard is what kept it out: the same claim with nothing in between attaches.
      await makeDueNow(db(), internals().clock, [{ routingKey: owner.routingKey, executionId }])
      const again = (await claim(owner.bucket)).filter((row) => row.id === executionId)
      expect(snapshotFromJson(again[0]!.attached)?.execution.pokes).toBe(pokesBefore + 1)
    })
  }
})
