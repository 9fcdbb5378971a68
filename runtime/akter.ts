/**
 * The handle an application holds: one database (Postgres from a URL, or embedded PGlite), its
 * clock and its limits. Clients and runners are made from it; `close()` releases the database.
 */
import type { Tracer } from "effect"
import { makeLogger, type Logger } from "./log.js"
import { makeClock, measureSkew, type DatabaseClock } from "./storage/clock.js"
import { migrate } from "./storage/migrator.js"
import { openStorage, type Storage } from "./storage/openStorage.js"
import { FINISHED_CHANNEL, Wakeups } from "./outbox/wakeups.js"

export interface AkterOptions {
  /** Postgres connection string; when absent, embedded PGlite is used. */
  readonly databaseUrl?: string
  /** PGlite data directory (default `.akter/pglite`); `"memory"` keeps the database in memory. */
  readonly dataDir?: string
  /** Apply pending migrations on open (default true). */
  readonly migrate?: boolean
  /** Largest encoded input, event payload or activity result accepted, in bytes (default 1 MiB). */
  readonly maxPayloadBytes?: number
  /** Pooled Postgres connections (default 10). */
  readonly poolSize?: number
  /**
   * Row-level-security mode (Postgres): every connection names this tenant in the `akter.tenant`
   * setting, so the policies of `enableTenantIsolation` show it only this tenant's rows. Clients of
   * such a handle must act for this tenant; runners need a handle without it (they serve every
   * tenant, connecting as the tables' owner).
   */
  readonly tenant?: string
  readonly logger?: Logger
  /**
   * Effect tracer that receives spans of passes, steps and client calls (an OpenTelemetry
   * exporter's tracer, for instance). Absent: no spans are made.
   */
  readonly tracer?: Tracer.Tracer
}

export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024

export interface Akter {
  /** `postgres` or `pglite`. */
  readonly backend: Storage["backend"]
  close(): Promise<void>
}

/** What clients and runners made from a handle share. Not part of the public API. */
export interface AkterInternals {
  readonly storage: Storage
  /** The tenant every connection is restricted to (row-level-security mode), if any. */
  readonly tenant: string | undefined
  readonly clock: DatabaseClock
  readonly maxPayloadBytes: number
  readonly wakeups: Wakeups
  readonly log: Logger
  readonly tracer: Tracer.Tracer | undefined
  /** Starts listening for finished executions of other processes (Postgres), once. */
  readonly listenForResults: () => Promise<void>
  readonly onClose: Set<() => Promise<void>>
}

const internalsByHandle = new WeakMap<Akter, AkterInternals>()

export const internalsOf = (akter: Akter): AkterInternals => {
  const internals = internalsByHandle.get(akter)
  if (internals === undefined) throw new TypeError("not an akter handle (use createAkter)")
  return internals
}

/**
 * Opens akter's database, migrating it unless told not to.
 *
 * @example
 * const akter = await createAkter({ databaseUrl: process.env.DATABASE_URL })
 * const orders = Order.client(akter)
 * await akter.close()
 */
export const createAkter = async (options: AkterOptions = {}): Promise<Akter> => {
  if (options.tenant !== undefined && options.databaseUrl === undefined) {
    throw new Error(
      "createAkter: `tenant` (row-level-security mode) needs Postgres (`databaseUrl`)",
    )
  }
  const storage = await openStorage({
    ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
    ...(options.databaseUrl === undefined ? {} : { databaseUrl: options.databaseUrl }),
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
  })
  try {
    // A tenant-restricted role does not own the schema: it cannot (and must not) migrate it.
    if (options.migrate ?? options.tenant === undefined) await migrate(storage.db)
    const clock = makeClock()
    await measureSkew(storage.db, clock)
    const wakeups = new Wakeups()
    const onClose = new Set<() => Promise<void>>()
    let listening: Promise<void> | undefined
    const listenForResults = () => {
      if (storage.backend !== "postgres") return Promise.resolve()
      listening ??= storage
        .listen(FINISHED_CHANNEL, (executionId) => {
          // A pass of this process announces its own finish, with the result.
          if (!wakeups.passRunsHere(executionId)) wakeups.announceFinished(executionId)
        })
        .then((stop) => {
          onClose.add(stop)
        })
      return listening
    }
    const akter: Akter = {
      backend: storage.backend,
      close: async () => {
        for (const close of [...onClose].reverse()) await close()
        await storage.close()
      },
    }
    internalsByHandle.set(akter, {
      storage,
      tenant: options.tenant,
      clock,
      maxPayloadBytes: options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
      wakeups,
      log: options.logger ?? makeLogger(),
      tracer: options.tracer,
      listenForResults,
      onClose,
    })
    return akter
  } catch (error) {
    await storage.close()
    throw error
  }
}
