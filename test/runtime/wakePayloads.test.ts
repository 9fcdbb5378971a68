/**
 * Who a wake is for (outbox/notifications.ts), on Postgres: a runner polls on an `akter_wake`
 * carrying a bucket it serves, or `*`, and on nothing else; an emit's wake carries its owner's
 * bucket, or `*` when a timer it poked wants a manifest (a runner outside the bucket may be the one
 * to take it). The NOTIFY is heard by a plain LISTEN session on the test's own database.
 */
import { randomUUID } from "node:crypto"
import pg from "pg"
import { sql } from "kysely"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { implementWorkflow, makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { ANY_BUCKET, WAKE_CHANNEL, wakeIsFor } from "../../runtime/outbox/notifications.js"
import { armTimerPart, markWanted } from "../../runtime/outbox/outboxStore.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import { composeStatement } from "../../runtime/storage/statementParts.js"
import { testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { waitUntil } from "../support/waitUntil.js"
import { waitUntilSuspended } from "../support/executionStatus.js"
import { withRunner } from "../support/withRunner.js"

const registration = await registrationFromYaml(
  `
akter: 1
owner: Listener
events:
  Ping: { n: integer }
workflows:
  listen:
    output: { n: integer }
    steps:
      ping: { kind: wait, event: Ping }
`,
  "manifests/listener.yaml",
)

it("a wake is for the runner serving its bucket, or for every runner when it says `*`", () => {
  const serves = (bucket: number) => bucket === 7
  expect(wakeIsFor("7", serves)).toBe(true)
  expect(wakeIsFor("8", serves)).toBe(false)
  expect(wakeIsFor(ANY_BUCKET, serves)).toBe(true)
  // A payload this version does not know wakes the runner rather than lose work.
  expect(wakeIsFor("bucket-7", serves)).toBe(true)
})

describePostgres("the payload of an emit's wake", () => {
  let akter: TestAkter
  let drop: () => Promise<void>
  let listener: pg.Client
  const heard: string[] = []

  const listen = implementWorkflow(registration, "listen", {
    activities: {},
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (_input: unknown, wf: any) =>
      Effect.gen(function* () {
        return (yield* wf.ping() as Effect.Effect<{ n: number }>) as { n: number }
      }),
  })

  beforeAll(async () => {
    const database = await createPostgresDatabase()
    drop = database.drop
    akter = await testAkter({ databaseUrl: database.url })
    listener = new pg.Client({ connectionString: database.url })
    await listener.connect()
    listener.on("notification", (message) => heard.push(message.payload ?? ""))
    await listener.query(`LISTEN ${WAKE_CHANNEL}`)
  })

  afterAll(async () => {
    await listener?.end()
    await akter?.close()
    await drop?.()
  })

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = () => makeOwnerClient<any>(akter, registration)
  const db = () => internalsOf(akter).storage.db

  /** An execution parked on its wait, with no runner left in this process to be handed the emit. */
  const parkedExecution = async () => {
    const owner = `o-${randomUUID().slice(0, 8)}`
    const placement = placeOwner({ tenant: "default", ownerType: "Listener", ownerId: owner })
    let executionId = ""
    await withRunner({ akter, workflows: [listen] }, async () => {
      const run = await client().listen.start(owner)
      executionId = run.executionId as string
      await waitUntilSuspended(db(), executionId, "the wait is written")
    })
    return { owner, placement, executionId }
  }

  const heardAfterEmit = async (owner: string, n: number) => {
    heard.length = 0
    await client().emit(owner, "Ping", { n })
    await waitUntil("the wake is heard", async () => heard.length > 0)
    return [...heard]
  }

  it("carries the owner's bucket when the timers it poked want no manifest", async () => {
    const { owner, placement } = await parkedExecution()
    expect(await heardAfterEmit(owner, 1)).toEqual([String(placement.bucket)])
  })

  it("carries `*` when a timer it poked wants a manifest, so the runner serving it polls wherever its bucket is", async () => {
    const { owner, placement, executionId } = await parkedExecution()
    const internals = internalsOf(akter)
    // The execution's timer, as a runner that could not replay it left it: wanting another manifest.
    await composeStatement(
      [armTimerPart(internals.clock, placement, executionId, "now", { when: sql`true` })],
      sql`true AS armed`,
    ).execute(db())
    await markWanted(db(), internals.clock, placement.routingKey, executionId, "another-manifest")
    expect(await heardAfterEmit(owner, 2)).toEqual([ANY_BUCKET])
  })
})
