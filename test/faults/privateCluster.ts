/**
 * A Postgres 15 cluster of the test's own — initdb and pg_ctl under a temp directory, on a free
 * loopback port — that a fault test may restart, stop hard or pause (SIGSTOP of the postmaster and
 * every backend) without touching the shared server. Run as the `postgres` user when the test runs
 * as root (initdb refuses root). Also `describeWithCluster`: a suite that needs the binaries fails
 * under CI=true when they are missing and says why it skips otherwise.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import path from "node:path"
import { describe, it } from "vitest"

export const POSTGRES_BIN = process.env["AKTER_POSTGRES_BIN"] ?? "/usr/lib/postgresql/15/bin"
export const PGBOUNCER = process.env["AKTER_PGBOUNCER"] ?? "/usr/sbin/pgbouncer"

const asRoot = process.getuid?.() === 0
/** The uid and gid of `postgres`, who runs the cluster when the test is root. */
const postgresUser = (): { uid: number; gid: number } => ({
  uid: Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })),
  gid: Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" })),
})

/** Runs a binary as the cluster's user; throws with its output when it fails. */
export const runAsPostgres = (binary: string, args: readonly string[]): string => {
  const [command, all] = asRoot
    ? ["runuser", ["-u", "postgres", "--", binary, ...args]]
    : [binary, [...args]]
  const result = spawnSync(command, all, { encoding: "utf8" })
  if (result.status !== 0) {
    throw new Error(`${binary} ${args.join(" ")} failed: ${result.stdout}${result.stderr}`)
  }
  return result.stdout
}

/** A free loopback port (the kernel's pick, released at once). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0))
    })
  })

/** Why the cluster cannot be started here, or undefined when it can. */
export const clusterMissing = (): string | undefined => {
  for (const name of ["initdb", "pg_ctl", "postgres"]) {
    if (!existsSync(path.join(POSTGRES_BIN, name))) {
      return `${path.join(POSTGRES_BIN, name)} is missing (install postgresql-15, or set AKTER_POSTGRES_BIN)`
    }
  }
  if (asRoot && spawnSync("id", ["-u", "postgres"]).status !== 0) {
    return "running as root and there is no postgres user to run initdb as"
  }
  return undefined
}

export const pgbouncerMissing = (): string | undefined =>
  existsSync(PGBOUNCER)
    ? undefined
    : `${PGBOUNCER} is missing (install pgbouncer, or set AKTER_PGBOUNCER)`

/**
 * `describe` that needs what `missing()` checks: without it, one test that fails under CI=true and
 * a skipped one naming the reason elsewhere.
 */
export const describeNeeding = (
  title: string,
  missing: () => string | undefined,
  suite: () => void,
) => {
  const reason = missing()
  if (reason === undefined) {
    describe(title, suite)
    return
  }
  describe(title, () => {
    if (process.env["CI"] === "true") {
      it(`needs ${reason}`, () => {
        throw new Error(`${reason}, and CI=true: the fault suite must run`)
      })
    } else it.skip(`skipped: ${reason}`, () => {})
  })
}

export interface PrivateCluster {
  readonly port: number
  readonly dir: string
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  readonly url: string
  restartFast(): void
  /** `pg_ctl stop -m immediate`: every backend killed, no checkpoint (crash recovery on start). */
  stopImmediate(): void
  start(): void
  /** SIGSTOP of the postmaster and all its children; returns the paused pids. */
  pause(): number[]
  /** SIGCONT of what `pause` stopped. */
  resume(): void
  postmasterPid(): number
  log(): string
  destroy(): void
}

/** Initializes and starts a cluster on a free port. */
export const startPrivateCluster = async (): Promise<PrivateCluster> => {
  const base = mkdtempSync(path.join(tmpdir(), "akter-pg-"))
  chmodSync(base, 0o755)
  const dir = path.join(base, "data")
  const logFile = path.join(base, "postgres.log")
  if (asRoot) {
    const { uid, gid } = postgresUser()
    chownSync(base, uid, gid)
  }
  runAsPostgres(path.join(POSTGRES_BIN, "initdb"), [
    "-D",
    dir,
    "-U",
    "postgres",
    "-A",
    "trust",
    "--no-sync",
    "-E",
    "UTF8",
  ])
  const port = await freePort()
  const options = [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    `-c unix_socket_directories=${base}`,
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=200",
  ].join(" ")
  const pgCtl = (...args: string[]) =>
    runAsPostgres(path.join(POSTGRES_BIN, "pg_ctl"), ["-D", dir, "-l", logFile, ...args])
  const start = () => pgCtl("-o", options, "-w", "-t", "60", "start")
  start()
  let paused: number[] = []
  const postmasterPid = () =>
    Number(readFileSync(path.join(dir, "postmaster.pid"), "utf8").split("\n")[0])
  return {
    port,
    dir,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restartFast: () => {
      pgCtl("-m", "fast", "-o", options, "-w", "-t", "60", "restart")
    },
    stopImmediate: () => {
      pgCtl("-m", "immediate", "-w", "-t", "60", "stop")
    },
    start,
    pause: () => {
      const postmaster = postmasterPid()
      const children = execFileSync("pgrep", ["-P", String(postmaster)], { encoding: "utf8" })
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map(Number)
      paused = [postmaster, ...children]
      for (const pid of paused) process.kill(pid, "SIGSTOP")
      return paused
    },
    resume: () => {
      for (const pid of paused) {
        try {
          process.kill(pid, "SIGCONT")
        } catch {
          // Gone meanwhile.
        }
      }
      paused = []
    },
    postmasterPid,
    log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
    destroy: () => {
      for (const pid of paused) {
        try {
          process.kill(pid, "SIGCONT")
        } catch {
          // Gone meanwhile.
        }
      }
      try {
        pgCtl("-m", "immediate", "-w", "stop")
      } catch {
        // Not running.
      }
      rmSync(base, { recursive: true, force: true })
    },
  }
}
