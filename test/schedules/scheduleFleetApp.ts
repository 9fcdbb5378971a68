/**
 * The app of the multi-process schedule test (`akter run test/schedules/scheduleFleetApp.ts`): one
 * workflow, `stamp`, whose activity appends to the activity journal, started every second by one
 * schedule that allows overlap and catches up every missed tick, so that every tick from the first
 * to the last must have exactly one execution whichever runner decided it.
 */
import { implementWorkflow, type ActivityContext } from "../../runtime/index.js"
import { journalRun } from "../support/activityJournal.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import type { UntypedSteps } from "../support/untypedSteps.js"

export const registration = await registrationFromYaml(
  `
akter: 1
owner: Fleet
workflows:
  stamp:
    input: { region: string }
    steps:
      record: { kind: activity, input: { region: string } }
schedules:
  everySecond:
    workflow: stamp
    every: 1s
    ownerId: fleet
    input: { region: eu }
    overlap: allow
    catchUp: all
`,
  "test/schedules/fleet.yaml",
)

export const workflows = [
  implementWorkflow(registration, "stamp", {
    activities: {
      record: (_: { region: string }, ctx: ActivityContext) => {
        journalRun(ctx)
        return Promise.resolve()
      },
    },
    body: ((input: { region: string }, wf: UntypedSteps) =>
      wf.record({ region: input.region })) as never,
  }),
]
