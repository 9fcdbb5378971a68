/**
 * akter's implementations of the bench manifest's workflows (`benchManifest.ts`): the same bodies
 * for every process that runs a runner — the trial process (`akterTrial.ts`) and the runner
 * processes of shape r (`runnerProcess.ts`). `onActivity` is told of every activity call, so a
 * runner process can count the work it did.
 */
import { Effect } from "effect"
import { implementWorkflow, type WorkflowImplementation } from "../runtime/index.js"
import {
  benchRegistration,
  childStep,
  SEQUENTIAL_LENGTHS,
  sequentialWorkflow,
} from "./benchManifest.js"
import { stepName } from "./shapes.js"
import { markOnce, marks } from "./shapeTrials.js"

type Step = (input: { n: number }) => Effect.Effect<{ n: number }>
type ChildStart = (ownerId: string, input: { n: number }) => Effect.Effect<{ n: number }>
type Steps = Record<string, Step & ChildStart> & {
  readonly executionId: string
  poked: () => Effect.Effect<{ n: number }>
  nap: () => Effect.Effect<void>
}

export const benchImplementations = async (
  onActivity: (name: string) => void = () => {},
): Promise<WorkflowImplementation[]> => {
  const registration = await benchRegistration()
  const activities = (steps: number) =>
    Object.fromEntries(
      Array.from({ length: steps }, (_, index) => [
        stepName(index),
        async ({ n }: { n: number }) => {
          onActivity(stepName(index))
          return { n: n + 1 }
        },
      ]),
    )
  const sequential = SEQUENTIAL_LENGTHS.map((steps) =>
    implementWorkflow(registration, sequentialWorkflow(steps), {
      activities: activities(steps),
      body: (input: { n: number }, wf: Steps) =>
        Effect.gen(function* () {
          let value = input
          for (let index = 0; index < steps; index++) value = yield* wf[stepName(index)]!(value)
          return value
        }),
    }),
  )
  const wake = implementWorkflow(registration, "wake", {
    activities: {},
    body: (_input: { n: number }, wf: Steps) =>
      Effect.gen(function* () {
        yield* wf.poked()
        yield* Effect.sync(() => markOnce(marks.wokeAt, wf.executionId))
      }),
  })
  const nap = implementWorkflow(registration, "nap", {
    activities: {},
    body: (_input: { n: number }, wf: Steps) =>
      Effect.gen(function* () {
        yield* Effect.sync(() => markOnce(marks.sleptAt, wf.executionId))
        yield* wf.nap()
        yield* Effect.sync(() => markOnce(marks.wokeAt, wf.executionId))
      }),
  })
  const parked = implementWorkflow(registration, "parked", {
    activities: {},
    body: (_input: { n: number }, wf: Steps) => wf.poked(),
  })
  // Every child at once: the pass stages all n starts, then parks until their results are in.
  const fanout = implementWorkflow(registration, "fanout", {
    activities: {},
    body: (input: { n: number }, wf: Steps) =>
      Effect.gen(function* () {
        const parent = wf.executionId
        const results = yield* Effect.all(
          Array.from({ length: input.n }, (_, index) =>
            wf[childStep(index)]!(`${parent}-child-${index}`, { n: index }),
          ),
          { concurrency: "unbounded" },
        )
        if (results.some((result, index) => result.n !== index + 1)) {
          return yield* Effect.die(new Error("a child returned the wrong value"))
        }
      }),
  })
  const child = implementWorkflow(registration, "child", {
    activities: { work: async ({ n }: { n: number }) => ({ n: n + 1 }) },
    body: (input: { n: number }, wf: Steps) => wf["work"]!(input),
  })
  return [...sequential, wake, nap, parked, fanout, child]
}
