/**
 * Damaged storage: garbage written with SQL into a settled step's exit, an execution's input, an
 * event payload or a result is reported as a defect of that one execution — it finishes with a
 * `Defect` result that names what was unreadable (what `akter inspect` shows) — while the runner
 * keeps running and other executions finish as usual.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  implementWorkflow,
  makeOwnerClient,
  startRunner,
  type Runner,
} from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import { showExecution } from "../../runtime/inspect/executionQueries.js"
import { renderExecutionDetail } from "../../cli/renderInspection.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Wf = any

const CRATE_FILE = "test/fixtures/hostile/crate.yaml"

/** Bytes no akter format writes: an unknown format tag, a broken brotli stream, JSON of no exit. */
const GARBAGE = {
  unknownFormat: Buffer.from([0x99, 0x01, 0x02]),
  brokenBrotli: Buffer.from([0x01, 0xde, 0xad, 0xbe, 0xef]),
  notJson: Buffer.concat([Buffer.of(0x00), Buffer.from("{not json")]),
  notAnExit: Buffer.concat([Buffer.of(0x00), Buffer.from('{"_tag":"Sideways","value":1}')]),
  empty: Buffer.alloc(0),
}

describeEachBackend("corrupted storage", (backend) => {
  let crate: OwnerRegistration
  let akter: TestAkter
  let runner: Runner
  let client: AnyClient
  /** A runner of the suite's workflows, as the suite starts one. */
  let startSuiteRunner: () => Promise<Runner>

  beforeAll(async () => {
    crate = await registrationFromYaml(
      readFileSync(new URL("../fixtures/hostile/crate.yaml", import.meta.url), "utf8"),
      CRATE_FILE,
    )
    const workflows = [
      implementWorkflow(crate, "stash", {
        activities: { keep: ({ note }: { note: string }) => Promise.resolve({ note }) },
        body: ((input: { note: string }, wf: Wf) =>
          Effect.gen(function* () {
            const kept = yield* wf.keep({ note: input.note })
            yield* wf.nap()
            return { note: kept.note }
          })) as never,
      }),
      implementWorkflow(crate, "heed", {
        activities: {},
        body: ((_: undefined, wf: Wf) =>
          Effect.map(wf.heard(), (note: { text: string }) => ({ text: note.text }))) as never,
      }),
    ]
    akter = await openTestAkter(backend)
    startSuiteRunner = () => startRunner({ akter, workflows, pollMs: 20, recoveryMs: 1_000 })
    runner = await startSuiteRunner()
    client = makeOwnerClient<AnyClient>(akter, crate)
  })

  afterAll(async () => {
    await runner?.close()
    await akter?.close()
  })

  const db = () => internalsOf(akter).storage.db

  /** Starts `stash` for each owner, lets each record `keep` and suspend on `nap`. */
  const stashAll = async (ownerIds: readonly string[]) => {
    const runs = []
    for (const ownerId of ownerIds) runs.push(await client.stash.start(ownerId, { note: ownerId }))
    await runUntilIdle(akter, runner, { timeoutMs: 30_000 })
    for (const run of runs) {
      expect(await run.status()).toEqual({ status: "suspended", interrupting: false })
    }
    return runs
  }

  /** What `akter inspect EXECUTION_ID` prints. */
  const inspected = async (executionId: string) =>
    renderExecutionDetail((await showExecution(db(), executionId))!, akter.now())

  const damageExit = async (executionId: string, bytes: Buffer) => {
    await sql`UPDATE akter.steps SET exit = ${bytes}
      WHERE execution_id = ${executionId} AND step = 'keep'`.execute(db())
  }

  const expectDefect = async (
    run: { result: (o: object) => Promise<unknown> },
    pattern: RegExp,
    timeout = "10 seconds",
  ) => {
    const result = (await run.result({ timeout })) as { _tag: string; message?: string }
    expect(result._tag).toBe("Defect")
    expect(result.message).toMatch(pattern)
  }

  it("finishes an execution whose recorded step exit is unreadable with a Defect naming why; others finish", async () => {
    const [unknownFormat, brokenBrotli, notJson, empty, healthy] = await stashAll([
      "exit-format",
      "exit-brotli",
      "exit-json",
      "exit-empty",
      "exit-healthy",
    ])
    await damageExit(unknownFormat!.executionId, GARBAGE.unknownFormat)
    await damageExit(brokenBrotli!.executionId, GARBAGE.brokenBrotli)
    await damageExit(notJson!.executionId, GARBAGE.notJson)
    await damageExit(empty!.executionId, GARBAGE.empty)
    akter.advance("61 minutes")
    await runUntilIdle(akter, runner, { timeoutMs: 30_000 })
    await expectDefect(unknownFormat!, /stored value is corrupt: unknown format byte 0x99/)
    await expectDefect(brokenBrotli!, /stored value is corrupt: brotli stream does not decompress/)
    await expectDefect(notJson!, /stored value is corrupt: not JSON/)
    await expectDefect(empty!, /stored value is corrupt: empty/)
    expect(await healthy!.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { note: "exit-healthy" },
    })
    const left = await db()
      .selectFrom("akter.executions")
      .select("status")
      .where("owner_id", "like", "exit-%")
      .execute()
    expect(left.map((row) => row.status)).toEqual(Array(5).fill("finished"))
    expect(runner.live).toBe(0)
    expect(await inspected(unknownFormat!.executionId)).toMatch(
      /status\s+finished: defect\n[^]*result\s+Die CorruptStoredValue: stored value is corrupt: unknown format byte 0x99/,
    )
  })

  // Fails until the engine checks the shape of a decoded exit: today replayExit's switch falls
  // through on an unknown _tag and the body dies with "TypeError: yield* (intermediate value)... is
  // not iterable", a Defect that names neither the step nor the damage. Flip to `it` once decodeExit
  // refuses a value that is not a RecordedExit with a CorruptStoredValue naming the step.
  it("names the step whose recorded exit is JSON but not an exit", async () => {
    const [run] = await stashAll(["exit-shape"])
    await damageExit(run!.executionId, GARBAGE.notAnExit)
    akter.advance("61 minutes")
    await runUntilIdle(akter, runner, { timeoutMs: 30_000 })
    await expectDefect(run!, /keep.*not a recorded exit|not a recorded exit.*keep/)
  })

  it("reports a garbage stored result as a Defect when it is read", async () => {
    const [run] = await stashAll(["result"])
    akter.advance("61 minutes")
    await runUntilIdle(akter, runner)
    expect((await run!.result())._tag).toBe("Success")
    await sql`UPDATE akter.executions SET result = ${GARBAGE.unknownFormat}
      WHERE execution_id = ${run!.executionId}`.execute(db())
    expect(await run!.status()).toEqual({
      status: "finished",
      result: {
        _tag: "Defect",
        message:
          "stored result is unreadable: CorruptStoredValue: stored value is corrupt: unknown format byte 0x99",
      },
    })
  })

  it("finishes a waiting execution whose awaited event payload is garbage with a Defect", async () => {
    const run = await client.heed.start("event")
    const healthy = await client.heed.start("event-healthy")
    await runUntilIdle(akter, runner)
    // The payload is damaged as it is stored: a runner woken by the emit never sees it whole. No
    // runner of this process runs meanwhile: one would be handed the event as it was emitted, and
    // never read the stored copy (engine/pass.ts `claimed`).
    await runner.close()
    await sql`CREATE FUNCTION akter_test_damage_event() RETURNS trigger AS $$
      BEGIN NEW.payload := ${sql.lit(`\\x${GARBAGE.notJson.toString("hex")}`)}::bytea; RETURN NEW; END
      $$ LANGUAGE plpgsql`.execute(db())
    await sql`CREATE TRIGGER akter_test_damage_event BEFORE INSERT ON akter.events
      FOR EACH ROW WHEN (NEW.owner_id = 'event') EXECUTE FUNCTION akter_test_damage_event()`.execute(
      db(),
    )
    try {
      await client.emit("event", "Note", { text: "soon garbage" })
    } finally {
      await sql`DROP TRIGGER akter_test_damage_event ON akter.events`.execute(db())
      await sql`DROP FUNCTION akter_test_damage_event()`.execute(db())
    }
    runner = await startSuiteRunner()
    await client.emit("event-healthy", "Note", { text: "fine" })
    await runUntilIdle(akter, runner)
    await expectDefect(run, /stored value is corrupt: not JSON/)
    expect(await healthy.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { text: "fine" },
    })
  })

  it("shows a garbage stored input as a defect in akter inspect, and the runner goes on", async () => {
    const [run, healthy] = await stashAll(["inspect-input", "inspect-healthy"])
    await sql`UPDATE akter.executions SET input = ${GARBAGE.unknownFormat}
      WHERE execution_id = ${run!.executionId}`.execute(db())
    expect(await inspected(run!.executionId)).toMatch(
      /input\s+DEFECT unreadable input: .*stored value is corrupt: unknown format byte 0x99/,
    )
    akter.advance("61 minutes")
    expect(await healthy!.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { note: "inspect-healthy" },
    })
  })

  // Fails until the engine decodes the stored input where a failure can be recorded: today pass.ts
  // decodes it before the body starts, the CorruptStoredValue escapes runPass, the runner logs
  // "pass failed; its timer resumes it" (with the reason) and retries it every recovery interval,
  // forever. Other executions are not held up (asserted first). Flip to `it` once the engine
  // finishes such an execution with a Defect.
  it("finishes an execution whose stored input is garbage with a Defect", async () => {
    const [run, healthy] = await stashAll(["input", "input-healthy"])
    await sql`UPDATE akter.executions SET input = ${GARBAGE.brokenBrotli}
      WHERE execution_id = ${run!.executionId}`.execute(db())
    akter.advance("61 minutes")
    expect(await healthy!.result({ timeout: "5 seconds" })).toEqual({
      _tag: "Success",
      value: { note: "input-healthy" },
    })
    await expectDefect(run!, /input.*stored value is corrupt: brotli stream/, "3 seconds")
  })
})
