/**
 * The diff of the kinds whose canonical form is a declared result (activity, race): the output
 * type's changes down to the field, then the errors added to or removed from the step's list.
 */
import type { CanonicalStepOf } from "../../runtime/model/stepKinds/stepKindModel.js"
import type { StepDiff } from "./stepKindCodegen.js"

export const declaredResultChanges = <C>(
  before: CanonicalStepOf<string>,
  after: CanonicalStepOf<string>,
  diff: StepDiff<C>,
): C[] => [
  ...diff.types("output", before.output ?? null, after.output ?? null),
  ...diff.errors(before.errors ?? {}, after.errors ?? {}),
]
