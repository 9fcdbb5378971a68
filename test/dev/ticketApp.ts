/**
 * The README tutorial's Ticket.triage workflow, from the same manifest, for `akter dev` tests
 * (`akter dev test/dev/ticketApp.ts`): classify, wait up to four hours for an agent, escalate.
 */
import { Effect, Option } from "effect"
import { implementWorkflow } from "../../runtime/index.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

export const TICKET_MANIFEST = `
akter: 1
owner: Ticket
events:
  Assigned: { agent: string }
workflows:
  triage:
    input: { ticketId: string, text: string }
    output: { team: string, agent: string }
    key: ticketId
    steps:
      classify: { kind: activity, input: { text: string }, output: { team: string } }
      assigned: { kind: wait, event: Assigned, timeout: 4h }
      escalate: { kind: activity, input: { team: string }, output: { agent: string } }
`

export const registration = await registrationFromYaml(TICKET_MANIFEST, "manifests/ticket.yaml")

export const workflows = [
  implementWorkflow(registration, "triage", {
    activities: {
      classify: async ({ text }: { text: string }) => ({
        team: /invoice|refund/i.test(text) ? "billing" : "support",
      }),
      escalate: async ({ team }: { team: string }) => ({ agent: `${team}-on-call` }),
    },
    body: (input: { text: string }, wf: UntypedSteps) =>
      Effect.gen(function* () {
        const { team } = yield* step<{ team: string }>(wf.classify({ text: input.text }))
        const assigned = yield* step<Option.Option<{ agent: string }>>(wf.assigned())
        const agent = Option.isSome(assigned)
          ? assigned.value.agent
          : (yield* step<{ agent: string }>(wf.escalate({ team }))).agent
        return { team, agent }
      }),
  } as never),
]
