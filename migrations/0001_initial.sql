-- akter's storage. Every row that belongs to an owner leads with the owner's routing key (a signed
-- 64-bit hash of tenant, owner type and owner id), so that an owner's rows sit together and a
-- distributed Postgres can shard by that one column. `bucket` is the top 8 bits of the routing key,
-- shifted to 0..255: the unit runners lease. Times are epoch milliseconds on the database's clock.

CREATE SCHEMA IF NOT EXISTS akter;

-- The database clock, shifted by an offset the runtime passes (a test clock advances it).
CREATE FUNCTION akter.now_ms(offset_ms bigint) RETURNS bigint
  LANGUAGE sql VOLATILE
  AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint + offset_ms $$;

-- Aborts the statement that calls it when `ok` is false: a write composed of several parts uses
-- it to refuse, as a whole, an outcome its parts cannot express (a held settle that matched no
-- pending row).
CREATE FUNCTION akter.require(ok boolean, detail text) RETURNS boolean
  LANGUAGE plpgsql
  AS $$ BEGIN IF NOT ok THEN RAISE EXCEPTION 'akter: %', detail; END IF; RETURN true; END $$;

-- One row per owner. `generation` is the fence: the epoch of the one activation allowed to write
-- the owner's executions; every engine write checks it under this row's lock. `event_sequence` is
-- the number of the owner's last event.
CREATE TABLE akter.owners (
  routing_key bigint NOT NULL,
  tenant text NOT NULL,
  owner_type text NOT NULL,
  owner_id text NOT NULL,
  generation bigint NOT NULL DEFAULT 0,
  event_sequence bigint NOT NULL DEFAULT 0,
  created_at_ms bigint NOT NULL,
  PRIMARY KEY (routing_key, tenant, owner_type, owner_id)
) WITH (fillfactor = 80);

-- The owner's event log, gap-free per owner; waits read it after their cursor.
CREATE TABLE akter.events (
  routing_key bigint NOT NULL,
  tenant text NOT NULL,
  owner_type text NOT NULL,
  owner_id text NOT NULL,
  sequence bigint NOT NULL CHECK (sequence > 0),
  name text NOT NULL,
  payload bytea NOT NULL,
  payload_version integer NOT NULL DEFAULT 0 CHECK (payload_version >= 0),
  emitted_at_ms bigint NOT NULL,
  PRIMARY KEY (routing_key, tenant, owner_type, owner_id, sequence),
  FOREIGN KEY (routing_key, tenant, owner_type, owner_id) REFERENCES akter.owners
);
CREATE INDEX events_by_name ON akter.events (routing_key, tenant, owner_type, owner_id, name, sequence);
CREATE INDEX events_by_time ON akter.events (emitted_at_ms);

CREATE TABLE akter.executions (
  routing_key bigint NOT NULL,
  execution_id text NOT NULL,
  bucket integer NOT NULL CHECK (bucket = (routing_key >> 56) + 128),
  tenant text NOT NULL,
  owner_type text NOT NULL,
  owner_id text NOT NULL,
  workflow text NOT NULL,
  execution_key text NOT NULL,
  -- Compatibility hash of the workflow manifest it started under (or was adopted onto).
  manifest_hash text NOT NULL,
  input bytea NOT NULL,
  -- The starting caller, as JSON: resumes and activities act on its behalf.
  caller text NOT NULL,
  -- Waits see the owner's events after this sequence.
  event_cursor bigint NOT NULL,
  status text NOT NULL CHECK (status IN ('running', 'suspended', 'finished')),
  interrupt boolean NOT NULL DEFAULT false,
  result bytea,
  started_at_ms bigint NOT NULL,
  finished_at_ms bigint,
  PRIMARY KEY (routing_key, execution_id),
  FOREIGN KEY (routing_key, tenant, owner_type, owner_id) REFERENCES akter.owners,
  CHECK ((status = 'finished') = (result IS NOT NULL AND finished_at_ms IS NOT NULL))
);
CREATE INDEX executions_open ON akter.executions (routing_key, tenant, owner_type, owner_id)
  WHERE status <> 'finished';
CREATE INDEX executions_finished ON akter.executions (bucket, finished_at_ms)
  WHERE status = 'finished';
CREATE INDEX executions_check ON akter.executions (owner_type, workflow, manifest_hash)
  WHERE status <> 'finished';
