/**
 * Every step kind's model, keyed by kind: the one list of step kinds. `StepKind` and `StepDecl` are
 * derived from it, so every other list keyed by `StepKind` (the engine's, codegen's) fails to
 * compile until it handles a kind added here.
 */
import { activityModel } from "./activity.js"
import { raceModel } from "./race.js"
import { sleepModel } from "./sleep.js"
import { startModel } from "./start.js"
import type { CanonicalStepOf, StepKindModel } from "./stepKindModel.js"
import { waitModel } from "./wait.js"

/** In the order kinds are listed to people (`a step kind is one of activity, sleep, …`). */
const models = {
  activity: activityModel,
  sleep: sleepModel,
  wait: waitModel,
  race: raceModel,
  start: startModel,
}

type DeclOf<M> = M extends StepKindModel<infer D> ? D : never

export type StepKind = keyof typeof models

/** A checked step declaration of any kind. */
export type StepDecl = DeclOf<(typeof models)[StepKind]>

/** The canonical form of a step of any kind. */
export type CanonicalStep = CanonicalStepOf<StepKind>

/** Each kind's model, under its own kind: a model filed under another kind does not compile. */
export const stepKindModels: {
  readonly [K in StepKind]: StepKindModel<Extract<StepDecl, { kind: K }>>
} = models

export const STEP_KINDS = Object.keys(models) as readonly StepKind[]

/** The model of the kind `kind`, typed for declarations of that kind. */
export const stepKindModelOf = <D extends StepDecl>(kind: D["kind"]): StepKindModel<D> =>
  stepKindModels[kind] as unknown as StepKindModel<D>
