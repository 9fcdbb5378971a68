/**
 * The `wait` step kind in the model: waits for an event of the owner. It records the matched event's
 * payload, so its canonical form keeps the event's name and payload type; the timeout is a setting,
 * never hashed.
 */
import { accepts, refusalUnder } from "../../compatibility/accepts.js"
import type { StepKindModel } from "./stepKindModel.js"

export interface WaitStep {
  readonly kind: "wait"
  readonly description?: string
  readonly event: string
  /** Default timeout; `null`: the wait waits forever and resolves only with an event. */
  readonly timeoutMs: number | null
}

export const waitModel: StepKindModel<WaitStep> = {
  kind: "wait",
  canonical: (step, context) => ({
    kind: "wait",
    event: step.event,
    payload: context.eventPayload(step.event),
  }),
  resultRefusal: (reader, writer) => {
    if (reader.event !== writer.event) {
      return {
        path: "event",
        reason: `waits for "${reader.event}" instead of "${writer.event}"; recorded matches are "${writer.event}" events`,
        segments: [{ kind: "field", name: "event" }],
      }
    }
    const payload = accepts(reader.payload ?? { kind: "json" }, writer.payload ?? { kind: "json" })
    return payload === null ? null : refusalUnder("payload", payload)
  },
  eventWaitedFor: (step) => step.event,
  declaredTypes: () => ({ input: null, output: null }),
}
