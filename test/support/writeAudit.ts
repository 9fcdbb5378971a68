/**
 * Database triggers that watch what the runners commit, installed in a test database, so tests judge
 * the engine by its committed writes rather than by its own account: multi-process tests on
 * Postgres install all of them (`installWriteAudit`), in-process tests on PGlite or Postgres all but
 * the fence audit (`installSettleAudit`).
 *
 * - `settles`: one row each time a step row gets its exit (an insert that is settled, or `exit`
 *   going from NULL to a value). A step recorded twice shows up as two rows for one
 *   `(execution, step, attempt)`; a rolled-back write leaves none.
 * - `overwrites`: a recorded exit changed or erased.
 * - `activations`: who took each generation of each owner (the connection's `application_name`),
 *   by advancing it or by creating the owner activated.
 * - `fence_breaches`: an engine write to `steps` or `executions` committed by a connection other
 *   than the one that took the owner's current generation — a write under a stale generation that
 *   was not refused. It is checked at commit (a deferred trigger): a write may take the generation
 *   in its own statement. Every runner process must therefore connect under its own name
 *   (`PGAPPNAME`).
 * - `finishes`: each time an execution becomes finished.
 */
import { isDeepStrictEqual } from "node:util"
import { sql } from "kysely"
import pg from "pg"
import type { Queryable } from "../../runtime/storage/database.js"

const AUDIT_SQL = `
CREATE SCHEMA akter_audit;

CREATE FUNCTION akter_audit.now_ms() RETURNS bigint LANGUAGE sql VOLATILE
  AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

CREATE TABLE akter_audit.settles (
  id bigserial PRIMARY KEY,
  routing_key bigint NOT NULL,
  execution_id text NOT NULL,
  step text NOT NULL,
  attempt integer NOT NULL,
  kind text NOT NULL,
  exit bytea NOT NULL,
  due_at_ms bigint,
  matched bigint,
  writer text NOT NULL,
  at_ms bigint NOT NULL
);

CREATE TABLE akter_audit.overwrites (
  id bigserial PRIMARY KEY,
  execution_id text NOT NULL,
  step text NOT NULL,
  attempt integer NOT NULL,
  writer text NOT NULL,
  at_ms bigint NOT NULL
);

CREATE TABLE akter_audit.activations (
  routing_key bigint NOT NULL,
  tenant text NOT NULL,
  owner_type text NOT NULL,
  owner_id text NOT NULL,
  generation bigint NOT NULL,
  writer text NOT NULL,
  at_ms bigint NOT NULL,
  PRIMARY KEY (routing_key, tenant, owner_type, owner_id, generation)
);

CREATE TABLE akter_audit.finishes (
  id bigserial PRIMARY KEY,
  execution_id text NOT NULL,
  result bytea NOT NULL,
  writer text NOT NULL,
  at_ms bigint NOT NULL
);

CREATE FUNCTION akter_audit.on_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.exit IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.exit IS NULL) THEN
    INSERT INTO akter_audit.settles (routing_key, execution_id, step, attempt, kind, exit, due_at_ms,
      matched, writer, at_ms)
    VALUES (NEW.routing_key, NEW.execution_id, NEW.step, NEW.attempt, NEW.kind, NEW.exit,
      NEW.due_at_ms, NEW.matched, current_setting('application_name'), akter_audit.now_ms());
  ELSIF TG_OP = 'UPDATE' AND OLD.exit IS NOT NULL AND NEW.exit IS DISTINCT FROM OLD.exit THEN
    INSERT INTO akter_audit.overwrites (execution_id, step, attempt, writer, at_ms)
    VALUES (NEW.execution_id, NEW.step, NEW.attempt, current_setting('application_name'),
      akter_audit.now_ms());
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER audit_steps AFTER INSERT OR UPDATE ON akter.steps
  FOR EACH ROW EXECUTE FUNCTION akter_audit.on_step();

CREATE FUNCTION akter_audit.on_execution() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'finished' AND OLD.status <> 'finished' THEN
    INSERT INTO akter_audit.finishes (execution_id, result, writer, at_ms)
    VALUES (NEW.execution_id, NEW.result, current_setting('application_name'), akter_audit.now_ms());
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER audit_executions AFTER UPDATE ON akter.executions
  FOR EACH ROW EXECUTE FUNCTION akter_audit.on_execution();

-- An owner created by a start that a runner of the starting process took is created activated.
CREATE FUNCTION akter_audit.on_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (TG_OP = 'INSERT' AND NEW.generation > 0)
    OR (TG_OP = 'UPDATE' AND NEW.generation <> OLD.generation) THEN
    INSERT INTO akter_audit.activations (routing_key, tenant, owner_type, owner_id, generation,
      writer, at_ms)
    VALUES (NEW.routing_key, NEW.tenant, NEW.owner_type, NEW.owner_id, NEW.generation,
      current_setting('application_name'), akter_audit.now_ms())
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER audit_owners AFTER INSERT OR UPDATE OF generation ON akter.owners
  FOR EACH ROW EXECUTE FUNCTION akter_audit.on_owner();
`

