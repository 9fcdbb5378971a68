/**
 * Issue 15's retries that spare business errors, on PGlite and on Postgres with the test clock: a
 * declared error ends an activity at its first occurrence unless its policy's `retryOn` names it,
 * while a crash (a thrown Error, an undeclared error) is retried per the policy; each attempt is
 * its own recorded row, which `inspect` shows with its exit. Attempts are counted twice: by the
 * activity itself and from the database's rows.
 */
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { renderExecutionDetail } from "../../cli/renderInspection.js"
import {
  implementWorkflow,
  makeOwnerClient,
  type Runner,
  type WorkflowImplementation,
} from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { inspectExecution, runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { RunCounter } from "./probeWorkflows.js"
import { withRunner as runnerFor } from "../support/withRunner.js"

const YAML = `
akter: 1
owner: Insurer
workflows:
  renew:
    input: { mode: { enum: [lapsed, crashThenLapsed, busyTwice, crashing] } }
    output: { outcome: string }
    errors:
      PolicyLapsed: { policyId: string }
      Busy: { retryAfter: string }
    steps:
      verifyPolicy:
        kind: activity
        output: { ok: boolean }
        errors: [PolicyLapsed, Busy]
        retry: { attempts: 4, initial: 1s, factor: 1, retryOn: [Busy] }
      rest: { kind: sleep, duration: 1h }
`

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("declared errors and retries", (backend) => {
  let akter: TestAkter
  let client: AnyClient
  let workflows: readonly WorkflowImplementation[]
  const runs = new RunCounter()

  beforeAll(async () => {
    const registration = await registrationFromYaml(YAML, "test/runtime/insurer.yaml")
    const { PolicyLapsed, Busy } = registration.workflows["renew"]!.errors
    workflows = [
      implementWorkflow(registration, "renew", {
        activities: {
          // A Promise activity raises a declared error by throwing (or rejecting with) its class.
          verifyPolicy: (ctx: { ownerId: string; attempt: number }) => {
            runs.bump(ctx.ownerId, "verifyPolicy")
            const mode = ctx.ownerId.split("-")[0]
            if (mode === "lapsed")
              return Promise.reject(new PolicyLapsed!({ policyId: "p-1" } as never))
            if (mode === "crashThenLapsed") {
              if (ctx.attempt === 1) return Promise.reject(new Error("connection reset by peer"))
              return Promise.reject(new PolicyLapsed!({ policyId: "p-2" } as never))
            }
            if (mode === "busyTwice") {
              // An Effect activity raises one with Effect.fail.
              return ctx.attempt <= 2
                ? Effect.fail(new Busy!({ retryAfter: `${ctx.attempt}s` } as never))
                : Effect.succeed({ ok: true })
            }
            throw new Error(`crash on attempt ${ctx.attempt}`)
          },
        },
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        body: (_input: never, wf: any) =>
          Effect.gen(function* () {
            const verify = wf.verifyPolicy() as Effect.Effect<
              unknown,
              { readonly _tag: "PolicyLapsed" }
            >
            const verified = yield* verify.pipe(
              Effect.map(() => "verified"),
              Effect.catchTag("PolicyLapsed", () => Effect.succeed("lapsed")),
            )
            // Stay open an hour, so the test can inspect the attempts before the steps go.
            yield* wf.rest()
            return { outcome: verified }
          }) as Effect.Effect<unknown, unknown>,
      }),
    ]
    akter = await openTestAkter(backend)
    client = makeOwnerClient<AnyClient>(akter, registration)
  })

  afterAll(async () => {
    await akter?.close()
  })

  const withRunner = <A>(run: (runner: Runner) => Promise<A>): Promise<A> =>
    runnerFor({ akter, workflows, pollMs: 20 }, run)

  /** The activity's rows as [attempt, exit tag, error tag or die message, next attempt due]. */
  const attemptRows = async (executionId: string) => {
    const detail = await inspectExecution(akter, executionId)
    return (detail?.steps ?? [])
      .filter((step) => step.step === "verifyPolicy")
      .map((step) => [
        step.attempt,
        step.exit?._tag,
        step.exit?._tag === "Failure"
          ? step.exit.error._tag
          : step.exit?._tag === "Die"
            ? step.exit.message
            : undefined,
        step.dueAtMs !== null,
      ])
  }

  /** Attempts as the database counts them, independent of inspect's decoding. */
  const attemptCount = async (executionId: string) => {
    const row = await internalsOf(akter)
      .storage.db.selectFrom("akter.steps")
      .select(({ fn }) => fn.countAll<string>().as("n"))
      .where("execution_id", "=", executionId)
      .where("step", "=", "verifyPolicy")
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  const start = async (mode: string) => {
    const owner = `${mode}-${randomUUID().slice(0, 8)}`
    return { owner, run: await client.renew.start(owner, { mode }) }
  }

  it("a declared error that retryOn does not name ends the activity at its first attempt", async () => {
    await withRunner(async (runner) => {
      const { owner, run } = await start("lapsed")
      await runUntilIdle(akter, runner)
      // The policy allows 4 attempts 1 s apart; the clock moves past all of them.
      for (let i = 0; i < 4; i++) {
        akter.advance("1 second")
        await runUntilIdle(akter, runner)
      }
      expect(runs.of(owner, "verifyPolicy")).toBe(1)
      expect(await attemptCount(run.executionId)).toBe(1)
      expect(await attemptRows(run.executionId)).toEqual([[1, "Failure", "PolicyLapsed", false]])
      akter.advance("1 hour")
      await runUntilIdle(akter, runner)
      expect(await run.result()).toEqual({ _tag: "Success", value: { outcome: "lapsed" } })
    })
  })

  it("a crash is retried, and the declared error of the next attempt then ends the activity", async () => {
    await withRunner(async (runner) => {
      const { owner, run } = await start("crashThenLapsed")
      await runUntilIdle(akter, runner)
      expect(await attemptRows(run.executionId)).toEqual([
        [
          1,
          "Die",
          "activity verifyPolicy failed with an undeclared error: Error: connection reset by peer",
          true,
        ],
      ])
      for (let i = 0; i < 4; i++) {
        akter.advance("1 second")
        await runUntilIdle(akter, runner)
      }
      expect(runs.of(owner, "verifyPolicy")).toBe(2)
      expect(await attemptCount(run.executionId)).toBe(2)
      expect(await attemptRows(run.executionId)).toEqual([
        [
          1,
          "Die",
          "activity verifyPolicy failed with an undeclared error: Error: connection reset by peer",
          true,
        ],
        [2, "Failure", "PolicyLapsed", false],
      ])
      // The text of `akter inspect` shows both attempts and what each ended with.
      const text = renderExecutionDetail(
        (await inspectExecution(akter, run.executionId))!,
        akter.now(),
      )
      expect(text).toMatch(
        /^verifyPolicy\s+activity\s+1\s+settled\s.*Die activity verifyPolicy failed with an undeclared error: Error: connection reset by peer$/m,
      )
      expect(text).toMatch(
        /^verifyPolicy\s+activity\s+2\s+settled\s+Failure PolicyLapsed \{"policyId":"p-2"\}$/m,
      )
    })
  })

  it("a declared error that retryOn names is retried until an attempt succeeds", async () => {
    await withRunner(async (runner) => {
      const { owner, run } = await start("busyTwice")
      await runUntilIdle(akter, runner)
      for (let i = 0; i < 2; i++) {
        akter.advance("1 second")
        await runUntilIdle(akter, runner)
      }
      expect(runs.of(owner, "verifyPolicy")).toBe(3)
      expect(await attemptCount(run.executionId)).toBe(3)
      expect(await attemptRows(run.executionId)).toEqual([
        [1, "Failure", "Busy", true],
        [2, "Failure", "Busy", true],
        [3, "Success", undefined, false],
      ])
      akter.advance("1 hour")
      await runUntilIdle(akter, runner)
      expect(await run.result()).toEqual({ _tag: "Success", value: { outcome: "verified" } })
    })
  })

  it("a failure that is no declared error is retried up to the policy's attempts", async () => {
    await withRunner(async (runner) => {
      const { owner, run } = await start("crashing")
      await runUntilIdle(akter, runner)
      for (let i = 0; i < 2; i++) {
        akter.advance("1 second")
        await runUntilIdle(akter, runner)
      }
      // Three attempts recorded, each with its own message; the fourth is due in a second.
      expect(await attemptRows(run.executionId)).toEqual(
        [1, 2, 3].map((n) => [
          n,
          "Die",
          `activity verifyPolicy failed with an undeclared error: Error: crash on attempt ${n}`,
          true,
        ]),
      )
      akter.advance("1 second")
      await runUntilIdle(akter, runner)
      expect(runs.of(owner, "verifyPolicy")).toBe(4)
      const result = await run.result()
      expect(result._tag).toBe("Defect")
      expect(result._tag === "Defect" ? result.message : "").toContain("crash on attempt 4")
      akter.advance("1 hour")
      await runUntilIdle(akter, runner)
      expect(runs.of(owner, "verifyPolicy")).toBe(4)
    })
  })
})
