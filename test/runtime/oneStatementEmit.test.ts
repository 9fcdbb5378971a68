/**
 * The emit in one statement (client/emitEvent.ts), on PGlite and on Postgres: an emit is one
 * statement and one commit that appends the event, records its receipt and pokes the timers of the
 * owner's waits; a retry of its command id appends nothing and answers the first's sequence. On
 * Postgres, a wait registered between the emit's snapshot and its lock on the owner — which that
 * snapshot lacks — is still woken: the registration changed the owner row (owners/fence.ts
 * `touchingFence`), so the emit saw a new version and went as its transaction instead.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { implementWorkflow, makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { sleep, waitUntil } from "../support/waitUntil.js"
import { waitUntilSuspended } from "../support/executionStatus.js"
import { withRunner } from "../support/withRunner.js"

const registration = await registrationFromYaml(
  `
akter: 1
owner: Door
events:
  Knock: { n: integer }
workflows:
  answer:
    output: { n: integer }
    steps:
      ready: { kind: activity, output: { ok: boolean } }
      knock: { kind: wait, event: Knock }
`,
  "manifests/door.yaml",
)

describeEachBackend("an emit in one statement", (backend) => {
  let akter: TestAkter
  /** Resolves the `ready` activity of the execution whose owner is the key. */
  const gates = new Map<string, () => void>()
  const running = new Set<string>()

  const answer = implementWorkflow(registration, "answer", {
    activities: {
      ready: async (context: { ownerId: string }) => {
        running.add(context.ownerId)
        await new Promise<void>((resolve) => {
          const gate = gates.get(context.ownerId)
          if (gate === undefined) resolve()
          else gates.set(context.ownerId, resolve)
        })
        return { ok: true }
      },
    },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (_input: unknown, wf: any) =>
      Effect.gen(function* () {
        yield* wf.ready() as Effect.Effect<unknown>
        return (yield* wf.knock() as Effect.Effect<{ n: number }>) as { n: number }
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

  const eventsOf = async (ownerId: string) =>
    (
      await db()
        .selectFrom("akter.events")
        .select(["sequence", "name"])
        .where("owner_id", "=", ownerId)
        .orderBy("sequence")
        .execute()
    ).map((row) => [Number(row.sequence), row.name])

  /** The pokes of the execution's timer (none: a wait without a timeout leaves no timer). */
  const pokesOf = async (executionId: string) =>
    Number(
      (
        await db()
          .selectFrom("akter.outbox")
          .select("pokes")
          .where("id", "=", executionId)
          .executeTakeFirst()
      )?.pokes ?? 0,
    )

  it("appends, records the receipt and pokes the waiting timer in one statement and one commit", async () => {
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    let executionId = ""
    // Parked on its wait, with no runner left here to be handed the emit's poke.
    await withRunner({ akter, workflows: [answer] }, async () => {
      executionId = (await client().answer.start(ownerId)).executionId as string
      await waitUntilSuspended(db(), executionId, "the wait is written")
    })
    const pokesBefore = await pokesOf(executionId)
    const { counters } = internals().storage
    const before = { statements: counters.statements, commits: counters.commits }
    const receipt = await client().emit(ownerId, "Knock", { n: 1 }, { commandId: "knock-1" })
    expect({
      statements: counters.statements - before.statements,
      commits: counters.commits - before.commits,
    }).toEqual({ statements: 1, commits: 1 })
    expect(receipt.sequence).toBe(1)
    expect(await eventsOf(ownerId)).toEqual([[1, "Knock"]])
    expect(await pokesOf(executionId)).toBe(pokesBefore + 1)
    const stored = await db()
      .selectFrom("akter.receipts")
      .select(["kind", "outcome"])
      .where("owner_id", "=", ownerId)
      .where("command_id", "=", "knock-1")
      .executeTakeFirstOrThrow()
    expect(stored).toEqual({ kind: "emit", outcome: "1" })
    // The retry finds the receipt: the statement aborts, and the transaction answers the first's.
    const retried = await client().emit(ownerId, "Knock", { n: 1 }, { commandId: "knock-1" })
    expect(retried.sequence).toBe(1)
    expect(await eventsOf(ownerId)).toEqual([[1, "Knock"]])
    expect(await pokesOf(executionId)).toBe(pokesBefore + 1)
    const next = await client().emit(ownerId, "Knock", { n: 2 })
    expect(next.sequence).toBe(2)
    expect(await eventsOf(ownerId)).toEqual([
      [1, "Knock"],
      [2, "Knock"],
    ])
  })

  // One connection in PGlite: no commit can land between an emit's snapshot and its lock.
  if (backend === "postgres") {
    it("wakes a wait registered between its snapshot and its lock", async () => {
      const ownerId = `o-${randomUUID().slice(0, 8)}`
      const { rows } = await sql<{ definition: string }>`
        SELECT pg_get_functiondef('akter.now_ms(bigint)'::regprocedure) AS definition`.execute(db())
      const original = rows[0]!.definition
      await sql`CREATE TABLE IF NOT EXISTS public.emit_pause (held boolean)`.execute(db())
      // While `emit_pause` has a row, the clock takes half a second: a statement that reads it
      // before locking the owner (the emit's sequence reservation does) has its snapshot taken
      // well before its lock.
      await sql
        .raw(
          `CREATE OR REPLACE FUNCTION akter.now_ms(offset_ms bigint) RETURNS bigint
            LANGUAGE plpgsql VOLATILE AS $$
            BEGIN
              IF EXISTS (SELECT 1 FROM public.emit_pause) THEN PERFORM pg_sleep(0.5); END IF;
              RETURN (extract(epoch FROM clock_timestamp()) * 1000)::bigint + offset_ms;
            END $$`,
        )
        .execute(db())
      try {
        await withRunner({ akter, workflows: [answer] }, async () => {
          gates.set(ownerId, () => {})
          const run = await client().answer.start(ownerId)
          await waitUntil("the activity runs", async () => running.has(ownerId))
          await sql`INSERT INTO public.emit_pause VALUES (true)`.execute(db())
          const emitted = client().emit(ownerId, "Knock", { n: 7 })
          await sleep(150)
          await sql`DELETE FROM public.emit_pause`.execute(db())
          // The pass goes on to register its wait and finds no event: the emit has not committed.
          gates.get(ownerId)!()
          await waitUntil("the wait is registered", async () => {
            const wait = await db()
              .selectFrom("akter.steps")
              .select("step")
              .where("execution_id", "=", run.executionId as string)
              .where("kind", "=", "wait")
              .executeTakeFirst()
            return wait !== undefined
          })
          const started = performance.now()
          expect((await emitted).sequence).toBe(1)
          // Woken by the emit's poke at once. Missed, it would wait for an event already read past.
          const result = await Promise.race([
            run.result(),
            sleep(5_000).then(() => "not woken within 5 s"),
          ])
          expect(result).toEqual({ _tag: "Success", value: { n: 7 } })
          expect(performance.now() - started).toBeLessThan(5_000)
        })
      } finally {
        await sql`DELETE FROM public.emit_pause`.execute(db())
        await sql.raw(original).execute(db())
      }
    })
  }
})
