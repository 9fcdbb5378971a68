/**
 * The application a crash test's child runner serves (`akter run test/crash/crashApp.ts`). Every
 * activity appends one line — step, attempt, idempotency key — to the file `CRASH_LOG` names before
 * it does anything else, so the parent can tell how often and under which key each attempt ran;
 * with `CRASH_BLOCK=1` the `work` activity then hangs until the process is killed.
 */
import { appendFileSync } from "node:fs"
import { Effect } from "effect"
import { implementWorkflow } from "../../runtime/index.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"

export const CRASH_MANIFEST = `
akter: 1
owner: Crash
workflows:
  blocking:
    output: { done: string }
    steps:
      work: { kind: activity, output: { key: string } }
  sleeping:
    output: { done: string }
    steps:
      before: { kind: activity, output: { key: string } }
      nap: { kind: sleep, duration: 1s }
      after: { kind: activity, output: { key: string } }
`

export const registration = await registrationFromYaml(CRASH_MANIFEST, "test/crash/crash.yaml")

const log = (step: string, attempt: number, key: string) => {
  const file = process.env["CRASH_LOG"]
  if (file !== undefined)
    appendFileSync(file, `${JSON.stringify({ step, attempt, key, pid: process.pid })}\n`)
}

const recordingActivity =
  (step: string) => (ctx: { attempt: number; idempotencyKey(): string; signal: AbortSignal }) => {
    const key = ctx.idempotencyKey()
    log(step, ctx.attempt, key)
    if (step === "work" && process.env["CRASH_BLOCK"] === "1") {
      return new Promise<never>(() => {})
    }
    return Promise.resolve({ key })
  }

export const workflows = [
  implementWorkflow(registration, "blocking", {
    activities: { work: recordingActivity("work") },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (_: never, wf: any) =>
      Effect.map(wf.work(), (out: { key: string }) => ({ done: out.key })),
  }),
  implementWorkflow(registration, "sleeping", {
    activities: { before: recordingActivity("before"), after: recordingActivity("after") },
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body: (_: never, wf: any) =>
      Effect.gen(function* () {
        yield* wf.before() as Effect.Effect<unknown>
        yield* wf.nap() as Effect.Effect<void>
        const after = yield* wf.after() as Effect.Effect<{ key: string }>
        return { done: after.key }
      }),
  }),
]
