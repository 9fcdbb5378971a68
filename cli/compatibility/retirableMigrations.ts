/**
 * Which declared migrations of recorded data can be retired: those no lock entry and no open
 * execution needs. A migration is needed exactly when `akter check` says it reads some release's or
 * some open execution's data (a `recorded-data-migrated` finding names it), so this reads the
 * check's findings rather than judging shapes a second way. Pure: `akter lock --prune` reads the
 * lock file and the database.
 */
import type { Finding, FindingLocation } from "../../runtime/compatibility/finding.js"
import type { ManifestPath } from "../../runtime/compatibility/rules.js"
import type { EarlierShapes, OwnerEarlierShapes } from "../../runtime/model/earlierShapes.js"
import type { CurrentManifests } from "./checkProject.js"

/**
 * A declared migration: of an event's payload, of a workflow's input, of a step's output, or of a
 * declared error's payload.
 */
export type DeclaredMigration =
  | { readonly owner: string; readonly event: string; readonly migration: string }
  | {
      readonly owner: string
      readonly workflow: string
      readonly error: string
      readonly migration: string
    }
  | { readonly owner: string; readonly workflow: string; readonly migration: string }
  | {
      readonly owner: string
      readonly workflow: string
      readonly step: string
      readonly migration: string
    }

/** A migration nothing needs any more, with its place in the manifest. */
export type RetirableMigration = DeclaredMigration & {
  /** Its node in the manifest, e.g. `["events", "Approved", "earlier", "v1"]`. */
  readonly path: ManifestPath
  readonly location?: FindingLocation
}

const keyOf = (migration: DeclaredMigration): string =>
  "event" in migration
    ? JSON.stringify([migration.owner, "event", migration.event, migration.migration])
    : "error" in migration
      ? JSON.stringify([
          migration.owner,
          "error",
          migration.workflow,
          migration.error,
          migration.migration,
        ])
      : "step" in migration
        ? JSON.stringify([
            migration.owner,
            "step",
            migration.workflow,
            migration.step,
            migration.migration,
          ])
        : JSON.stringify([migration.owner, "input", migration.workflow, migration.migration])

/**
 * The migration a `recorded-data-migrated` finding names: of the event when it names one (a wait
 * reads its event's migrations), else of the declared error when it names one, else of the step's
 * output, else of the workflow's input.
 */
const neededBy = (finding: Finding): DeclaredMigration | undefined => {
  if (finding.rule !== "recorded-data-migrated" || finding.migration === undefined) return undefined
  const { owner, migration } = finding
  if (finding.event !== undefined) return { owner, event: finding.event, migration }
  if (finding.workflow === undefined) return undefined
  if (finding.error !== undefined) {
    return { owner, workflow: finding.workflow, error: finding.error, migration }
  }
  if (finding.step !== undefined) {
    return { owner, workflow: finding.workflow, step: finding.step, migration }
  }
  return { owner, workflow: finding.workflow, migration }
}

const declaredMigrations = (current: CurrentManifests): RetirableMigration[] => {
  const declared: RetirableMigration[] = []
  const each = (
    shapes: EarlierShapes | undefined,
    at: ManifestPath,
    of: (migration: string) => DeclaredMigration,
  ) => {
    for (const migration of Object.keys(shapes ?? {})) {
      declared.push({ ...of(migration), path: [...at, migration] })
    }
  }
  const owners: [string, OwnerEarlierShapes][] = [...(current.earlier ?? new Map())]
  for (const [owner, earlier] of owners.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    for (const [event, shapes] of Object.entries(earlier.events ?? {})) {
      each(shapes, ["events", event, "earlier"], (migration) => ({ owner, event, migration }))
    }
    for (const [workflow, shapes] of Object.entries(earlier.workflows ?? {})) {
      each(shapes.input, ["workflows", workflow, "input", "earlier"], (migration) => ({
        owner,
        workflow,
        migration,
      }))
      for (const [step, stepShapes] of Object.entries(shapes.steps ?? {})) {
        each(
          stepShapes,
          ["workflows", workflow, "steps", step, "output", "earlier"],
          (migration) => ({ owner, workflow, step, migration }),
        )
      }
      for (const [error, errorShapes] of Object.entries(shapes.errors ?? {})) {
        each(errorShapes, ["workflows", workflow, "errors", error, "earlier"], (migration) => ({
          owner,
          workflow,
          error,
          migration,
        }))
      }
    }
  }
  return declared
}

/**
 * The declared migrations of `current` that none of `findings` (a check of the manifests against
 * the lock file as it stays and the open executions) reads data through.
 *
 * @example
 * const { findings } = checkProject({ current, lock: pruned, rollback: false, open })
 * retirableMigrations(current, findings)
 * // [{ owner: "Loan", workflow: "apply", step: "quote", migration: "v1", path: […], location: … }]
 */
export const retirableMigrations = (
  current: CurrentManifests,
  findings: readonly Finding[],
): RetirableMigration[] => {
  const needed = new Set<string>()
  for (const finding of findings) {
    const migration = neededBy(finding)
    if (migration !== undefined) needed.add(keyOf(migration))
  }
  return declaredMigrations(current)
    .filter((migration) => !needed.has(keyOf(migration)))
    .map((migration) => {
      const location = current.locate(migration.owner, migration.path)
      return location === undefined ? migration : { ...migration, location }
    })
}

/**
 * How a report names a migration's data, e.g. `the output of step "quote" of Loan.apply`.
 *
 * @example
 * describeMigration({ owner: "Loan", event: "Approved", migration: "v1" })
 * // 'migration "v1" of the payload of event "Approved" of Loan'
 */
export const describeMigration = (migration: DeclaredMigration): string =>
  `migration "${migration.migration}" of ` +
  ("event" in migration
    ? `the payload of event "${migration.event}" of ${migration.owner}`
    : "error" in migration
      ? `the payload of error "${migration.error}" of ${migration.owner}.${migration.workflow}`
      : "step" in migration
        ? `the output of step "${migration.step}" of ${migration.owner}.${migration.workflow}`
        : `the input of ${migration.owner}.${migration.workflow}`)
