/**
 * Statements on `akter.manifests`: every workflow manifest an execution started under or a runner
 * accepted, by compatibility hash, so a runner can judge an execution started by another deployment.
 */
import { sql, type RawBuilder } from "kysely"
import type { CanonicalWorkflow } from "../model/canonicalManifest.js"
import { canonicalJson } from "../model/canonicalJson.js"
import type { Queryable } from "./database.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { nowMs, type DatabaseClock } from "./clock.js"
import { part, type StatementPart } from "./statementParts.js"

/** A workflow's manifest as stored: printed once per manifest, not on every start. */
const storedForms = new WeakMap<CanonicalWorkflow, string>()

export const storedForm = (workflow: CanonicalWorkflow): string => {
  let form = storedForms.get(workflow)
  if (form === undefined) {
    form = canonicalJson(workflow)
    storedForms.set(workflow, form)
  }
  return form
}

/**
 * Stores the manifest an execution starts under (accepted time 0 unless a runner accepted it), so a
 * runner of another deployment can judge the execution. `when` conditions it on another part of the
 * statement (the start inserting a new execution).
 */
export const recordStartManifestPart = (
  workflow: CanonicalWorkflow,
  hash: string,
  when: RawBuilder<boolean> = sql`true`,
): StatementPart =>
  part(
    "manifest",
    () => sql`INSERT INTO akter.manifests (owner_type, workflow, manifest_hash, manifest, accepted_at_ms)
      SELECT ${workflow.owner}, ${workflow.workflow}, ${hash}, ${storedForm(workflow)}::jsonb, 0
      WHERE ${when}
      ON CONFLICT DO NOTHING
      RETURNING manifest_hash`,
  )

/**
 * The manifests a batch's folded starts start under (engine/stepBatch.ts), as
 * `recordStartManifestPart`: each recorded once if new, when some start under it inserted its
 * execution (`inserted`). The batch sends each manifest's text on one row only (`manifest`), the
 * first to start under it; the others name it by hash.
 */
export const batchRecordStartManifestsSql = (): RawBuilder<unknown> =>
  sql`manifests_recorded AS (
      INSERT INTO akter.manifests (owner_type, workflow, manifest_hash, manifest, accepted_at_ms)
      SELECT m.owner_type, m.workflow, m.manifest_hash, m.manifest::jsonb, 0
      FROM input m
      WHERE m.manifest IS NOT NULL AND EXISTS (SELECT 1 FROM input i JOIN inserted s
          ON s.routing_key = i.routing_key AND s.execution_id = i.execution_id
        WHERE i.owner_type = m.owner_type AND i.workflow = m.workflow
          AND i.manifest_hash = m.manifest_hash)
      ON CONFLICT DO NOTHING
      RETURNING manifest_hash
    )`

/**
 * Records a runner's manifest of a workflow as accepted at `GREATEST(now, latest + 1)`, `latest`
 * being the workflow's latest accepted time the runner read under its acceptance lock: the
 * accepted times of a workflow only grow, so the deployment accepted last is the newest, even
 * across clock skew. Returns the accepted time recorded.
 */
export const recordAcceptedManifest = async (
  db: Queryable,
  clock: DatabaseClock,
  workflow: WorkflowRegistration,
  latestAcceptedAtMs: number,
): Promise<number> => {
  const { rows } = await sql<{ accepted_at_ms: number }>`
    INSERT INTO akter.manifests (owner_type, workflow, manifest_hash, manifest, accepted_at_ms)
    VALUES (${workflow.owner}, ${workflow.name}, ${workflow.hashes.compatibility},
      ${canonicalJson(workflow.canonical)}::jsonb,
      GREATEST(${nowMs(clock)}, ${latestAcceptedAtMs + 1}::bigint))
    ON CONFLICT (owner_type, workflow, manifest_hash)
      DO UPDATE SET accepted_at_ms = EXCLUDED.accepted_at_ms
    RETURNING accepted_at_ms`.execute(db)
  return rows[0]!.accepted_at_ms
}

export interface StoredManifest {
  readonly manifest: CanonicalWorkflow
  readonly acceptedAtMs: number
}

export const readManifest = async (
  db: Queryable,
  ownerType: string,
  workflow: string,
  hash: string,
): Promise<StoredManifest | undefined> => {
  const row = await db
    .selectFrom("akter.manifests")
    .select(["manifest", "accepted_at_ms"])
    .where("owner_type", "=", ownerType)
    .where("workflow", "=", workflow)
    .where("manifest_hash", "=", hash)
    .executeTakeFirst()
  return row === undefined
    ? undefined
    : { manifest: row.manifest as CanonicalWorkflow, acceptedAtMs: row.accepted_at_ms }
}

/** Manifests that are neither used by an open execution, nor accepted last, nor within the keep period. */
const unusedManifests = (cutoffMs: number) => sql`
  SELECT m.owner_type, m.workflow, m.manifest_hash FROM akter.manifests m
  WHERE m.accepted_at_ms < ${cutoffMs}::bigint
    AND m.accepted_at_ms < (
      SELECT max(latest.accepted_at_ms) FROM akter.manifests latest
      WHERE latest.owner_type = m.owner_type AND latest.workflow = m.workflow)
    AND NOT EXISTS (
      SELECT 1 FROM akter.executions e
      WHERE e.owner_type = m.owner_type AND e.workflow = m.workflow
        AND e.manifest_hash = m.manifest_hash AND e.status <> 'finished')`

/** Retention: how many manifests `pruneUnusedManifests` would delete now. */
export const countUnusedManifests = async (tx: Queryable, cutoffMs: number): Promise<number> => {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM (${unusedManifests(cutoffMs)}) unused`.execute(tx)
  return rows[0]!.n
}

/**
 * Retention: deletes the manifests no open execution uses, keeping per workflow the one accepted
 * last (runners compare their own against it) and those within the keep period. Its caller must
 * first hold writers of executions off (`holdOffExecutionWrites`), so that the check sees every
 * started execution. Returns how many it deleted.
 */
export const pruneUnusedManifests = async (tx: Queryable, cutoffMs: number): Promise<number> => {
  const { rows } = await sql<{ n: number }>`
    WITH deleted AS (
      DELETE FROM akter.manifests m USING (${unusedManifests(cutoffMs)}) unused
      WHERE m.owner_type = unused.owner_type AND m.workflow = unused.workflow
        AND m.manifest_hash = unused.manifest_hash
      RETURNING 1)
    SELECT count(*)::int AS n FROM deleted`.execute(tx)
  return rows[0]!.n
}