/** The fence audit: needs every writer to connect under its own `application_name`. */
const FENCE_AUDIT_SQL = `
CREATE TABLE akter_audit.fence_breaches (
  id bigserial PRIMARY KEY,
  table_name text NOT NULL,
  execution_id text NOT NULL,
  step text,
  writer text NOT NULL,
  holder text,
  at_ms bigint NOT NULL
);

-- The connection that took the owner's current generation.
CREATE FUNCTION akter_audit.holder(key bigint, execution text) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT a.writer FROM akter.executions e
  JOIN akter.owners o ON o.routing_key = e.routing_key AND o.tenant = e.tenant
    AND o.owner_type = e.owner_type AND o.owner_id = e.owner_id
  JOIN akter_audit.activations a ON a.routing_key = o.routing_key AND a.tenant = o.tenant
    AND a.owner_type = o.owner_type AND a.owner_id = o.owner_id AND a.generation = o.generation
  WHERE e.routing_key = key AND e.execution_id = execution
$$;

CREATE FUNCTION akter_audit.check_fence(table_name text, key bigint, execution text, step text)
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  me text := current_setting('application_name');
  holding text := akter_audit.holder(key, execution);
BEGIN
  IF me = '' OR holding IS DISTINCT FROM me THEN
    INSERT INTO akter_audit.fence_breaches (table_name, execution_id, step, writer, holder, at_ms)
    VALUES (table_name, execution, step, me, holding, akter_audit.now_ms());
  END IF;
END $$;

-- Checked at commit: a write may advance the generation in the same statement (its activation),
-- and by commit its transaction still holds the owner row, so the holder cannot change under it.
CREATE FUNCTION akter_audit.fence_of_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Marker rows are written by the start transaction (clients, the relay), not by a pass.
  IF NEW.kind <> 'version' THEN
    PERFORM akter_audit.check_fence('steps', NEW.routing_key, NEW.execution_id, NEW.step);
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER audit_steps_fence AFTER INSERT OR UPDATE ON akter.steps
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION akter_audit.fence_of_step();

-- Only what a pass writes; the interrupt flag is a client's, and the admission of a queued
-- execution (queued to running, nothing else) is its concurrency group's, written under the
-- group's lock by whichever runner finished the execution that made room.
CREATE FUNCTION akter_audit.pass_wrote(old_row akter.executions, new_row akter.executions)
  RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT (new_row.status, new_row.result, new_row.event_cursor, new_row.manifest_hash)
    IS DISTINCT FROM (old_row.status, old_row.result, old_row.event_cursor, old_row.manifest_hash)
    AND NOT (old_row.status = 'queued' AND new_row.status = 'running'
      AND (new_row.result, new_row.event_cursor, new_row.manifest_hash)
        IS NOT DISTINCT FROM (old_row.result, old_row.event_cursor, old_row.manifest_hash))
$$;

CREATE FUNCTION akter_audit.fence_of_execution() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF akter_audit.pass_wrote(OLD, NEW) THEN
    PERFORM akter_audit.check_fence('executions', NEW.routing_key, NEW.execution_id, NULL);
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER audit_executions_fence AFTER UPDATE ON akter.executions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION akter_audit.fence_of_execution();
`

/**
 * Installs the audit triggers in a migrated database. Run it before any runner connects.
 *
 * @example
 * await installWriteAudit(database.url)
 */
export const installWriteAudit = async (databaseUrl: string): Promise<void> => {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await client.query(AUDIT_SQL + FENCE_AUDIT_SQL)
  } finally {
    await client.end()
  }
}

/**
 * Installs the audit of settles, overwrites, finishes and activations — not the fence audit —
 * through a handle of a migrated database, PGlite or Postgres: for in-process tests, whose runner
 * and client share one connection name, so who holds an owner cannot be told from it.
 *
 * @example
 * await installSettleAudit(internalsOf(akter).storage.db)
 */
export const installSettleAudit = async (db: Queryable): Promise<void> => {
  await sql.raw(AUDIT_SQL).execute(db)
}

export interface AuditedSettle {
  readonly executionId: string
  readonly step: string
  readonly attempt: number
  readonly kind: string
  readonly exit: Buffer
  readonly dueAtMs: number | null
  readonly matched: number | null
  readonly writer: string
  readonly atMs: number
}

