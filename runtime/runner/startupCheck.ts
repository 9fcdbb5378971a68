/**
 * The deploy-time check against a database: what the open executions recorded, read as the
 * aggregates `checkOpenExecutions` judges, and the decision a starting runner makes with them. A
 * runner calls it under its acceptance lock; `akter check --database-url` and `akter lock --prune`
 * read the same aggregates in one read-only snapshot.
 */
import { sql } from "kysely"
import type { Finding } from "../compatibility/finding.js"
import {
  checkOpenExecutions,
  type OpenConcurrencyAggregate,
  type OpenExecutionAggregates,
  type OpenGroup,
  type OpenMarkerAggregate,
  type OpenStepAggregate,
} from "../compatibility/openExecutions.js"
import type { CanonicalOwner, CanonicalWorkflow } from "../model/canonicalManifest.js"
import type { EarlierShapes, WorkflowEarlierShapes } from "../model/earlierShapes.js"

type EarlierShapesByName = Readonly<Record<string, EarlierShapes>>
import type { StepKind } from "../model/manifest.js"
import type { TypeNode } from "../model/typeModel.js"
import type { WorkflowRegistration } from "../model/registration.js"
import type { Queryable } from "../storage/database.js"

/** Restricts a read to some owner types; `undefined` reads every owner type in the database. */
export type OwnerTypes = readonly string[] | undefined

const ofOwnerTypes = (column: string, owners: OwnerTypes) =>
  owners === undefined ? sql`true` : sql`${sql.ref(column)} = ANY(${[...owners]}::text[])`

interface GroupRow {
  readonly owner: string
  readonly workflow: string
  readonly startManifestHash: string
  readonly startManifest: CanonicalWorkflow | null
  readonly count: number
  readonly oldestStartedAtMs: number
}

/** Open executions by (owner type, workflow, start manifest), with the stored start manifest. */
const readOpenGroups = async (db: Queryable, owners: OwnerTypes): Promise<OpenGroup[]> => {
  const { rows } = await sql<GroupRow>`
    WITH open_groups AS (
      SELECT owner_type, workflow, manifest_hash, count(*) AS count, min(started_at_ms) AS oldest
      FROM akter.executions
      WHERE status <> 'finished' AND ${ofOwnerTypes("owner_type", owners)}
      GROUP BY owner_type, workflow, manifest_hash)
    SELECT g.owner_type AS owner, g.workflow, g.manifest_hash AS "startManifestHash",
      m.manifest AS "startManifest", g.count, g.oldest AS "oldestStartedAtMs"
    FROM open_groups g
    LEFT JOIN akter.manifests m
      ON m.owner_type = g.owner_type AND m.workflow = g.workflow AND m.manifest_hash = g.manifest_hash
    ORDER BY 1, 2, 3`.execute(db)
  return rows.map((row) => ({ ...row }))
}

/** Recorded steps (markers excluded) of open executions, each execution counted once per step. */
const readOpenSteps = async (db: Queryable, owners: OwnerTypes): Promise<OpenStepAggregate[]> => {
  const { rows } = await sql<OpenStepAggregate & { kind: StepKind }>`
    SELECT owner AS owner, workflow, "startManifestHash", step, kind, settled,
      count(*) AS count, min(started_at_ms) AS "oldestStartedAtMs"
    FROM (
      SELECT e.owner_type AS owner, e.workflow, e.manifest_hash AS "startManifestHash",
        e.started_at_ms, s.step, s.kind, bool_or(s.exit IS NOT NULL) AS settled
      FROM akter.executions e
      JOIN akter.steps s ON s.routing_key = e.routing_key AND s.execution_id = e.execution_id
      WHERE e.status <> 'finished' AND s.kind <> 'version' AND ${ofOwnerTypes("e.owner_type", owners)}
      GROUP BY e.routing_key, e.execution_id, s.step, s.kind) AS per_execution
    GROUP BY 1, 2, 3, 4, 5, 6
    ORDER BY 1, 2, 3, 4`.execute(db)
  return rows
}

/** Recorded marker values of open executions (one row per execution and marker). */
const readOpenMarkers = async (
  db: Queryable,
  owners: OwnerTypes,
): Promise<OpenMarkerAggregate[]> => {
  const { rows } = await sql<OpenMarkerAggregate>`
    SELECT e.owner_type AS owner, e.workflow, e.manifest_hash AS "startManifestHash",
      s.step AS marker, s.version AS value, count(*) AS count, min(e.started_at_ms) AS "oldestStartedAtMs"
    FROM akter.executions e
    JOIN akter.steps s ON s.routing_key = e.routing_key AND s.execution_id = e.execution_id
    WHERE e.status <> 'finished' AND s.kind = 'version' AND ${ofOwnerTypes("e.owner_type", owners)}
    GROUP BY 1, 2, 3, 4, 5
    ORDER BY 1, 2, 3, 4, 5`.execute(db)
  return rows
}

