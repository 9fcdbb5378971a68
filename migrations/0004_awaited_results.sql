-- `awaited`: a caller in a process that does not run the execution waits for its result. Only then
-- does the finish NOTIFY: a notification costs every finish a write to the server's notify queue
-- under its global lock, and a caller in the runner's own process is handed the result directly.
-- A start not handed to a runner of its process sets it (its caller may await elsewhere); a caller
-- that reads the result and finds it unfinished sets it before it waits.
ALTER TABLE akter.executions ADD COLUMN awaited boolean NOT NULL DEFAULT false;
