/**
 * The `wf` object a body receives: one method per declared step, built by the step's kind module
 * (stepKinds/), plus `version`, `withCompensation` and the execution's identity. Every step first
 * returns its recorded outcome when there is one (replay never reruns a settled step), and does new
 * work only when it is the first unsettled step of its branch.
 */
import * as Effect from "effect/Effect"
import { UndeclaredStep } from "../errors.js"
import { traced } from "../tracing.js"
import type { StepEnvironment } from "./stepEnvironment.js"
import { stepKindEngines } from "./stepKinds/stepKinds.js"

/** Builds `wf` for one pass. Calling a step the manifest does not declare dies, naming it. */
export const buildSteps = (env: StepEnvironment): Record<string, unknown> => {
  const { state } = env
  const { registration } = state
  const steps: Record<string, unknown> = {
    executionId: state.executionId,
    ownerId: state.owner.ownerId,
    caller: state.caller,
    version: (name: string) =>
      Object.hasOwn(registration.canonical.versions, name)
        ? Effect.succeed(state.markers.get(name) ?? 0)
        : Effect.die(
            new Error(
              `workflow ${registration.owner}.${registration.name} declares no version marker "${name}"`,
            ),
          ),
    withCompensation: <A, E>(
      step: Effect.Effect<A, E>,
      undo: (value: A) => Effect.Effect<unknown, unknown>,
    ) =>
      Effect.tap(step, (value) =>
        Effect.sync(() => {
          state.compensations.push(Effect.suspend(() => undo(value)))
        }),
      ),
  }
  const tracer = env.internals.tracer
  for (const [name, declared] of Object.entries(registration.canonical.steps)) {
    const step = stepKindEngines[declared.kind].method(env, name)
    const attributes = { "akter.step": name, "akter.step.kind": declared.kind }
    steps[name] =
      tracer === undefined
        ? step
        : (...args: never[]) => traced(tracer, "akter.step", attributes, step(...args))
  }
  const workflowName = `${registration.owner}.${registration.name}`
  return new Proxy(steps, {
    get: (target, property, receiver) => {
      if (typeof property === "symbol" || Object.hasOwn(target, property) || property === "then") {
        return Reflect.get(target, property, receiver)
      }
      return () => Effect.die(new UndeclaredStep(workflowName, property, registration.source))
    },
  })
}