/**
 * What the open executions recorded, as the three aggregates `checkOpenExecutions` takes: one query
 * each. Run it inside one transaction (a repeatable-read snapshot for a consistent picture).
 *
 * @example
 * const open = await db.transaction().setIsolationLevel("repeatable read").setAccessMode("read only")
 *   .execute((tx) => readOpenExecutions(tx))
 * checkOpenExecutions(open, owners)
 */
export const readOpenExecutions = async (
  db: Queryable,
  owners?: OwnerTypes,
): Promise<OpenExecutionAggregates> => {
  const groups = await readOpenGroups(db, owners)
  if (groups.length === 0) return { groups, steps: [], markers: [], concurrency: [] }
  const steps = await readOpenSteps(db, owners)
  const markers = await readOpenMarkers(db, owners)
  const concurrency = await readOpenConcurrency(db, owners)
  return { groups, steps, markers, concurrency }
}

/** Open executions by workflow and the concurrency key path they started under. */
const readOpenConcurrency = async (
  db: Queryable,
  owners: OwnerTypes,
): Promise<OpenConcurrencyAggregate[]> => {
  const { rows } = await sql<OpenConcurrencyAggregate>`
    SELECT owner_type AS owner, workflow, concurrency_key AS key, count(*) AS count,
      min(started_at_ms) AS "oldestStartedAtMs"
    FROM akter.executions
    WHERE status <> 'finished' AND ${ofOwnerTypes("owner_type", owners)}
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3`.execute(db)
  return rows
}

/** A workflow manifest in use: an open execution of `owner`.`workflow` started under `hash`. */
export interface ManifestInUse {
  readonly owner: string
  readonly workflow: string
  readonly hash: string
  /** The concurrency key path they started under (outside the hash); null: none. */
  readonly concurrencyKey: string | null
}

/**
 * Which (owner type, workflow, start manifest hash, concurrency key path) open executions use:
 * one read of the open executions (the key path is not in the `executions_check` index, so the
 * read visits their rows). The fast path of startup acceptance, and what `akter lock --prune`
 * keeps.
 *
 * @example
 * const used = await readManifestsInUse(db) // [{ owner: "Order", workflow: "fulfill", hash: "akter1:sha256:…", concurrencyKey: null }]
 */
export const readManifestsInUse = async (
  db: Queryable,
  owners?: OwnerTypes,
): Promise<ManifestInUse[]> => {
  const { rows } = await sql<ManifestInUse>`
    SELECT DISTINCT owner_type AS owner, workflow, manifest_hash AS hash,
      concurrency_key AS "concurrencyKey"
    FROM akter.executions
    WHERE status <> 'finished' AND ${ofOwnerTypes("owner_type", owners)}
    ORDER BY 1, 2, 3`.execute(db)
  return rows
}

/** The most recently accepted manifest of a workflow. */
export interface LatestAccepted {
  readonly hash: string
  readonly acceptedAtMs: number
}

export const workflowKey = (owner: string, workflow: string) => `${owner}/${workflow}`

/**
 * The latest accepted manifest of every workflow of the given owner types (highest accepted time,
 * ties broken by hash), keyed `Owner/workflow`: one query.
 */
export const readLatestAccepted = async (
  db: Queryable,
  owners: readonly string[],
): Promise<Map<string, LatestAccepted>> => {
  const { rows } = await sql<{
    owner: string
    workflow: string
    hash: string
    acceptedAtMs: number
  }>`
    SELECT DISTINCT ON (owner_type, workflow) owner_type AS owner, workflow,
      manifest_hash AS hash, accepted_at_ms AS "acceptedAtMs"
    FROM akter.manifests
    WHERE ${ofOwnerTypes("owner_type", owners)}
    ORDER BY owner_type, workflow, accepted_at_ms DESC, manifest_hash`.execute(db)
  return new Map(
    rows.map((row) => [
      workflowKey(row.owner, row.workflow),
      { hash: row.hash, acceptedAtMs: row.acceptedAtMs },
    ]),
  )
}

/**
 * The fast path of startup acceptance: nothing can have changed when every workflow the runner
 * serves was last accepted (by a runner, not only recorded by a start) under the runner's own
 * manifest, and every open execution of its owner types started under a manifest the runner has.
 * Recorded steps are then not re-read: a runner of this same manifest already accepted them.
 */
