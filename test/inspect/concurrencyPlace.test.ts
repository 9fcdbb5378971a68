/**
 * Inspecting an execution of a workflow with a concurrency key, on PGlite and Postgres: it shows
 * the group's key path and value, the limit its start manifest declares, how many of the group
 * run (or sleep) and wait, and for a queued execution how many are admitted before it, in the
 * query, the CLI's text and the studio's execution page; an execution of a workflow without a key
 * shows none. On Postgres the real CLI prints the same as
 * text and as JSON. Expected places are written out from the start order, not computed.
 */
import { execFile } from "node:child_process"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { concurrencyText, renderExecutionDetail } from "../../cli/renderInspection.js"
import { internalsOf } from "../../runtime/akter.js"
import { showExecution } from "../../runtime/inspect/executionQueries.js"
import {
  implementWorkflow,
  makeOwnerClient,
  startRunner,
  type Runner,
} from "../../runtime/index.js"
import { runUntilIdle, testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createPostgresDatabase, describeEachBackend } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"
import { studioHandler } from "../../studio/index.js"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

const MANIFEST = `
akter: 1
owner: Desk
workflows:
  ticket:
    input: { customerId: string }
    concurrency: { key: customerId, limit: 1 }
    steps:
      rest: { kind: sleep, duration: 1m }
  note:
    steps:
      rest: { kind: sleep, duration: 1m }
`

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("inspect shows an execution's concurrency group", (backend) => {
  let akter: TestAkter
  let runner: Runner
  let databaseUrl: string | undefined
  let drop: (() => Promise<void>) | undefined
  const ids: Record<string, string> = {}

  beforeAll(async () => {
    const registration = await registrationFromYaml(MANIFEST, "manifests/desk.yaml")
    if (backend === "postgres") {
      const database = await createPostgresDatabase()
      databaseUrl = database.url
      drop = database.drop
    }
    akter = await testAkter(databaseUrl === undefined ? {} : { databaseUrl })
    const rest = (_: unknown, wf: UntypedSteps) => Effect.asVoid(step(wf.rest()))
    runner = await startRunner({
      akter,
      pollMs: 20,
      workflows: [
        implementWorkflow(registration, "ticket", { activities: {}, body: rest }),
        implementWorkflow(registration, "note", { activities: {}, body: rest }),
      ],
    })
    const client = makeOwnerClient<AnyClient>(akter, registration)
    for (const name of ["c3-first", "c3-second", "c3-third"]) {
      ids[name] = (await client.ticket.start(name, { customerId: "c3" })).executionId
    }
    ids["c4-only"] = (await client.ticket.start("c4-only", { customerId: "c4" })).executionId
    ids["note"] = (await client.note.start("n-1", undefined)).executionId
    await runUntilIdle(akter, runner)
  }, 120_000)

  afterAll(async () => {
    await runner?.close()
    await akter?.close()
    await drop?.()
  })

  const show = async (name: string) => {
    const detail = await showExecution(internalsOf(akter).storage.db, ids[name]!)
    if (detail === undefined) throw new Error(`${name} is not in the database`)
    return detail
  }

  it("shows the key, the limit and the group's counts of an admitted execution", async () => {
    const first = await show("c3-first")
    expect(first.status).toBe("suspended")
    expect(first.concurrency).toEqual({
      key: "customerId",
      value: "c3",
      limit: 1,
      admitted: 1,
      queued: 2,
      queuedAhead: undefined,
    })
    expect(renderExecutionDetail(first, akter.now())).toMatch(
      /^concurrency +customerId=c3, limit 1: 1 running or suspended, 2 queued$/m,
    )
    expect((await show("c4-only")).concurrency).toEqual({
      key: "customerId",
      value: "c4",
      limit: 1,
      admitted: 1,
      queued: 0,
      queuedAhead: undefined,
    })
  })

  it("shows how many of its group a queued execution waits behind", async () => {
    const second = await show("c3-second")
    const third = await show("c3-third")
    expect([second.status, third.status]).toEqual(["queued", "queued"])
    expect(second.concurrency?.queuedAhead).toBe(0)
    expect(third.concurrency?.queuedAhead).toBe(1)
    expect(concurrencyText(third.concurrency!)).toBe(
      "customerId=c3, limit 1: queued, 1 ahead of it; 1 running or suspended, 2 queued",
    )
  })

  it("the studio's execution page shows the same group and place", async () => {
    const studio = studioHandler(akter, { readOnly: true })
    try {
      const page = await (
        await studio(new Request(`http://studio.test/executions/${ids["c3-third"]}`))
      ).text()
      const field = /data-field="concurrency">([\s\S]*?)<\/dd>/.exec(page)?.[1] ?? ""
      expect(
        field
          .replace(/<[^>]*>/g, "")
          .replace(/\s+/g, " ")
          .trim(),
      ).toBe("customerId=c3, limit 1: queued, 1 ahead of it; 1 running or suspended, 2 queued")
    } finally {
      await studio.close()
    }
  })

  it("shows no group for a workflow without a concurrency key", async () => {
    const note = await show("note")
    expect(note.concurrency).toBeUndefined()
    expect(renderExecutionDetail(note, akter.now())).not.toContain("concurrency")
  })

  it("moves a queued execution up when a finish admits the one before it", async () => {
    akter.advance("1 minute")
    await runUntilIdle(akter, runner)
    const first = await show("c3-first")
    const second = await show("c3-second")
    const third = await show("c3-third")
    expect([first.status, second.status, third.status]).toEqual(["finished", "suspended", "queued"])
    expect(third.concurrency).toMatchObject({ admitted: 1, queued: 1, queuedAhead: 0 })
  })

  if (backend === "postgres") {
    it("the CLI prints the group as text and JSON", { timeout: 120_000 }, async () => {
      const cli = (...args: string[]) =>
        promisify(execFile)(
          process.execPath,
          [path.join(ROOT, "bin/akter.js"), "inspect", ...args, "--database-url", databaseUrl!],
          { cwd: ROOT },
        )
      const json = JSON.parse((await cli(ids["c3-third"]!, "--format", "json")).stdout) as {
        concurrency: unknown
      }
      expect(json.concurrency).toEqual({
        key: "customerId",
        value: "c3",
        limit: 1,
        admitted: 1,
        queued: 1,
        queuedAhead: 0,
      })
      expect((await cli(ids["c3-third"]!)).stdout).toMatch(
        /^concurrency +customerId=c3, limit 1: queued, 0 ahead of it; 1 running or suspended, 1 queued$/m,
      )
    })
  }
})
