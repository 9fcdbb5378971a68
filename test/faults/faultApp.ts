/**
 * The application of the database fault suite (`akter run test/faults/faultApp.ts`): `mixed` runs
 * an activity, a durable sleep, a race of an event against a sleep, and a last activity, so an
 * outage meets every kind of write; its result is computed from its input and the event, so the
 * suite can tell a right result from a wrong one. `quick` is one activity: start → result latency.
 */
import { Effect } from "effect"
import { implementWorkflow } from "../../runtime/index.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

export const FAULT_MANIFEST = `
akter: 1
owner: Fault
events:
  Go: { k: integer }
workflows:
  mixed:
    input: { n: integer }
    output: { value: integer }
    steps:
      double: { kind: activity, input: { n: integer }, output: { d: integer } }
      nap: { kind: sleep, duration: 1s }
      go: { kind: wait, event: Go }
      late: { kind: sleep, duration: 10m }
      first: { kind: race, output: { k: integer } }
      finish: { kind: activity, input: { d: integer, k: integer }, output: { value: integer } }
  quick:
    input: { n: integer }
    output: { n: integer }
    steps:
      echo: { kind: activity, input: { n: integer }, output: { n: integer } }
`

export const registration = await registrationFromYaml(FAULT_MANIFEST, "test/faults/fault.yaml")

/** The result `mixed` must record for input `n` and event `k`. */
export const expectedValue = (n: number, k: number) => n * 2 + k

export const workflows = [
  implementWorkflow(registration, "mixed", {
    activities: {
      double: ({ n }: { n: number }) => Promise.resolve({ d: n * 2 }),
      finish: ({ d, k }: { d: number; k: number }) => Promise.resolve({ value: d + k }),
    },
    body: (input: { n: number }, wf: UntypedSteps) =>
      Effect.gen(function* () {
        const { d } = yield* step<{ d: number }>(wf.double({ n: input.n }))
        yield* step(wf.nap())
        const { k } = yield* step<{ k: number }>(
          wf.first([
            Effect.map(step<{ k: number }>(wf.go()), (event) => ({ k: event.k })),
            Effect.map(step(wf.late()), () => ({ k: -1 })),
          ]),
        )
        return yield* step<{ value: number }>(wf.finish({ d, k }))
      }),
  }),
  implementWorkflow(registration, "quick", {
    activities: { echo: ({ n }: { n: number }) => Promise.resolve({ n }) },
    body: (input: { n: number }, wf: UntypedSteps) => step(wf.echo({ n: input.n })),
  }),
]
