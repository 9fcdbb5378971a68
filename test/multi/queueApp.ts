/**
 * The application of the concurrency-key suites (`akter run test/multi/queueApp.ts`): one
 * workflow, at most one execution per customer at a time. Each execution runs an activity that
 * takes a few milliseconds, sleeps briefly (a suspended execution holds its place) and runs a
 * second activity, so an execution admitted beside another of its customer would overlap it for
 * long enough to show in the admission audit.
 */
import { Effect } from "effect"
import { implementWorkflow } from "../../runtime/index.js"
import { heldUntilReleased } from "../support/heldStart.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

export const QUEUE_MANIFEST = `
akter: 1
owner: Purchase
workflows:
  order:
    input: { customerId: string, n: integer }
    output: { n: integer }
    concurrency: { key: customerId, limit: 1 }
    steps:
      reserve: { kind: activity, input: { n: integer } }
      settle: { kind: sleep, duration: 5ms }
      charge: { kind: activity, input: { n: integer }, output: { n: integer } }
`

export const registration = await registrationFromYaml(QUEUE_MANIFEST, "test/multi/queue.yaml")

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const workflows = [
  implementWorkflow(registration, "order", {
    activities: {
      reserve: async () => {
        await pause(3)
      },
      charge: async ({ n }: { n: number }) => {
        await pause(2)
        return { n }
      },
    },
    body: ({ n }: { n: number }, wf: UntypedSteps) =>
      Effect.gen(function* () {
        yield* step(wf.reserve({ n }))
        yield* step(wf.settle())
        return yield* step<{ n: number }>(wf.charge({ n }))
      }),
  }),
]

await heldUntilReleased()