CREATE INDEX executions_listing ON akter.executions (started_at_ms DESC);

-- One row per (execution, step, attempt). `exit` is null while the step is pending. Activities
-- number attempts from 1; sleeps, waits, races and starts use 1; version markers use 0.
CREATE TABLE akter.steps (
  routing_key bigint NOT NULL,
  execution_id text NOT NULL,
  step text NOT NULL,
  attempt integer NOT NULL CHECK (attempt >= 0),
  kind text NOT NULL CHECK (kind IN ('activity', 'sleep', 'wait', 'race', 'start', 'version')),
  exit bytea,
  -- sleep: when it is due; wait: its timeout; a failed activity attempt: when the next may start.
  due_at_ms bigint,
  wait_event text,
  wait_after bigint,
  scanned bigint,
  matched bigint,
  version integer,
  started_at_ms bigint NOT NULL,
  settled_at_ms bigint,
  PRIMARY KEY (routing_key, execution_id, step, attempt),
  FOREIGN KEY (routing_key, execution_id) REFERENCES akter.executions ON DELETE CASCADE,
  CHECK ((kind = 'wait') = (wait_event IS NOT NULL AND wait_after IS NOT NULL AND scanned IS NOT NULL)),
  CHECK (kind <> 'sleep' OR due_at_ms IS NOT NULL),
  CHECK ((kind = 'version') = (version IS NOT NULL)),
  CHECK (kind <> 'version' OR exit IS NULL)
);
CREATE INDEX steps_pending_waits ON akter.steps (routing_key, wait_event)
  WHERE kind = 'wait' AND exit IS NULL;

-- Timers and intents. One keyed timer per execution (`kind = 'timer'`, `id` = execution id), and
-- staged starts of other workflows (`kind = 'start'`, `id` = the started execution's id).
-- `poked`: an emit or an interrupt made the timer due now while a pass may be running; a suspend
-- keeps such a timer due instead of moving it later, so a resume owed is never dropped. A claim
-- clears it (the pass it starts sees what poked it).
CREATE TABLE akter.outbox (
  routing_key bigint NOT NULL,
  kind text NOT NULL CHECK (kind IN ('timer', 'start')),
  id text NOT NULL,
  bucket integer NOT NULL CHECK (bucket = (routing_key >> 56) + 128),
  tenant text NOT NULL,
  owner_type text NOT NULL,
  owner_id text NOT NULL,
  due_at_ms bigint NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  poked boolean NOT NULL DEFAULT false,
  payload bytea,
  PRIMARY KEY (routing_key, kind, id)
);
CREATE INDEX outbox_due ON akter.outbox (bucket, due_at_ms);

-- Every manifest a runner accepted or an execution started under, by compatibility hash.
CREATE TABLE akter.manifests (
  owner_type text NOT NULL,
  workflow text NOT NULL,
  manifest_hash text NOT NULL,
  manifest jsonb NOT NULL,
  accepted_at_ms bigint NOT NULL,
  PRIMARY KEY (owner_type, workflow, manifest_hash)
);

-- Command ids already applied, so a client retry of an emit or an interrupt applies once.
CREATE TABLE akter.receipts (
  routing_key bigint NOT NULL,
  tenant text NOT NULL,
  owner_type text NOT NULL,
  owner_id text NOT NULL,
  command_id text NOT NULL,
  kind text NOT NULL,
  outcome text NOT NULL,
  created_at_ms bigint NOT NULL,
  PRIMARY KEY (routing_key, tenant, owner_type, owner_id, command_id)
);
CREATE INDEX receipts_by_time ON akter.receipts (created_at_ms);

-- Runner processes and the buckets they lease. A lease is valid until `expires_at_ms`; `epoch`
-- grows with every change of holder.
CREATE TABLE akter.runners (
  runner_id text PRIMARY KEY,
  started_at_ms bigint NOT NULL,
  heartbeat_at_ms bigint NOT NULL,
  info jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE akter.leases (
  bucket integer PRIMARY KEY CHECK (bucket BETWEEN 0 AND 255),
  runner_id text,
  epoch bigint NOT NULL DEFAULT 0,
  expires_at_ms bigint NOT NULL DEFAULT 0
);
INSERT INTO akter.leases (bucket) SELECT generate_series(0, 255);
