/**
 * One process at a time per PGlite data directory. PGlite is an embedded database: two processes
 * opening one directory each run their own Postgres over the same files, and neither sees the
 * other's writes (a runner never saw a second process's starts; a result waited in vain). So the
 * directory is locked: a process that opens it records itself (pid, host, command, and the URL
 * when it serves the database to others, as `akter dev` does) in a holder file beside it, and a
 * second process is refused with `DataDirectoryInUse` naming that holder and what to do.
 *
 * The holder files are `<dataDir>.lock/holder-<n>.json`, numbered by generation; the newest is the
 * lock. Each generation can be created by exactly one process (a hard link, which fails when the
 * name exists, of a fully written temporary file), and a process creates generation n + 1 only
 * after finding the holder of generation n dead — so of any number of processes racing for a free
 * or stale lock, exactly one wins. A holder is dead when it ran on this host and its process is
 * gone (on Linux: no process with its pid and start time, so a reused pid is not mistaken for it).
 * A holder on another host (a shared volume) is taken for alive: akter cannot tell from here.
 */
import {
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs"
import { hostname } from "node:os"
import { basename, join } from "node:path"
import { DataDirectoryInUse, type DataDirectoryHolder } from "../errors.js"

export interface PgliteLock {
  /** The holder file this process wrote. */
  readonly file: string
  /** Records the URL this process serves the database at, for the next process to be told. */
  setUrl(url: string): void
  /** Gives the directory up (idempotent). */
  release(): void
}

interface HolderRecord extends DataDirectoryHolder {
  /** Linux: the kernel's start time of the process, to tell a reused pid from the holder. */
  readonly startTicks?: string
}

const HOLDER = /^holder-(\d+)\.json$/

/** The lock folder of a data directory: beside it, so PGlite's own files stay untouched. */
export const lockFolderOf = (dataDir: string): string => `${realpathSync(dataDir)}.lock`

/** The start time of process `pid` in clock ticks since boot (Linux), else undefined. */
const startTicksOf = (pid: number): string | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // "pid (comm) state ppid …": comm may hold spaces and parentheses; starttime is field 22.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  } catch {
    return undefined
  }
}

const PROC_AVAILABLE = startTicksOf(process.pid) !== undefined

/** Whether the holder may still hold the directory. */
const isAlive = (holder: HolderRecord): boolean => {
  if (holder.host !== hostname()) return true
  if (PROC_AVAILABLE && holder.startTicks !== undefined) {
    return startTicksOf(holder.pid) === holder.startTicks
  }
  try {
    process.kill(holder.pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** The command line of this process, shortened for a message. */
const thisCommand = (): string => {
  const words = [basename(process.argv[0] ?? "node"), ...process.argv.slice(1)].join(" ")
  return words.length > 200 ? `${words.slice(0, 197)}...` : words
}

const generations = (folder: string): number[] =>
  readdirSync(folder)
    .flatMap((name) => {
      const match = HOLDER.exec(name)
      return match === null ? [] : [Number(match[1])]
    })
    .sort((a, b) => b - a)

const holderFile = (folder: string, generation: number) => join(folder, `holder-${generation}.json`)

/** The holder recorded in a file; undefined when the file is gone (released meanwhile). */
const readHolder = (file: string): HolderRecord | undefined => {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as HolderRecord
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined
    throw new Error(
      `cannot read the PGlite lock file ${file} (${String(error)}): delete it if no process uses the directory`,
    )
  }
}

/** The current holder of a data directory, if a live one has it: what `akter dev` serves. */
export const pgliteHolder = (dataDir: string): DataDirectoryHolder | undefined => {
  let folder: string
  try {
    folder = lockFolderOf(dataDir)
    const newest = generations(folder)[0]
    if (newest === undefined) return undefined
    const holder = readHolder(holderFile(folder, newest))
    return holder !== undefined && isAlive(holder) ? holder : undefined
  } catch {
    return undefined
  }
}

/**
 * Locks `dataDir` (which must exist) for this process, or throws `DataDirectoryInUse` naming the
 * live holder. A dead holder's lock is taken over. The invariant: at any time at most one live
 * process holds a directory's lock, however many race for it.
 */
export const lockPgliteDirectory = (
  dataDir: string,
  command: string = thisCommand(),
): PgliteLock => {
  const folder = lockFolderOf(dataDir)
  mkdirSync(folder, { recursive: true })
  const record: HolderRecord = {
    pid: process.pid,
    host: hostname(),
    command,
    since: new Date().toISOString(),
    ...(PROC_AVAILABLE ? { startTicks: startTicksOf(process.pid)! } : {}),
  }
  const temporary = join(folder, `.${process.pid}-${Math.random().toString(36).slice(2)}.tmp`)
  writeFileSync(temporary, JSON.stringify(record), { flush: true })
  try {
    // Each pass either wins, is refused, or lost a race another process won: a few suffice.
    for (let pass = 0; pass < 100; pass++) {
      const newest = generations(folder)[0] ?? 0
      if (newest > 0) {
        const holder = readHolder(holderFile(folder, newest))
        // Released between the listing and the read: look again.
        if (holder === undefined) continue
        if (isAlive(holder)) {
          const { startTicks: _, ...shown } = holder
          throw new DataDirectoryInUse(dataDir, folder, shown, hostname())
        }
      }
      const file = holderFile(folder, newest + 1)
      try {
        linkSync(temporary, file)
      } catch (error) {
        // Another process took this generation first: it is the holder now, or dead by the next look.
        if ((error as NodeJS.ErrnoException).code === "EEXIST") continue
        throw error
      }
      for (const older of generations(folder).filter((generation) => generation <= newest)) {
        try {
          unlinkSync(holderFile(folder, older))
        } catch {
          // Another taker removed it first.
        }
      }
      return holding(file, record)
    }
    throw new Error(
      `cannot lock the PGlite data directory ${dataDir}: its lock in ${folder} keeps changing`,
    )
  } finally {
    unlinkSync(temporary)
  }
}

/** Holder files of this process, removed when it exits without closing its databases. */
const heldFiles = new Set<string>()
let exitHookInstalled = false

const removeHeldFiles = () => {
  for (const file of heldFiles) {
    try {
      unlinkSync(file)
    } catch {
      // Already gone.
    }
  }
}

const holding = (file: string, record: HolderRecord): PgliteLock => {
  heldFiles.add(file)
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on("exit", removeHeldFiles)
  }
  return {
    file,
    setUrl: (url) => {
      if (!heldFiles.has(file)) return
      const temporary = `${file}.${process.pid}.tmp`
      writeFileSync(temporary, JSON.stringify({ ...record, url }), { flush: true })
      renameSync(temporary, file)
    },
    release: () => {
      if (!heldFiles.delete(file)) return
      try {
        unlinkSync(file)
      } catch {
        // Already gone: nothing to give up.
      }
    },
  }
}
