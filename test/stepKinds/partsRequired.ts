/**
 * Type-level checks, compiled by tsc (and by stepKindCompleteness.test.ts): every list of step kinds
 * needs every kind, and every kind's module needs every part of its layer. Each `@ts-expect-error`
 * below fails the compilation if what it marks ever compiles.
 */
import type {
  StepKindEngine,
  StepKindEngines,
} from "../../runtime/engine/stepKinds/stepKindEngine.js"
import { stepKindEngines } from "../../runtime/engine/stepKinds/stepKinds.js"
import type { SleepStep } from "../../runtime/model/stepKinds/sleep.js"
import type { StepKindModel } from "../../runtime/model/stepKinds/stepKindModel.js"
import { stepKindModels } from "../../runtime/model/stepKinds/stepKinds.js"
import type { StepKindCodegen, StepKindCodegens } from "../../codegen/stepKinds/stepKindCodegen.js"
import { stepKindCodegens } from "../../codegen/stepKinds/stepKinds.js"

/** `true` when `T` declares no optional part: leaving any part out of a kind's module fails. */
type EveryPartRequired<T> = { [P in keyof T]-?: object extends Pick<T, P> ? P : never }[keyof T]
const noOptionalPart = <T>(check: [EveryPartRequired<T>] extends [never] ? true : false) => check

export const partsOfEveryLayerRequired = [
  noOptionalPart<StepKindModel<SleepStep>>(true),
  noOptionalPart<StepKindEngine>(true),
  noOptionalPart<StepKindCodegen<SleepStep>>(true),
]

const { start: _startEngine, ...enginesWithoutStart } = stepKindEngines
// @ts-expect-error the engine list lacks the start kind
export const enginesMissingAKind: StepKindEngines = enginesWithoutStart

const { race: _raceCodegen, ...codegensWithoutRace } = stepKindCodegens
// @ts-expect-error the codegen list lacks the race kind
export const codegensMissingAKind: StepKindCodegens = codegensWithoutRace

// @ts-expect-error a kind's model filed under another kind
export const modelUnderAnotherKind: StepKindModel<SleepStep> = stepKindModels.wait

const { resultRefusal: _rule, ...sleepWithoutRule } = stepKindModels.sleep
// @ts-expect-error a model without its compatibility rule
export const modelMissingAPart: StepKindModel<SleepStep> = sleepWithoutRule

const { method: _method, ...sleepWithoutMethod } = stepKindCodegens.sleep
// @ts-expect-error a codegen module without its generated method
export const codegenMissingAPart: StepKindCodegen<SleepStep> = sleepWithoutMethod
