/**
 * What Postgres itself can commit here, as the ceiling for akter's commits per second: pgbench
 * runs a transaction shaped like one activity step's write — a conditional UPDATE of one row and an
 * INSERT of the next, in one transaction — and, for comparison with issue 8's numbers, a plain
 * one-row INSERT, from 1 and from 16 clients, on a database of its own.
 */
import { execFile } from "node:child_process"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import pg from "pg"
import { createBenchDatabase } from "./benchDatabase.js"

const run = promisify(execFile)

const OWNERS = 10_000

const SCHEMA = `
  CREATE TABLE ceiling_owners (id int PRIMARY KEY, generation bigint NOT NULL DEFAULT 1);
  INSERT INTO ceiling_owners (id) SELECT generate_series(1, ${OWNERS});
  CREATE TABLE ceiling_steps (
    owner int NOT NULL, step bigserial, exit bytea, started_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, step));
  CREATE TABLE ceiling_rows (id bigserial PRIMARY KEY, payload bytea);
`

/** One step's write: a fenced, conditional update of the owner row and the next step's insert. */
const STEP_SCRIPT = `\\set owner random(1, ${OWNERS})
BEGIN;
UPDATE ceiling_owners SET generation = generation WHERE id = :owner AND generation > 0;
INSERT INTO ceiling_steps (owner, exit) VALUES (:owner, '\\x00deadbeef');
COMMIT;
`

const INSERT_SCRIPT = `INSERT INTO ceiling_rows (payload) VALUES ('\\x00deadbeef');
`

export interface CeilingResult {
  /** Transactions per second, by script and client count. */
  readonly stepTps: Readonly<Record<number, number>>
  readonly insertTps: Readonly<Record<number, number>>
  readonly seconds: number
}

export const CEILING_CLIENTS = [1, 16] as const

const pgbench = async (url: string, script: string, clients: number, seconds: number) => {
  const { stdout } = await run(
    "pgbench",
    [
      "-n",
      "-M",
      "prepared",
      "-c",
      String(clients),
      "-j",
      String(Math.min(clients, 2)),
      "-T",
      String(seconds),
      "-f",
      script,
      url,
    ],
    { timeout: (seconds + 60) * 1000 },
  )
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout)?.[1]
  if (tps === undefined) throw new Error(`pgbench printed no tps:\n${stdout}`)
  return Number(tps)
}

/** Runs the ceiling; throws with pgbench's own message when it cannot run. */
export const measureCeiling = async (serverUrl: string, seconds = 5): Promise<CeilingResult> => {
  const database = await createBenchDatabase(serverUrl, "ceiling_bench")
  const folder = await mkdtemp(join(tmpdir(), "akter-ceiling-"))
  try {
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    await client.query(SCHEMA)
    await client.end()
    const stepFile = join(folder, "step.sql")
    const insertFile = join(folder, "insert.sql")
    await writeFile(stepFile, STEP_SCRIPT)
    await writeFile(insertFile, INSERT_SCRIPT)
    const stepTps: Record<number, number> = {}
    const insertTps: Record<number, number> = {}
    for (const clients of CEILING_CLIENTS) {
      stepTps[clients] = await pgbench(database.url, stepFile, clients, seconds)
      insertTps[clients] = await pgbench(database.url, insertFile, clients, seconds)
    }
    return { stepTps, insertTps, seconds }
  } finally {
    await rm(folder, { recursive: true, force: true })
    await database.drop()
  }
}