export const nothingChanged = (
  workflows: readonly WorkflowRegistration[],
  latest: ReadonlyMap<string, LatestAccepted>,
  inUse: readonly ManifestInUse[],
): boolean => {
  const own = new Set(
    workflows.map((w) => `${workflowKey(w.owner, w.name)} ${w.hashes.compatibility}`),
  )
  const acceptedAsOwn = workflows.every((w) => {
    const accepted = latest.get(workflowKey(w.owner, w.name))
    return (
      accepted !== undefined &&
      accepted.acceptedAtMs > 0 &&
      accepted.hash === w.hashes.compatibility
    )
  })
  // A concurrency key path is outside the hash: open executions started under another one (or
  // none) are judged by the open-execution check.
  const keys = new Map(
    workflows.map((w) => [workflowKey(w.owner, w.name), w.canonical.concurrency?.key ?? null]),
  )
  return (
    acceptedAsOwn &&
    inUse.every(
      (used) =>
        own.has(`${workflowKey(used.owner, used.workflow)} ${used.hash}`) &&
        keys.get(workflowKey(used.owner, used.workflow)) === used.concurrencyKey,
    )
  )
}

/**
 * The owner types a runner serves, as `startupProblems` judges them: the canonical manifest of each
 * owner type it serves a workflow of, when the runner passed its owners' registrations. Otherwise an
 * owner assembled from the served workflows alone, with the events their waits declare; such an
 * owner cannot tell a workflow it does not serve from one its manifest removed.
 */
export interface ServedOwners {
  readonly owners: readonly CanonicalOwner[]
  /** Whether `owners` are whole manifests (every workflow and event the owner type declares). */
  readonly complete: boolean
}

export const servedOwners = (
  workflows: readonly WorkflowRegistration[],
  registrations?: readonly { readonly owner: string; readonly canonical: CanonicalOwner }[],
): ServedOwners => {
  const served = new Set(workflows.map((w) => w.owner))
  if (registrations !== undefined) {
    const owners = new Map<string, CanonicalOwner>()
    for (const registration of registrations) {
      if (served.has(registration.owner)) owners.set(registration.owner, registration.canonical)
    }
    if ([...served].every((owner) => owners.has(owner))) {
      return { owners: [...owners.values()], complete: true }
    }
  }
  const assembled = new Map<
    string,
    { events: Record<string, TypeNode>; workflows: Record<string, CanonicalWorkflow> }
  >()
  for (const workflow of workflows) {
    let owner = assembled.get(workflow.owner)
    if (owner === undefined) {
      owner = { events: {}, workflows: {} }
      assembled.set(workflow.owner, owner)
    }
    owner.workflows[workflow.name] = workflow.canonical
    for (const step of Object.values(workflow.canonical.steps)) {
      if (step.kind === "wait" && step.event !== undefined && step.payload !== undefined) {
        owner.events[step.event] = step.payload
      }
    }
  }
  return {
    owners: [...assembled].map(([owner, parts]) => ({ format: 1, owner, ...parts })),
    complete: false,
  }
}

/**
 * Why a runner serving `workflows` could not replay some open executions: the error findings of
 * `checkOpenExecutions` over the groups it is responsible for. Those are the groups of the workflows
 * it serves and, when its owners are complete, of workflows its owner types no longer declare at all
 * (removed by this deployment). A workflow its manifest declares but it does not serve is left to
 * the runners that serve it.
 *
 * @example
 * const problems = startupProblems(await readOpenExecutions(tx, ["Order"]), servedOwners(workflows, [order]), workflows)
 * if (problems.length > 0) throw new IncompatibleDeployment(problems)
 */
export const startupProblems = (
  open: OpenExecutionAggregates,
  served: ServedOwners,
  workflows: readonly WorkflowRegistration[],
): Finding[] => {
  const servedWorkflows = new Set(workflows.map((w) => workflowKey(w.owner, w.name)))
  const byOwner = new Map(served.owners.map((owner) => [owner.owner, owner]))
  const mine = (row: { readonly owner: string; readonly workflow: string }) => {
    const owner = byOwner.get(row.owner)
    if (owner === undefined) return false
    if (servedWorkflows.has(workflowKey(row.owner, row.workflow))) return true
    return served.complete && owner.workflows[row.workflow] === undefined
  }
  const relevant: OpenExecutionAggregates = {
    groups: open.groups.filter(mine),
    steps: open.steps.filter(mine),
    markers: open.markers.filter(mine),
    ...(open.concurrency === undefined ? {} : { concurrency: open.concurrency.filter(mine) }),
  }
  const earlier = new Map<
    string,
    { events?: EarlierShapesByName; workflows: Record<string, WorkflowEarlierShapes> }
  >()
  for (const workflow of workflows) {
    const owner = earlier.get(workflow.owner) ?? { workflows: {} }
    const { events, ...own } = workflow.earlier
    if (events !== undefined) owner.events = events
    owner.workflows[workflow.name] = own
    earlier.set(workflow.owner, owner)
  }
  return checkOpenExecutions(relevant, served.owners, {
    earlier: (owner) => earlier.get(owner),
  }).filter((finding) => finding.severity === "error")
}
