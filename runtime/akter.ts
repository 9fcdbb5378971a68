/**
 * The handle an application holds: one database (Postgres from a URL, or embedded PGlite), its
 * clock and its limits. Clients and runners are made from it; `close()` releases the database.
 */
import type { Tracer } from "effect"
import * as Duration from "effect/Duration"
import { DEFAULT_CALL_TIMEOUT_MS } from "./client/databaseCalls.js"
import { makeLogger, type Logger } from "./log.js"
import { AkterMetrics } from "./observability/metrics.js"
import { startTelemetry, type TelemetryOptions } from "./observability/telemetry.js"
import { makeClock, measureSkew, type DatabaseClock } from "./storage/clock.js"
import { migrate } from "./storage/migrator.js"
import type { Storage } from "./storage/openStorage.js"
import { enableTenantIsolation } from "./storage/tenantIsolation.js"
import { FINISHED_CHANNEL } from "./outbox/notifications.js"
import { Wakeups } from "./outbox/wakeups.js"
import { LocalStarts } from "./engine/localStarts.js"

export interface AkterOptions {
  /** Postgres connection string; when absent, embedded PGlite is used. */
  readonly databaseUrl?: string | undefined
  /** PGlite data directory (default `.akter/pglite`); `"memory"` keeps the database in memory. */
  readonly dataDir?: string | undefined
  /** Apply pending migrations on open (default true). */
  readonly migrate?: boolean | undefined
  /** Largest encoded input, event payload or activity result accepted, in bytes (default 1 MiB). */
  readonly maxPayloadBytes?: number | undefined
  /** Pooled Postgres connections (default 10). */
  readonly poolSize?: number | undefined
  /**
   * A direct Postgres connection string for notifications (LISTEN), when `databaseUrl` goes
   * through a connection pooler in transaction mode, which drops them. Default: the
   * `AKTER_LISTEN_URL` environment variable, else `databaseUrl`. See "Deploying behind a
   * connection pooler" in the README.
   */
  readonly listenUrl?: string | undefined
  /**
   * The longest a client call (start, emit, status, result, interrupt) waits for a database that
   * is unreachable or does not answer, retrying with backoff, before it fails with
   * `DatabaseUnavailable` (default 10 seconds). A `result({ timeout })` sooner than this wins.
   */
  readonly callTimeout?: Duration.Input | undefined
  /**
   * Row-level-security mode (Postgres): every connection names this tenant in the `akter.tenant`
   * setting, so the policies of `enableTenantIsolation` show it only this tenant's rows. Clients of
   * such a handle must act for this tenant; runners need a handle without it (they serve every
   * tenant, connecting as the tables' owner).
   */
  readonly tenant?: string | undefined
  /**
   * Turns on row-level security (Postgres) for applications connecting as `role`: each of their
   * connections sees and writes only the tenant its `akter.tenant` setting names (a handle made
   * with `tenant`). Applied after migrating, idempotently; needs a handle connected as the owner of
   * akter's tables.
   */
  readonly tenantIsolation?: { readonly role: string } | undefined
  readonly logger?: Logger | undefined
  /**
   * Sends spans and metrics to an OpenTelemetry collector over OTLP/HTTP. `{}` reads the standard
   * `OTEL_EXPORTER_OTLP_ENDPOINT` (and related) variables and sends nothing without them.
   */
  readonly telemetry?: TelemetryOptions | undefined
  /**
   * An Effect tracer of the application's own that receives spans of passes, steps and client
   * calls; it takes precedence over the tracer of `telemetry`. Absent both: no spans are made.
   */
  readonly tracer?: Tracer.Tracer | undefined
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
  /** The bound on a client call's wait for an unavailable database (`callTimeout`). */
  readonly callTimeoutMs: number
  readonly wakeups: Wakeups
  /** The runners of this process that take its starts into their passes (engine/localStarts.ts). */
  readonly localStarts: LocalStarts
  readonly log: Logger
  readonly tracer: Tracer.Tracer | undefined
  readonly metrics: AkterMetrics
  /** Starts listening for finished executions of other processes (Postgres), once. */
  readonly listenForResults: () => Promise<void>
  readonly onClose: Set<() => Promise<void>>
}

const listenUrlOf = (options: AkterOptions): { listenUrl?: string } => {
  const listenUrl = options.listenUrl ?? process.env["AKTER_LISTEN_URL"]
  return listenUrl === undefined || listenUrl === "" ? {} : { listenUrl }
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
  if (options.tenantIsolation !== undefined && options.databaseUrl === undefined) {
    throw new Error(
      "createAkter: `tenantIsolation` (row-level security) needs Postgres (`databaseUrl`); the embedded PGlite database has one user",
    )
  }
  if (options.tenantIsolation !== undefined && options.tenant !== undefined) {
    throw new Error(
      "createAkter: `tenantIsolation` is applied by a handle connected as the tables' owner, not by a tenant's handle (`tenant`)",
    )
  }
  const metrics = new AkterMetrics()
  const telemetry =
    options.telemetry === undefined ? undefined : await startTelemetry(options.telemetry, metrics)
  // The driver (node-postgres), kysely's connection and schema classes and the LISTEN session are
  // loaded here, when a database is opened, not by `import "akter"`: a process that only imports
  // akter (a script, a test collecting, a CLI command that reaches no database) does not pay for
  // them. A failed load rejects here, with the loader's error, like a failed open.
  const storage = await import("./storage/openStorage.js")
    .then(({ openStorage }) =>
      openStorage({
        ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
        ...(options.databaseUrl === undefined ? {} : { databaseUrl: options.databaseUrl }),
        ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
        ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
        ...listenUrlOf(options),
      }),
    )
    .catch(async (error: unknown) => {
      await telemetry?.close()
      throw error
    })
  try {
    // A tenant-restricted role does not own the schema: it cannot (and must not) migrate it.
    if (options.migrate ?? options.tenant === undefined) await migrate(storage.db)
    if (options.tenantIsolation !== undefined) {
      await enableTenantIsolation(storage.db, options.tenantIsolation)
    }
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
          // Finishes notified while the session was away were missed: the waiters read again.
          const stopRereading = storage.onListenRestored(() => wakeups.rereadAwaited())
          onClose.add(async () => stopRereading())
        })
      return listening
    }
    if (telemetry !== undefined) onClose.add(telemetry.close)
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
      callTimeoutMs:
        options.callTimeout === undefined
          ? DEFAULT_CALL_TIMEOUT_MS
          : Duration.toMillis(options.callTimeout),
      wakeups,
      localStarts: new LocalStarts(),
      log: options.logger ?? makeLogger(),
      tracer: options.tracer ?? telemetry?.tracer,
      metrics,
      listenForResults,
      onClose,
    })
    return akter
  } catch (error) {
    await storage.close()
    await telemetry?.close()
    throw error
  }
}
