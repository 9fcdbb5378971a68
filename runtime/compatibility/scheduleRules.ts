/**
 * The compatibility rules of schedules. A schedule never touches an execution's replay, so adding
 * one is safe and nothing here concerns open executions: what a change risks is the ticks around a
 * deploy, while runners of the released manifest and of the new one tick the same schedule row. A
 * removed (or renamed) schedule stops, and a new name ticks afresh; a changed workflow or timing
 * lets each version start its own idea of a tick; and a released schedule's input is what runners
 * still on the released manifest start executions with, which runners of the new one then run.
 */
import type { CanonicalOwner } from "../model/canonicalManifest.js"
import type { CanonicalSchedule } from "../model/schedule.js"
import { schemaOf } from "../model/schemaOf.js"
import type { LocatedDraft, ManifestPath } from "./rules.js"

const schedulePath = (schedule: string): ManifestPath => ["schedules", schedule]

const timingText = (schedule: CanonicalSchedule) =>
  schedule.cron === null
    ? `every ${schedule.everyMs} ms`
    : `cron "${schedule.cron}" in ${schedule.timeZone}`

/**
 * Findings about the schedules of a released manifest (`previous`) when `next` replaces it.
 *
 * @example
 * scheduleDrafts(released, current) // [{ rule: "schedule-removed", schedule: "nightly", … }]
 */
export const scheduleDrafts = (previous: CanonicalOwner, next: CanonicalOwner): LocatedDraft[] => {
  const owner = previous.owner
  const drafts: LocatedDraft[] = []
  for (const [name, released] of Object.entries(previous.schedules ?? {})) {
    const current = next.schedules?.[name]
    if (current === undefined) {
      drafts.push({
        rule: "schedule-removed",
        owner,
        schedule: name,
        message: `schedule "${name}" of ${owner} is not declared by this manifest: its runners stop ticking it (under a new name it ticks afresh, and may start a tick a released runner starts too)`,
        at: [["schedules"], []],
      })
      continue
    }
    if (current.workflow !== released.workflow) {
      drafts.push({
        rule: "schedule-workflow-changed",
        owner,
        schedule: name,
        message: `schedule "${name}" of ${owner} starts ${owner}.${current.workflow} in this manifest but ${owner}.${released.workflow} in the previous one: while both are deployed, one tick may start both`,
        at: [[...schedulePath(name), "workflow"], schedulePath(name)],
      })
    }
    if (
      current.cron !== released.cron ||
      current.everyMs !== released.everyMs ||
      current.timeZone !== released.timeZone
    ) {
      drafts.push({
        rule: "schedule-timing-changed",
        owner,
        schedule: name,
        message: `schedule "${name}" of ${owner} ticks on ${timingText(current)} in this manifest but on ${timingText(released)} in the previous one: its ticks restart from the deploy`,
        at: [[...schedulePath(name), current.cron === null ? "every" : "cron"], schedulePath(name)],
      })
    }
    const workflow = next.workflows[released.workflow]
    if (workflow === undefined) continue // workflow-removed reports it
    const input = released.input ?? undefined
    const fits =
      workflow.input === null
        ? input === undefined
        : schemaOf(workflow.input, "tolerant").safeParse(input).success
    if (!fits) {
      drafts.push({
        rule: "schedule-input-incompatible",
        owner,
        schedule: name,
        workflow: released.workflow,
        message: `the input schedule "${name}" starts ${owner}.${released.workflow} with in the previous manifest does not fit its input type in this manifest: ticks started by runners still on the previous manifest could not be run`,
        at: [
          [...schedulePath(name), "input"],
          ["workflows", released.workflow, "input"],
          schedulePath(name),
        ],
      })
    }
  }
  return drafts
}
