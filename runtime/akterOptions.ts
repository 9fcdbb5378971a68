/**
 * What `createAkter` takes: the options of a handle, and the defaults that are not the database's.
 * Its own module so that the code that opens a handle (openHandle.ts) reads them without importing
 * akter.ts, which loads that code lazily.
 */
import type { Tracer } from "effect"
import type * as Duration from "effect/Duration"
import type { Logger } from "./log.js"
import type { TelemetryOptions } from "./observability/telemetry.js"

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
