/**
 * Opens the database behind a handle and makes what its clients and runners share. `createAkter`
 * loads this module when it opens a database, so `import "akter"` loads none of what it imports:
 * the storage (node-postgres or PGlite, and kysely), the migrator, the clock, the wake-ups. It
 * imports nothing that imports akter.ts, which loads it.
 */
import type { Tracer } from "effect"
import * as Duration from "effect/Duration"
import { DEFAULT_MAX_PAYLOAD_BYTES, type AkterOptions } from "./akterOptions.js"
import { DEFAULT_CALL_TIMEOUT_MS } from "./client/databaseCalls.js"
import { LocalStarts } from "./engine/localStarts.js"
import { writeStartBatch, type StartBatcher } from "./engine/startBatch.js"
import { makeLogger, type Logger } from "./log.js"
import { AkterMetrics } from "./observability/metrics.js"
import { startTelemetry } from "./observability/telemetry.js"
import { FINISHED_CHANNEL, parseFinishedPayload } from "./outbox/notifications.js"
import { Wakeups } from "./outbox/wakeups.js"
import { makeClock, measureSkew, type DatabaseClock } from "./storage/clock.js"
import { migrate } from "./storage/migrator.js"
import { openStorage, type Storage } from "./storage/openStorage.js"
import { StatementBatcher } from "./storage/statementBatcher.js"
import { enableTenantIsolation } from "./storage/tenantIsolation.js"

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
  /** Sends the starts no runner here takes, of concurrent callers, as one statement. */
  readonly startBatcher: StartBatcher
  readonly log: Logger
  readonly tracer: Tracer.Tracer | undefined
  readonly metrics: AkterMetrics
  /** Starts listening for finished executions of other processes (Postgres), once. */
  readonly listenForResults: () => Promise<void>
  /** Whether finishes of other processes are heard now: listening, and notifications working. */
  readonly hearsResults: () => boolean
  readonly onClose: Set<() => Promise<void>>
}

const listenUrlOf = (options: AkterOptions): { listenUrl?: string } => {
  const listenUrl = options.listenUrl ?? process.env["AKTER_LISTEN_URL"]
  return listenUrl === undefined || listenUrl === "" ? {} : { listenUrl }
}

/**
 * The internals of a new handle over the database `options` name, migrated unless told not to,
 * and the handle's `close`. `createAkter` has checked the options.
 */
export const openHandle = async (
  options: AkterOptions,
): Promise<{ readonly internals: AkterInternals; readonly close: () => Promise<void> }> => {
  const metrics = new AkterMetrics()
  const telemetry =
    options.telemetry === undefined ? undefined : await startTelemetry(options.telemetry, metrics)
  const storage = await openStorage({
    ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
    ...(options.databaseUrl === undefined ? {} : { databaseUrl: options.databaseUrl }),
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
    ...listenUrlOf(options),
  }).catch(async (error: unknown) => {
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
    let listened = false
    const listenForResults = () => {
      if (storage.backend !== "postgres") return Promise.resolve()
      listening ??= storage
        .listen(FINISHED_CHANNEL, (payload) => {
          const { executionId, result } = parseFinishedPayload(payload)
          // A pass of this process announces its own finish, with the result.
          if (!wakeups.passRunsHere(executionId)) wakeups.announceFinished(executionId, result)
        })
        .then((stop) => {
          listened = true
          onClose.add(stop)
          // Finishes notified while the session was away were missed: the waiters read again.
          const stopRereading = storage.onListenRestored(() => wakeups.rereadAwaited())
          onClose.add(async () => stopRereading())
        })
      return listening
    }
    if (telemetry !== undefined) onClose.add(telemetry.close)
    const internals: AkterInternals = {
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
      startBatcher: new StatementBatcher((starts) =>
        writeStartBatch(storage.db, clock, starts, storage.backend === "postgres"),
      ),
      log: options.logger ?? makeLogger(),
      tracer: options.tracer ?? telemetry?.tracer,
      metrics,
      listenForResults,
      hearsResults: () => listened && storage.notifications().state === "working",
      onClose,
    }
    const close = async () => {
      for (const closeOne of [...onClose].reverse()) await closeOne()
      await storage.close()
    }
    return { internals, close }
  } catch (error) {
    await storage.close()
    await telemetry?.close()
    throw error
  }
}
