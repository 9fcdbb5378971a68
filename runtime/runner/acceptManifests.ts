/**
 * Startup acceptance: a runner records the manifests it runs as accepted, each with an accepted
 * time strictly later than any earlier acceptance of that workflow, so the newest deployment is
 * always the most recently accepted and an execution started by a newer deployment is recognized
 * as such. Serialized across runners by an advisory lock.
 */
import { sql } from "kysely"
import type { AkterInternals } from "../akter.js"
import { canonicalJson } from "../model/canonicalJson.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { nowMs } from "../storage/clock.js"

const ACCEPTANCE_LOCK = 4_242_002

/** Records the runner's manifests as accepted; returns each workflow's accepted time. */
export const acceptManifests = async (
  internals: AkterInternals,
  workflows: readonly WorkflowRegistration[],
): Promise<Map<string, number>> =>
  internals.storage.db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${ACCEPTANCE_LOCK})`.execute(tx)
    const accepted = new Map<string, number>()
    for (const workflow of workflows) {
      const hash = workflow.hashes.compatibility
      const latest = await tx
        .selectFrom("akter.manifests")
        .select(["manifest_hash", "accepted_at_ms"])
        .where("owner_type", "=", workflow.owner)
        .where("workflow", "=", workflow.name)
        .orderBy("accepted_at_ms", "desc")
        .orderBy("manifest_hash")
        .limit(1)
        .executeTakeFirst()
      if (latest?.manifest_hash === hash) {
        accepted.set(`${workflow.owner}/${workflow.name}`, latest.accepted_at_ms)
        continue
      }
      const { rows } = await sql<{ accepted_at_ms: number }>`
        INSERT INTO akter.manifests (owner_type, workflow, manifest_hash, manifest, accepted_at_ms)
        VALUES (${workflow.owner}, ${workflow.name}, ${hash}, ${canonicalJson(workflow.canonical)}::jsonb,
          GREATEST(${nowMs(internals.clock)}, ${(latest?.accepted_at_ms ?? 0) + 1}::bigint))
        ON CONFLICT (owner_type, workflow, manifest_hash)
          DO UPDATE SET accepted_at_ms = EXCLUDED.accepted_at_ms
        RETURNING accepted_at_ms`.execute(tx)
      accepted.set(`${workflow.owner}/${workflow.name}`, rows[0]!.accepted_at_ms)
    }
    return accepted
  })
