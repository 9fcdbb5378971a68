-- Retention (runtime/retention/sweepRetention.ts): the sweep finds finished executions by when they
-- finished across all buckets; `executions_finished` leads with the bucket, so it adds this index.
-- Events and receipts are found by time through `events_by_time` and `receipts_by_time`.
CREATE INDEX executions_finished_at ON akter.executions (finished_at_ms)
  WHERE status = 'finished';
