-- listExecutions and `akter inspect` page through executions newest (or oldest) first, ties broken
-- by execution id, so a cursor (start time, execution id) resumes exactly where a page ended. Each
-- kind of filter leads an index that ends in that order, so a page reads only its own rows: all
-- executions; those of an owner type or a workflow; those of an owner in any tenant (an owner of a
-- known tenant is found through the primary key, by its routing key).
DROP INDEX akter.executions_listing;
CREATE INDEX executions_by_start ON akter.executions (started_at_ms DESC, execution_id DESC);
CREATE INDEX executions_by_workflow
  ON akter.executions (owner_type, workflow, started_at_ms DESC, execution_id DESC);
CREATE INDEX executions_by_owner
  ON akter.executions (owner_type, owner_id, started_at_ms DESC, execution_id DESC);
