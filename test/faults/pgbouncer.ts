/**
 * A real PgBouncer (Debian's) in front of a private cluster, with a config the test writes: its own
 * loopback port, trust auth, and the pool mode under test. Run as the `postgres` user when the test
 * is root (PgBouncer refuses root). Its log is kept for the assertions on what it dropped.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { execFileSync } from "node:child_process"
import { waitUntil } from "../support/waitUntil.js"
import { freePort, PGBOUNCER } from "./privateCluster.js"
import pg from "pg"

export interface Bouncer {
  readonly port: number
  /** `postgres://postgres@127.0.0.1:PORT/postgres` through PgBouncer. */
  readonly url: string
  log(): string
  stop(): Promise<void>
}

export const startPgbouncer = async (
  serverPort: number,
  mode: "transaction" | "session",
): Promise<Bouncer> => {
  const dir = mkdtempSync(path.join(tmpdir(), "akter-pgbouncer-"))
  const port = await freePort()
  const logFile = path.join(dir, "pgbouncer.log")
  writeFileSync(path.join(dir, "users.txt"), `"postgres" ""\n`)
  writeFileSync(
    path.join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `* = host=127.0.0.1 port=${serverPort}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${path.join(dir, "users.txt")}`,
      `pool_mode = ${mode}`,
      "max_client_conn = 1000",
      "default_pool_size = 40",
      "ignore_startup_parameters = extra_float_digits,options",
      `logfile = ${logFile}`,
      "server_reset_query = DISCARD ALL",
    ].join("\n") + "\n",
  )
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }))
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }))
    chownSync(dir, uid, gid)
  }
  const ini = path.join(dir, "pgbouncer.ini")
  const child: ChildProcess = asRoot
    ? spawn("runuser", ["-u", "postgres", "--", PGBOUNCER, ini], { stdio: "ignore" })
    : spawn(PGBOUNCER, [ini], { stdio: "ignore" })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  const log = () => {
    try {
      return readFileSync(logFile, "utf8")
    } catch {
      return ""
    }
  }
  await waitUntil(
    "PgBouncer accepts connections",
    async () => {
      const client = new pg.Client({ connectionString: url })
      client.on("error", () => {})
      try {
        await client.connect()
        await client.query("SELECT 1")
        return true
      } catch {
        return false
      } finally {
        await client.end().catch(() => {})
      }
    },
    { timeoutMs: 20_000, intervalMs: 100, details: log },
  )
  return {
    port,
    url,
    log,
    stop: async () => {
      child.kill("SIGTERM")
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
