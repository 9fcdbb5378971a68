-- Children (issue 15): an execution started by a `start` step records its parent, the step that
-- started it, whether that step awaits its result and what happens to it when the parent ends.
-- The child's finish wakes an awaiting parent (it pokes the parent's timer in the statement that
-- records its result); a parent's end interrupts its unfinished children whose policy says so
-- (a sweep after the parent's finish, through its timer). `parent_close` is null for an execution
-- no start step started.
ALTER TABLE akter.executions
  ADD COLUMN parent_routing_key bigint,
  ADD COLUMN parent_execution_id text,
  ADD COLUMN parent_step text,
  ADD COLUMN parent_awaits boolean NOT NULL DEFAULT false,
  ADD COLUMN parent_close text CHECK (parent_close IN ('interrupt', 'leave')),
  ADD CONSTRAINT executions_parent_link CHECK (
    (parent_execution_id IS NULL) = (parent_routing_key IS NULL)
    AND (parent_execution_id IS NULL) = (parent_step IS NULL)
    AND (parent_execution_id IS NULL) = (parent_close IS NULL)
    AND (parent_execution_id IS NOT NULL OR NOT parent_awaits));
-- A parent's end finds the children it takes down with it; inspect lists a parent's children.
CREATE INDEX executions_children ON akter.executions (parent_routing_key, parent_execution_id)
  WHERE parent_execution_id IS NOT NULL;
-- A start step's row names the execution it started (null for rows recorded before 0009): an
-- awaiting start replays from it while pending, and inspect shows the link from the parent's side.
ALTER TABLE akter.steps ADD COLUMN child_id text
  CHECK (kind = 'start' OR child_id IS NULL);
