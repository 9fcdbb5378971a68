/**
 * Every step kind's codegen module, keyed by kind: the type lists every kind of the model
 * (runtime/model/stepKinds/), so a kind without its manifest format, check, settings, method or
 * diff does not compile.
 */
import type { StepDecl } from "../../runtime/model/stepKinds/stepKinds.js"
import { activityCodegen } from "./activity.js"
import { raceCodegen } from "./race.js"
import { sleepCodegen } from "./sleep.js"
import { startCodegen } from "./start.js"
import type { StepKindCodegen, StepKindCodegens } from "./stepKindCodegen.js"
import { waitCodegen } from "./wait.js"

export const stepKindCodegens: StepKindCodegens = {
  activity: activityCodegen,
  sleep: sleepCodegen,
  wait: waitCodegen,
  race: raceCodegen,
  start: startCodegen,
}

/** The codegen module of the kind `kind`, typed for declarations of that kind. */
export const stepKindCodegenOf = <D extends StepDecl>(kind: D["kind"]): StepKindCodegen<D> =>
  stepKindCodegens[kind] as unknown as StepKindCodegen<D>
