/**
 * The admission audit: a trigger logs every status an execution of a concurrency group takes
 * (inserted queued or running, admitted, suspended, resumed, finished) with its transaction and a
 * sequence number, and `admissionProblems` replays the log. Every admission and finish of a group
 * commits under the group's lock, so the log's order is the order those transactions committed in;
 * a transaction's changes count together, as they commit together. The replay reports a moment
 * when more of a group were admitted than the limit, an execution admitted before one queued
 * earlier in its group, and an execution that never finished. Works on PGlite and Postgres.
 */
import { sql } from "kysely"
import type { Queryable } from "../../runtime/storage/database.js"

const AUDIT_SQL = `
CREATE SCHEMA IF NOT EXISTS akter_admission;
CREATE TABLE akter_admission.log (
  seq bigserial PRIMARY KEY,
  tx bigint NOT NULL DEFAULT txid_current(),
  execution_id text NOT NULL,
  grp text NOT NULL,
  queue_order bigint NOT NULL,
  old_status text,
  new_status text NOT NULL
);
CREATE FUNCTION akter_admission.record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status THEN
    INSERT INTO akter_admission.log (execution_id, grp, queue_order, old_status, new_status)
    VALUES (NEW.execution_id,
      NEW.tenant || '/' || NEW.owner_type || '/' || NEW.workflow || '/' || NEW.concurrency_key
        || '=' || NEW.concurrency_value,
      NEW.queue_order, CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.status END, NEW.status);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER admission_log AFTER INSERT OR UPDATE OF status ON akter.executions
  FOR EACH ROW WHEN (NEW.concurrency_key IS NOT NULL) EXECUTE FUNCTION akter_admission.record();
`

/** Installs the audit trigger in a migrated database, before the first start. */
export const installAdmissionAudit = async (db: Queryable): Promise<void> => {
  await sql.raw(AUDIT_SQL).execute(db)
}

interface LogRow {
  readonly seq: number
  readonly tx: string
  readonly execution_id: string
  readonly grp: string
  readonly queue_order: number
  readonly old_status: string | null
  readonly new_status: string
}

const isAdmitted = (status: string | null) => status === "running" || status === "suspended"

export interface AdmissionHistory {
  /** Each group's executions in the order they were admitted (a queued one that was interrupted never is). */
  readonly admitted: ReadonlyMap<string, readonly string[]>
  /** Each group's executions in the order they were queued or admitted at their start. */
  readonly started: ReadonlyMap<string, readonly string[]>
  /** The most of each group ever admitted at once. */
  readonly peak: ReadonlyMap<string, number>
  /** Executions whose last logged status is not `finished`. */
  readonly unfinished: readonly string[]
  /** How many executions started queued. */
  readonly queuedAtStart: number
}

/** Reads and replays the log (see the module comment). */
export const readAdmissionHistory = async (db: Queryable): Promise<AdmissionHistory> => {
  const { rows } = await sql<LogRow>`SELECT seq::int AS seq, tx::text AS tx, execution_id, grp,
      queue_order::int AS queue_order, old_status, new_status
    FROM akter_admission.log ORDER BY seq`.execute(db)
  const transactions: LogRow[][] = []
  let current: LogRow[] | undefined
  for (const row of rows) {
    if (current === undefined || current[0]!.tx !== row.tx) {
      current = []
      transactions.push(current)
    }
    current.push(row)
  }
  const running = new Map<string, number>()
  const peak = new Map<string, number>()
  const admitted = new Map<string, string[]>()
  const started = new Map<string, { id: string; order: number }[]>()
  const last = new Map<string, string>()
  let queuedAtStart = 0
  for (const transaction of transactions) {
    for (const row of transaction) {
      const delta = Number(isAdmitted(row.new_status)) - Number(isAdmitted(row.old_status))
      running.set(row.grp, (running.get(row.grp) ?? 0) + delta)
      if (row.old_status === null) {
        const list = started.get(row.grp) ?? []
        list.push({ id: row.execution_id, order: row.queue_order })
        started.set(row.grp, list)
        if (row.new_status === "queued") queuedAtStart++
      }
      if (isAdmitted(row.new_status) && (row.old_status === null || row.old_status === "queued")) {
        admitted.set(row.grp, [...(admitted.get(row.grp) ?? []), row.execution_id])
      }
      last.set(row.execution_id, row.new_status)
    }
    for (const grp of new Set(transaction.map((row) => row.grp))) {
      peak.set(grp, Math.max(peak.get(grp) ?? 0, running.get(grp)!))
    }
  }
  return {
    admitted,
    started: new Map(
      [...started].map(([grp, list]) => [
        grp,
        list.sort((a, b) => a.order - b.order).map((entry) => entry.id),
      ]),
    ),
    peak,
    unfinished: [...last].filter(([, status]) => status !== "finished").map(([id]) => id),
    queuedAtStart,
  }
}
