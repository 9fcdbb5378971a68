/**
 * The `race` step kind in the model: the first of several branches, whose winner (a declared value
 * or a declared error) is recorded. Its canonical form keeps those result types.
 */
import type { TypeNode } from "../typeModel.js"
import { declaredResultRefusal } from "./resultTypes.js"
import type { StepKindModel } from "./stepKindModel.js"

export interface RaceStep {
  readonly kind: "race"
  readonly description?: string
  readonly output: TypeNode | null
  readonly errors: readonly string[]
}

export const raceModel: StepKindModel<RaceStep> = {
  kind: "race",
  canonical: (step, context) => ({
    kind: "race",
    output: context.type(step.output),
    errors: context.declaredErrors(step.errors),
  }),
  resultRefusal: declaredResultRefusal,
  eventWaitedFor: () => undefined,
  declaredTypes: (step) => ({ input: null, output: step.output }),
}
