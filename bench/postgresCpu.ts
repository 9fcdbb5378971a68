/**
 * CPU time Postgres spends for one database: the backends connected to it plus the server's own
 * processes (WAL writer, checkpointer, background writer, autovacuum), read from `/proc/PID/stat`
 * of the local server. Sampled before and after a measured window, so a trial reports how the
 * machine's two cores were split between Node and Postgres for its work. Processes that start and
 * end inside the window are missed (pools keep their connections, so that is rare).
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import pg from "pg"

const ticksPerSecond = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
  } catch {
    return 100
  }
})()

/** utime + stime of a process (all its threads), in milliseconds; undefined once it is gone. */
export const processCpuMs = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name, which is parenthesised and may contain spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1000
  } catch {
    return undefined
  }
}

export interface PostgresCpuSample {
  readonly byPid: ReadonlyMap<number, number>
}

/** A connection to the server's maintenance database, so sampling never counts in the trial's. */
export const maintenanceUrl = (databaseUrl: string): string => {
  const url = new URL(databaseUrl)
  url.pathname = "/postgres"
  return url.toString()
}

export class PostgresCpu {
  private constructor(
    private readonly client: pg.Client,
    private readonly database: string,
  ) {}

  static async open(databaseUrl: string): Promise<PostgresCpu> {
    const client = new pg.Client({ connectionString: maintenanceUrl(databaseUrl) })
    await client.connect()
    return new PostgresCpu(client, decodeURIComponent(new URL(databaseUrl).pathname.slice(1)))
  }

  async sample(): Promise<PostgresCpuSample> {
    const { rows } = await this.client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
       WHERE datname = $1 OR (backend_type <> 'client backend' AND datname IS NULL)`,
      [this.database],
    )
    const byPid = new Map<number, number>()
    for (const { pid } of rows) {
      const ms = processCpuMs(pid)
      if (ms !== undefined) byPid.set(pid, ms)
    }
    return { byPid }
  }

  /** Commits (read-only ones included) the server has counted for the database. */
  async committedTransactions(): Promise<number> {
    const { rows } = await this.client.query<{ xact_commit: string }>(
      `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`,
      [this.database],
    )
    return Number(rows[0]?.xact_commit ?? Number.NaN)
  }

  /** Bytes of WAL the whole server has written: other databases' work shows up too. */
  async walBytes(): Promise<number> {
    const { rows } = await this.client.query<{ lsn: string }>(
      `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS lsn`,
    )
    return Number(rows[0]!.lsn)
  }

  close(): Promise<void> {
    return this.client.end()
  }
}

/** Postgres CPU milliseconds between two samples (a process new in `after` counts from zero). */
export const cpuMsBetween = (before: PostgresCpuSample, after: PostgresCpuSample): number => {
  let total = 0
  for (const [pid, ms] of after.byPid) total += ms - (before.byPid.get(pid) ?? 0)
  return total
}
