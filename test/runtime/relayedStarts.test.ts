/**
 * Start steps and the relay of their staged starts, on PGlite and on Postgres. A pass's concurrent
 * start steps are held and travel in one statement (engine/passWriter.ts `holdWrite`), also when
 * the result's write follows at once. The relay of a staged start (runner/startRelay.ts): a child whose staged start a runner of this process relays runs in that
 * runner's pass, the start and the staged row's delete in the pass's first write — no statement of
 * the relay's own, no claim of the child's timer (a trigger records every claim). A child whose
 * parent had already ended, and whose policy is `interrupt`, starts interrupted: the pass that took
 * it writes nothing (the fence of a folded start requires the execution running), and a claim
 * records the interrupt without running any step.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { implementWorkflow, makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { defaultCaller } from "../../runtime/model/caller.js"
import { encodeExecutionId } from "../../runtime/model/executionId.js"
import { stagedStarts } from "../../runtime/outbox/outboxStore.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import { COMPRESS_FROM_BYTES, encodeJson, FORMAT_JSON } from "../../runtime/storage/codec.js"
import { composeStatement } from "../../runtime/storage/statementParts.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { claimsOf, installClaimAudit } from "../support/claimAudit.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { waitUntil } from "../support/waitUntil.js"
import { watchSentStatements } from "../support/sentStatements.js"
import { withRunner } from "../support/withRunner.js"
import { type UntypedSteps as Wf } from "../support/untypedSteps.js"

const registration = await registrationFromYaml(
  `
akter: 1
owner: Relay
workflows:
  parent:
    input: { child: string }
    output: { n: integer }
    steps:
      spawn: { kind: start, workflow: child, await: true }
  child:
    output: { n: integer }
    steps:
      work: { kind: activity, output: { n: integer } }
  fan:
    input: { child: string }
    output: { n: integer }
    steps:
      a: { kind: start, workflow: child, await: true }
      b: { kind: start, workflow: child, await: true }
      c: { kind: start, workflow: child, await: true }
  launch:
    input: { child: string }
    steps:
      off: { kind: start, workflow: child }
`,
  "manifests/relay.yaml",
)

/** Runs of the child's activity, by owner id. */
const worked = new Map<string, number>()

const workflows = [
  implementWorkflow(registration, "parent", {
    activities: {},
    body: ((input: { child: string }, wf: Wf) => wf.spawn(input.child)) as never,
  }),
  implementWorkflow(registration, "child", {
    activities: {
      work: (ctx: { ownerId: string }) => {
        worked.set(ctx.ownerId, (worked.get(ctx.ownerId) ?? 0) + 1)
        return Promise.resolve({ n: 7 })
      },
    },
    body: ((_: unknown, wf: Wf) => wf.work()) as never,
  }),
  implementWorkflow(registration, "fan", {
    activities: {},
    body: ((input: { child: string }, wf: Wf) =>
      Effect.gen(function* () {
        const results = (yield* Effect.all(
          ["a", "b", "c"].map(
            (step) => wf[step]!(`${input.child}-${step}`) as Effect.Effect<unknown>,
          ),
          { concurrency: "unbounded" },
        )) as { n: number }[]
        return { n: results.reduce((sum, result) => sum + result.n, 0) }
      })) as never,
  }),
  implementWorkflow(registration, "launch", {
    activities: {},
    // The start is the body's last step: the result's write follows it at once.
    body: ((input: { child: string }, wf: Wf) => wf.off(input.child)) as never,
  }),
]

