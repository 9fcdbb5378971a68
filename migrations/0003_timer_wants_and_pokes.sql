-- An execution its bucket's runner cannot replay (a newer or older deployment started it) names the
-- manifest it needs: `wanted_hash` on its timer. The bucket's runner stops claiming it, and any
-- runner serving that manifest claims it wherever its bucket is, so a rolling deploy never strands
-- an execution behind a lease held by the other version.
ALTER TABLE akter.outbox ADD COLUMN wanted_hash text;
CREATE INDEX outbox_wanted ON akter.outbox (wanted_hash, due_at_ms) WHERE wanted_hash IS NOT NULL;

-- `pokes` counts the emits and interrupts that made the timer due. A pass reads the count when it
-- loads its execution; its suspend moves or removes the timer only if the count is unchanged, so a
-- poke after the load stays a durable resume owed. The `poked` flag it replaces was cleared by the
-- claim, which lost the resume when the claim only woke a pass already running in a process that
-- then died before acting on it.
ALTER TABLE akter.outbox ADD COLUMN pokes bigint NOT NULL DEFAULT 0;
ALTER TABLE akter.outbox DROP COLUMN poked;
