-- A finished execution's outcome (succeeded, failed, interrupted, defect) recorded beside its
-- result, in the statement that records the result, so the studio can list and count finished
-- executions by how they ended without decoding (and decompressing) every result. Results recorded
-- before this migration get it here when stored uncompressed (format byte 0: plain JSON, which
-- every result under 256 bytes is); a compressed older result keeps a null outcome, shown as
-- "unknown".
ALTER TABLE akter.executions ADD COLUMN outcome text
  CHECK (outcome IN ('succeeded', 'failed', 'interrupted', 'defect'));
UPDATE akter.executions
  SET outcome = CASE convert_from(substring(result FROM 2), 'UTF8')::jsonb ->> '_tag'
    WHEN 'Success' THEN 'succeeded' WHEN 'Failure' THEN 'failed'
    WHEN 'Interrupt' THEN 'interrupted' ELSE 'defect' END
  WHERE status = 'finished' AND get_byte(result, 0) = 0;
-- The studio's lists: finished executions of one outcome, newest first (optionally of one
-- workflow), in the listing order of migration 0005, so a cursor page reads only its rows.
CREATE INDEX executions_by_outcome
  ON akter.executions (outcome, started_at_ms DESC, execution_id DESC) WHERE status = 'finished';
CREATE INDEX executions_by_workflow_outcome
  ON akter.executions (owner_type, workflow, outcome, started_at_ms DESC, execution_id DESC)
  WHERE status = 'finished';
-- The overview: finishes per minute and failures of the last hour and day, by finish time.
CREATE INDEX executions_by_finish
  ON akter.executions (finished_at_ms DESC) INCLUDE (owner_type, workflow, outcome, tenant)
  WHERE status = 'finished';
-- Open executions oldest first (the overview's oldest open one), and the open filter's pages.
CREATE INDEX executions_open_by_start
  ON akter.executions (started_at_ms DESC, execution_id DESC) WHERE status <> 'finished';
