/**
 * The engine modules of every step kind, keyed by kind: the record's type lists every kind, so a
 * kind the engine cannot run is a compile error rather than a fall-through to another kind.
 */
import { activityEngine } from "./activity.js"
import { raceEngine } from "./race.js"
import { sleepEngine } from "./sleep.js"
import { startEngine } from "./start.js"
import type { StepKindEngines } from "./stepKindEngine.js"
import { waitEngine } from "./wait.js"

export const stepKindEngines: StepKindEngines = {
  activity: activityEngine,
  sleep: sleepEngine,
  wait: waitEngine,
  race: raceEngine,
  start: startEngine,
}