export interface WriteAudit {
  readonly settles: readonly AuditedSettle[]
  /** `(execution, step, attempt)` recorded more than once, with the count. */
  readonly duplicateSettles: readonly string[]
  readonly overwrites: readonly string[]
  readonly fenceBreaches: readonly string[]
  /** Executions finished more than once, with the count. */
  readonly duplicateFinishes: readonly string[]
  readonly finishes: number
}

/**
 * Reads what the triggers saw. `bigint` columns come back as numbers through akter's pool.
 *
 * @example
 * const audit = await readWriteAudit(db)
 * expect(audit.duplicateSettles).toEqual([])
 */
export const readWriteAudit = async (db: Queryable): Promise<WriteAudit> => {
  const settles = await sql<{
    execution_id: string
    step: string
    attempt: number
    kind: string
    exit: Buffer
    due_at_ms: number | null
    matched: number | null
    writer: string
    at_ms: number
  }>`SELECT execution_id, step, attempt, kind, exit, due_at_ms, matched, writer, at_ms
     FROM akter_audit.settles ORDER BY id`.execute(db)
  const duplicates = await sql<{ execution_id: string; step: string; attempt: number; n: number }>`
    SELECT execution_id, step, attempt, count(*)::int AS n FROM akter_audit.settles
    GROUP BY execution_id, step, attempt HAVING count(*) > 1
    ORDER BY execution_id, step, attempt`.execute(db)
  const overwrites = await sql<{
    execution_id: string
    step: string
    attempt: number
    writer: string
  }>`
    SELECT execution_id, step, attempt, writer FROM akter_audit.overwrites ORDER BY id`.execute(db)
  const fenceAudited = await sql<{ installed: boolean }>`
    SELECT to_regclass('akter_audit.fence_breaches') IS NOT NULL AS installed`.execute(db)
  const breaches = !fenceAudited.rows[0]!.installed
    ? { rows: [] }
    : await sql<{
        table_name: string
        execution_id: string
        step: string | null
        writer: string
        holder: string | null
      }>`SELECT table_name, execution_id, step, writer, holder FROM akter_audit.fence_breaches
     ORDER BY id`.execute(db)
  const finishes = await sql<{ execution_id: string; n: number }>`
    SELECT execution_id, count(*)::int AS n FROM akter_audit.finishes GROUP BY execution_id
    ORDER BY execution_id`.execute(db)
  return {
    settles: settles.rows.map((row) => ({
      executionId: row.execution_id,
      step: row.step,
      attempt: row.attempt,
      kind: row.kind,
      exit: row.exit,
      dueAtMs: row.due_at_ms,
      matched: row.matched,
      writer: row.writer,
      atMs: row.at_ms,
    })),
    duplicateSettles: duplicates.rows.map(
      (row) => `${row.execution_id} ${row.step}#${row.attempt} settled ${row.n} times`,
    ),
    overwrites: overwrites.rows.map(
      (row) => `${row.execution_id} ${row.step}#${row.attempt} rewritten by ${row.writer}`,
    ),
    fenceBreaches: breaches.rows.map(
      (row) =>
        `${row.table_name} of ${row.execution_id}${row.step === null ? "" : ` (${row.step})`} written by "${row.writer}" while "${row.holder ?? "nobody"}" held the owner`,
    ),
    duplicateFinishes: finishes.rows
      .filter((row) => row.n > 1)
      .map((row) => `${row.execution_id} finished ${row.n} times`),
    finishes: finishes.rows.length,
  }
}

/** The settles of one execution, as `step#attempt` in commit order. */
export const settlesOf = (audit: WriteAudit, executionId: string): string[] =>
  audit.settles
    .filter((settle) => settle.executionId === executionId)
    .map((settle) => `${settle.step}#${settle.attempt}`)

/**
 * The settle lists an execution that settled `steps` (in commit order) and finished may show: all
 * of them, or all but the last — the last step's exit may travel with the finish, which deletes the
 * steps in the same statement, and is then recorded as the execution's result, not as a step exit.
 *
 * @example
 * expect(settledThenFinished(["hold#1", "after#1"])).toContainEqual(settlesOf(audit, id))
 */
export const settledThenFinished = (steps: readonly string[]): string[][] => [
  [...steps],
  steps.slice(0, -1),
]

/** Whether `settled` is one of the lists `settledThenFinished(steps)` allows. */
export const isSettledThenFinished = (steps: readonly string[], settled: readonly string[]) =>
  settledThenFinished(steps).some((allowed) => isDeepStrictEqual(allowed, settled))
