/**
 * The `start` step kind in the model: starts another workflow once. A plain start records the
 * started execution's id; an awaiting start (`await: true`) records the child's result — its output
 * or one of its declared errors — typed from the child workflow. Its canonical form is the target,
 * whether it awaits (the two record different values), and the parent-close policy when it is not
 * the default of its mode (so a start that declares neither keeps its hash).
 */
import type { CanonicalStepOf, StepKindModel } from "./stepKindModel.js"

/** What a child does when its parent ends: interrupted with it, or left running. */
export type ParentClose = "interrupt" | "leave"

export interface StartStep {
  readonly kind: "start"
  readonly description?: string
  /** Owner type of the started workflow (the same owner type when the manifest omits it). */
  readonly owner: string
  readonly workflow: string
  /** The step resolves to the child's result rather than its id. */
  readonly awaits: boolean
  /** What the child does when the parent ends. */
  readonly parentClose: ParentClose
}

/** The policy a start has unless it declares one: an awaited child goes with its parent. */
export const defaultParentClose = (awaits: boolean): ParentClose => (awaits ? "interrupt" : "leave")

/** The policy of a canonical start step, its default filled in. */
export const parentCloseOf = (step: CanonicalStepOf<"start">): ParentClose =>
  step.parentClose ?? defaultParentClose(step.awaits === true)

const targetOf = (step: CanonicalStepOf<"start">) =>
  step.target === undefined ? "nothing" : `${step.target.owner}.${step.target.workflow}`

const recordsWhat = (step: CanonicalStepOf<"start">) =>
  step.awaits === true ? "the child's result" : "the child's execution id"

export const startModel: StepKindModel<StartStep> = {
  kind: "start",
  canonical: (step) => ({
    kind: "start",
    target: { owner: step.owner, workflow: step.workflow },
    ...(step.awaits ? { awaits: true } : {}),
    ...(step.parentClose === defaultParentClose(step.awaits)
      ? {}
      : { parentClose: step.parentClose }),
  }),
  resultRefusal: (reader, writer) => {
    if (targetOf(reader) !== targetOf(writer)) {
      return {
        path: "workflow",
        reason: `starts ${targetOf(reader)} instead of ${targetOf(writer)}; recorded execution ids name the old one`,
        segments: [{ kind: "field", name: "workflow" }],
      }
    }
    if ((reader.awaits === true) !== (writer.awaits === true)) {
      return {
        path: "await",
        reason: `records ${recordsWhat(reader)} instead of ${recordsWhat(writer)}`,
        segments: [{ kind: "field", name: "await" }],
      }
    }
    return null
  },
  eventWaitedFor: () => undefined,
  declaredTypes: () => ({ input: null, output: null }),
}
