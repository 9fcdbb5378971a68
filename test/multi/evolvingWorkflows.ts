/**
 * Two deployments of one owner type, as in a rolling deploy: the full manifest, and a newer one
 * that dropped a step (`stepGone.extra`) and a version marker (`markerGone.fraud`). Executions
 * started under the full manifest need both; a runner built from the lacking manifest must leave
 * them to a runner that has them. `evolvingFullApp.ts` and `evolvingLackingApp.ts` serve one each.
 */
import { Effect } from "effect"
import {
  implementWorkflow,
  type ActivityContext,
  type WorkflowImplementation,
} from "../../runtime/index.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import { journalRun } from "../support/activityJournal.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

export const FULL_MANIFEST = `
akter: 1
owner: Evolving
workflows:
  stepGone:
    output: { steps: "string[]" }
    steps:
      a: { kind: activity, output: { pid: integer } }
      extra: { kind: activity, output: { pid: integer } }
  markerGone:
    output: { marker: integer }
    versions:
      fraud: { min: 0, current: 1 }
    steps:
      a: { kind: activity, output: { pid: integer } }
`

export const LACKING_MANIFEST = `
akter: 1
owner: Evolving
workflows:
  stepGone:
    output: { steps: "string[]" }
    steps:
      a: { kind: activity, output: { pid: integer } }
  markerGone:
    output: { marker: integer }
    steps:
      a: { kind: activity, output: { pid: integer } }
`

const recorded = (ctx: ActivityContext) => {
  journalRun(ctx)
  return Promise.resolve({ pid: process.pid })
}

type Wf = UntypedSteps

/** The implementations of one deployment; `full` says which manifest it was built from. */
export const evolvingWorkflows = (
  registration: OwnerRegistration,
  full: boolean,
): WorkflowImplementation[] => [
  implementWorkflow(registration, "stepGone", {
    activities: full ? { a: recorded, extra: recorded } : { a: recorded },
    body: (_: undefined, wf: Wf) =>
      Effect.gen(function* () {
        yield* step(wf.a())
        if (!full) return { steps: ["a"] }
        yield* step(wf.extra())
        return { steps: ["a", "extra"] }
      }),
  }),
  implementWorkflow(registration, "markerGone", {
    activities: { a: recorded },
    body: (_: undefined, wf: Wf) =>
      Effect.gen(function* () {
        yield* step(wf.a())
        return { marker: full ? yield* step<number>(wf.version("fraud")) : 0 }
      }),
  }),
]

export const fullRegistration = () =>
  registrationFromYaml(FULL_MANIFEST, "test/multi/evolving.yaml")

export const lackingRegistration = () =>
  registrationFromYaml(LACKING_MANIFEST, "test/multi/evolving.yaml")
