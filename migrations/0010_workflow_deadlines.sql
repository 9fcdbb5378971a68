-- Workflow deadlines (issue 15). `deadline_at_ms`: when an execution of a workflow with a deadline
-- is interrupted if it has not finished, fixed at its start (the manifest's deadline, or the
-- shorter one its start asked for) and never moved; null: no deadline. `interrupted_by`: why an
-- interrupt was asked for or recorded — a client's `request`, or the `deadline` — set by the first
-- interrupt request (a request made after the deadline passed counts as the deadline's) and by the
-- finish that records an interrupt, so the listing shows the cause without decoding results.
-- Interrupts recorded before this migration keep a null cause, read as `request`.
ALTER TABLE akter.executions ADD COLUMN deadline_at_ms bigint;
ALTER TABLE akter.executions ADD COLUMN interrupted_by text
  CHECK (interrupted_by IN ('request', 'deadline'));
