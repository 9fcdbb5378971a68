-- Concurrency keys (issue 15): a workflow that declares one groups its executions by the value of
-- an input field, and at most `limit` of a group run at once across all runners; the others are
-- `queued`, with no timer (no runner sees them), until a finish in their group admits them in the
-- order they started (`queue_order`, drawn while the group's advisory lock is held). `concurrency_key`
-- is the key path the execution was started under, `concurrency_value` the value at that path; a
-- group is (tenant, owner type, workflow, key path, value), so a changed key path never mixes the
-- executions started under the old one with the new ones.
ALTER TABLE akter.executions DROP CONSTRAINT executions_status_check;
ALTER TABLE akter.executions ADD CONSTRAINT executions_status_check
  CHECK (status IN ('queued', 'running', 'suspended', 'finished'));
ALTER TABLE akter.executions ADD COLUMN concurrency_key text;
ALTER TABLE akter.executions ADD COLUMN concurrency_value text;
ALTER TABLE akter.executions ADD COLUMN queue_order bigint;
ALTER TABLE akter.executions ADD CONSTRAINT executions_concurrency_check
  CHECK ((concurrency_key IS NULL) = (concurrency_value IS NULL)
    AND (concurrency_key IS NULL) = (queue_order IS NULL)
    AND (status <> 'queued' OR concurrency_key IS NOT NULL));
CREATE SEQUENCE akter.queue_order;
-- A group's open executions: what an admission counts (running, suspended) and takes in order (queued).
CREATE INDEX executions_by_concurrency
  ON akter.executions (owner_type, workflow, concurrency_value, tenant, concurrency_key, queue_order)
  WHERE concurrency_key IS NOT NULL AND status <> 'finished';