describeEachBackend("a staged start relayed into a pass", (backend) => {
  let akter: TestAkter

  /** Statement texts sent while `recording`; Postgres only (PGlite sends none through pg). */
  const sent: string[] = []
  let recording = false
  let stopWatching = () => {}

  beforeAll(async () => {
    // Before the handle opens its pool: its clients bind `query` when they connect.
    stopWatching = watchSentStatements(({ text }) => {
      if (recording) sent.push(text)
    })
    akter = await openTestAkter(backend)
    await installClaimAudit(db())
    await sql
      .raw(
        `CREATE TABLE IF NOT EXISTS relay_staged (id text NOT NULL, tx bigint NOT NULL,
          format int NOT NULL, bytes int NOT NULL);
        CREATE OR REPLACE FUNCTION relay_staged() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN INSERT INTO relay_staged
            VALUES (NEW.id, txid_current(), get_byte(NEW.payload, 0), length(NEW.payload));
          RETURN NEW; END $$;
        CREATE OR REPLACE TRIGGER relay_staged AFTER INSERT ON akter.outbox FOR EACH ROW
          WHEN (NEW.kind = 'start') EXECUTE FUNCTION relay_staged();`,
      )
      .execute(db())
  })

  afterAll(async () => {
    stopWatching()
    await akter?.close()
  })

  const internals = () => internalsOf(akter)
  const db = () => internals().storage.db
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = () => makeOwnerClient<any>(akter, registration)
  const rowOf = (executionId: string) =>
    db()
      .selectFrom("akter.executions")
      .select(["status", "interrupt", "outcome", "parent_execution_id"])
      .where("execution_id", "=", executionId)
      .executeTakeFirst()
  const outboxOf = (id: string) =>
    db().selectFrom("akter.outbox").select(["kind", "id"]).where("id", "=", id).execute()

  it("runs the child in the relaying runner's pass: its timer never claimed, the staged row gone", async () => {
    const child = `c-${randomUUID().slice(0, 8)}`
    await withRunner({ akter, workflows }, async () => {
      const run = await client().parent.start(`p-${randomUUID().slice(0, 8)}`, { child })
      expect(await run.result({ timeout: "20 seconds" })).toEqual({
        _tag: "Success",
        value: { n: 7 },
      })
      const childId = (
        await db()
          .selectFrom("akter.executions")
          .select("execution_id")
          .where("owner_id", "=", child)
          .executeTakeFirstOrThrow()
      ).execution_id
      expect(await rowOf(childId)).toMatchObject({
        status: "finished",
        outcome: "succeeded",
        parent_execution_id: run.executionId,
      })
      // The staged row (the parent's outbox, kind `start`) was claimed once, to be relayed; the
      // child's timer, armed by its folded start, never.
      expect(await claimsOf(db(), childId)).toBe(1)
      expect(await outboxOf(childId)).toEqual([])
      expect(worked.get(child)).toBe(1)
    })
  })

  it("takes no step of a child whose parent had ended: the child starts interrupted and a claim records it", async () => {
    const child = `c-${randomUUID().slice(0, 8)}`
    const parentOwner = `p-${randomUUID().slice(0, 8)}`
    // The parent, finished: its own start step ran (and its child with it), so it has ended.
    let parentId = ""
    await withRunner({ akter, workflows }, async () => {
      const run = await client().parent.start(parentOwner, { child: `${child}-first` })
      parentId = run.executionId as string
      await run.result({ timeout: "20 seconds" })
    })
    // A start staged by that parent as its `spawn` step would, relayed only now that it has ended.
    const { clock } = internals()
    const placement = placeOwner({ tenant: "default", ownerType: "Relay", ownerId: parentOwner })
    const key = "late"
    const childId = encodeExecutionId({
      tenant: "default",
      ownerType: "Relay",
      ownerId: child,
      workflow: "child",
      key,
    })
    const payload = encodeJson({
      executionId: childId,
      ownerType: "Relay",
      ownerId: child,
      workflow: "child",
      key,
      input: null,
      caller: defaultCaller,
      parent: {
        routingKey: placement.routingKey,
        executionId: parentId,
        step: "spawn",
        awaits: true,
        close: "interrupt",
      },
    })
    // Staged as a start step stages it, under a fence that always holds.
    await composeStatement(
      [
        { name: "fence", sql: sql`SELECT 1 AS held` },
        stagedStarts.part(clock, { owner: placement, executionId: parentId }, [
          { executionId: childId, payload },
        ]),
      ],
      sql`true AS staged`,
    ).execute(db())
    await withRunner({ akter, workflows }, async () => {
      await waitUntil(
        "the child is finished",
        async () => (await rowOf(childId))?.status === "finished",
      )
    })
    expect(await rowOf(childId)).toMatchObject({
      status: "finished",
      interrupt: true,
      outcome: "interrupted",
    })
    expect(worked.get(child)).toBeUndefined()
    const steps = await db()
      .selectFrom("akter.steps")
      .select("step")
      .where("execution_id", "=", childId)
      .execute()
    expect(steps).toEqual([])
    expect(await outboxOf(childId)).toEqual([])
  })

  it("sends a pass's concurrent start steps in one statement, one insert into each table", async () => {
    const child = `c-${randomUUID().slice(0, 8)}`
    sent.length = 0
    recording = true
    try {
      await withRunner({ akter, workflows }, async () => {
        const run = await client().fan.start(`p-${randomUUID().slice(0, 8)}`, { child })
        expect(await run.result({ timeout: "20 seconds" })).toEqual({
          _tag: "Success",
          value: { n: 21 },
        })
      })
    } finally {
      recording = false
    }
    if (backend === "postgres") {
      // The held rows of the three steps go as one part per table, not a part per step.
      const staging = sent.filter((text) => text.includes("'start'") && text.includes("payload"))
      expect(staging).toHaveLength(1)
      // Each insert's text up to its RETURNING; the parent's own start adds its timer and markers.
      const inserts = (table: string, kind: string) =>
        staging[0]!
          .split(`INSERT INTO akter.${table} `)
          .slice(1)
          .filter((insert) => insert.split("RETURNING")[0]!.includes(kind)).length
      expect([inserts("outbox", "'start'"), inserts("steps", "child_id")]).toEqual([1, 1])
    }
    expect(["a", "b", "c"].map((step) => worked.get(`${child}-${step}`))).toEqual([1, 1, 1])
    // A trigger recorded the transaction of each staged start: one, for the three.
    const { rows } = await sql<{ tx: string; format: number; bytes: number }>`
      SELECT s.tx::text AS tx, s.format, s.bytes FROM relay_staged s
        JOIN akter.executions e ON e.execution_id = s.id
      WHERE e.owner_id IN (${sql.join(["a", "b", "c"].map((step) => `${child}-${step}`))})`.execute(
      db(),
    )
    expect(rows).toHaveLength(3)
    expect(new Set(rows.map((row) => row.tx)).size).toBe(1)
    // Each payload, though longer than codec.ts compresses from, is plain JSON: it lives until its
    // relay, so compressing it would only cost the parent's pass time.
    for (const row of rows) {
      expect(row.format).toBe(FORMAT_JSON)
      expect(row.bytes).toBeGreaterThan(COMPRESS_FROM_BYTES)
    }
  })

  it("records a start that is the body's last step before its result", async () => {
    const child = `c-${randomUUID().slice(0, 8)}`
    await withRunner({ akter, workflows }, async () => {
      const run = await client().launch.start(`p-${randomUUID().slice(0, 8)}`, { child })
      expect(await run.result({ timeout: "20 seconds" })).toMatchObject({ _tag: "Success" })
      await waitUntil("the child ran", async () => worked.get(child) === 1)
      const steps = await db()
        .selectFrom("akter.steps")
        .select("step")
        .where("execution_id", "=", run.executionId as string)
        .execute()
      expect(steps).toEqual([])
      expect(await outboxOf(run.executionId as string)).toEqual([])
    })
  })
})
