/**
 * An emit hands its event to a pass of its process waiting in memory (client/emitEvent.ts,
 * engine/pass.ts `claimed`), on PGlite and on Postgres: when the emit's poke is the only one since
 * the pass last read the execution, the pass reads neither the interrupt flag nor the event log —
 * its wait takes the event from the emit, and one it does not pass leaves the wait parked for the
 * next. A poke the pass has not answered (an interrupt committed elsewhere, its wake-up not yet
 * here) makes it read as before, so the interrupt is recorded; this holds too after a suspend
 * deleted the timer and the interrupt's poke created it again, counting from 0. (The interrupt
 * tests emit an event the wait rejects: with one it takes, the interrupt read and the log read race
 * to end the execution, as they did before events were handed.)
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { implementWorkflow, makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { requestInterruptPart } from "../../runtime/engine/executionStore.js"
import { armTimerPart } from "../../runtime/outbox/outboxStore.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import type { Runner } from "../../runtime/runner/runner.js"
import { composeStatement, existsIn } from "../../runtime/storage/statementParts.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { watchSentStatements } from "../support/sentStatements.js"
import { waitUntil } from "../support/waitUntil.js"
import { waitUntilSuspended } from "../support/executionStatus.js"
import { withRunner } from "../support/withRunner.js"

const registration = await registrationFromYaml(
  `
akter: 1
owner: Bell
events:
  Ring: { n: integer }
workflows:
  answer:
    output: { n: integer }
    steps:
      ring: { kind: wait, event: Ring }
`,
  "manifests/bell.yaml",
)

/** No fallback poll within a test: only an emit of this process resumes the waiting pass. */
const NO_POLL_MS = 600_000

/** The statements that answer a resume by reading: the event log, and the interrupt flag. */
const RESUME_READS = [/from "akter"\."events"/i, /select "status", "interrupt"/i]

describeEachBackend("events handed to a waiting pass", (backend) => {
  let akter: TestAkter
  /** Statement texts sent while `recording`; Postgres only (PGlite sends none through pg). */
  const sent: string[] = []
  let recording = false
  let stopWatching = () => {}

  const answer = implementWorkflow(registration, "answer", {
    activities: {},
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (_input: unknown, wf: any) =>
      wf.ring({ where: (payload: { n: number }) => payload.n > 5 }) as Effect.Effect<{
        n: number
      }>,
  })

  beforeAll(async () => {
    // Before the handle opens its pool: its clients bind `query` when they connect.
    stopWatching = watchSentStatements(({ text }) => {
      if (recording) sent.push(text)
    })
    akter = await openTestAkter(backend)
  })

  afterAll(async () => {
    stopWatching()
    await akter?.close()
  })

  const internals = () => internalsOf(akter)
  const db = () => internals().storage.db
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = () => makeOwnerClient<any>(akter, registration)
  const timerOf = (executionId: string) =>
    db()
      .selectFrom("akter.outbox")
      .select("pokes")
      .where("kind", "=", "timer")
      .where("id", "=", executionId)
      .executeTakeFirst()

  /** Starts `answer` for a new owner and resolves once its pass waits in memory for the event. */
  const startWaiting = async (runner: Runner) => {
    const ownerId = `o-${randomUUID().slice(0, 8)}`
    const run = await client().answer.start(ownerId)
    const id = run.executionId as string
    await waitUntilSuspended(db(), id)
    await waitUntil("the pass waits in memory", async () => runner.live === 0)
    return { ownerId, run, id }
  }

  /** An interrupt as another process commits it (flag and poke in one statement), unheard here. */
  const interruptElsewhere = async (ownerId: string, executionId: string) => {
    const owner = placeOwner({ tenant: "default", ownerType: "Bell", ownerId })
    const interrupted = requestInterruptPart(internals().clock, owner.routingKey, executionId)
    const timer = armTimerPart(internals().clock, owner, executionId, "now", {
      when: existsIn(interrupted.name),
      poke: true,
    })
    await composeStatement([interrupted, timer], existsIn(interrupted.name)).execute(db())
  }

  it("takes the emitted event without reading the log or the interrupt flag; one its where rejects leaves the wait parked", async () => {
    await withRunner({ akter, workflows: [answer], pollMs: NO_POLL_MS }, async (runner) => {
      const { ownerId, run } = await startWaiting(runner)
      sent.length = 0
      recording = true
      await client().emit(ownerId, "Ring", { n: 1 })
      // Rejected by `where`: the pass suspends again and waits in memory for the next.
      await waitUntil("the pass waits again", async () => runner.live === 0)
      await client().emit(ownerId, "Ring", { n: 9 })
      expect(await run.result({ timeout: "20 seconds" })).toEqual({
        _tag: "Success",
        value: { n: 9 },
      })
      recording = false
      if (backend === "postgres") {
        // Emits, the suspend after the first and the finish: no statement read to answer a resume.
        expect(sent.length).toBeGreaterThanOrEqual(4)
        expect(sent.filter((text) => RESUME_READS.some((read) => read.test(text)))).toEqual([])
      }
    })
  })

  it("reads when a poke came that the pass has not answered: an interrupt committed before the emit is recorded", async () => {
    await withRunner({ akter, workflows: [answer], pollMs: NO_POLL_MS }, async (runner) => {
      const { ownerId, run, id } = await startWaiting(runner)
      await interruptElsewhere(ownerId, id)
      // An event the wait rejects, so the outcome does not hang on which read answers first: only
      // the interrupt can end the execution. Taken as handed, the pass would park again, its
      // suspend would count the interrupt's poke as answered, and nothing would resume it.
      await client().emit(ownerId, "Ring", { n: 2 })
      expect(await run.result({ timeout: "10 seconds" })).toMatchObject({ _tag: "Interrupted" })
    })
  })

  it("counts pokes from 0 once its suspend deleted the timer: an interrupt that created it again is still read", async () => {
    await withRunner({ akter, workflows: [answer], pollMs: NO_POLL_MS }, async (runner) => {
      const { ownerId, run, id } = await startWaiting(runner)
      // Handed and rejected: the pass answered one poke, then its suspend deleted the timer.
      await client().emit(ownerId, "Ring", { n: 1 })
      await waitUntil("the pass waits again", async () => runner.live === 0)
      expect(await timerOf(id)).toBeUndefined()
      // The interrupt's poke creates the timer with one poke; the emit (rejected, as above) makes
      // it two, which is not one more than the pass answered of the deleted row.
      await interruptElsewhere(ownerId, id)
      await client().emit(ownerId, "Ring", { n: 2 })
      expect(await run.result({ timeout: "10 seconds" })).toMatchObject({ _tag: "Interrupted" })
    })
  })
})
