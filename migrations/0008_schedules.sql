-- The state of each declared schedule, shared by every runner that ticks it. A runner claims the
-- row (claimed_by, claimed_until_ms) to decide a tick, so that two runners never decide the same
-- tick differently; the starts themselves are idempotent by their key (derived from the schedule
-- and the tick), so a runner that dies mid-tick leaves nothing its successor would start twice.
CREATE TABLE akter.schedules (
  owner_type text NOT NULL,
  schedule text NOT NULL,
  -- Hash of the canonical declaration the cursor was computed under: a changed cron expression,
  -- interval or time zone restarts the cursor from now.
  definition text NOT NULL,
  -- The oldest tick not yet decided; null: from the next tick after now (new, or resumed).
  next_tick_ms bigint,
  -- A tick waiting for the previous execution to finish (overlap: queue).
  queued_tick_ms bigint,
  -- The execution the schedule started last: what overlap policies look at.
  last_execution_id text,
  last_tick_ms bigint,
  paused boolean NOT NULL DEFAULT false,
  claimed_by text,
  claimed_until_ms bigint NOT NULL DEFAULT 0,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (owner_type, schedule)
);
