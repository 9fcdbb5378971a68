/**
 * The `start` step kind in the model: starts another workflow once and records the started
 * execution's id, which names the target workflow. Its canonical form is that target.
 */
import type { CanonicalStepOf, StepKindModel } from "./stepKindModel.js"

export interface StartStep {
  readonly kind: "start"
  readonly description?: string
  /** Owner type of the started workflow (the same owner type when the manifest omits it). */
  readonly owner: string
  readonly workflow: string
}

const targetOf = (step: CanonicalStepOf<"start">) =>
  step.target === undefined ? "nothing" : `${step.target.owner}.${step.target.workflow}`

export const startModel: StepKindModel<StartStep> = {
  kind: "start",
  canonical: (step) => ({ kind: "start", target: { owner: step.owner, workflow: step.workflow } }),
  resultRefusal: (reader, writer) =>
    targetOf(reader) === targetOf(writer)
      ? null
      : {
          path: "workflow",
          reason: `starts ${targetOf(reader)} instead of ${targetOf(writer)}; recorded execution ids name the old one`,
          segments: [{ kind: "field", name: "workflow" }],
        },
  eventWaitedFor: () => undefined,
  declaredTypes: () => ({ input: null, output: null }),
}
