/**
 * A trigger that records every claim of an outbox row (a claim counts an attempt) as it commits, so
 * a test can tell a row that was claimed from one a pass of this process was handed without a claim.
 * Installing it again is harmless; rows are named by the outbox row's id.
 */
import { sql } from "kysely"
import type { Queryable } from "../../runtime/storage/database.js"

export const installClaimAudit = async (db: Queryable): Promise<void> => {
  await sql
    .raw(
      `CREATE TABLE IF NOT EXISTS claim_audit (id text NOT NULL);
      CREATE OR REPLACE FUNCTION claim_audited() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO claim_audit VALUES (NEW.id); RETURN NEW; END $$;
      CREATE OR REPLACE TRIGGER claim_audited AFTER UPDATE ON akter.outbox FOR EACH ROW
        WHEN (NEW.attempts > OLD.attempts) EXECUTE FUNCTION claim_audited();`,
    )
    .execute(db)
}

/** How many claims of rows with this id committed since the audit was installed. */
export const claimsOf = async (db: Queryable, id: string): Promise<number> =>
  (
    await sql<{ n: number }>`SELECT count(*)::int AS n FROM claim_audit WHERE id = ${id}`.execute(
      db,
    )
  ).rows[0]!.n
