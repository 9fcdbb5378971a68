/**
 * The handle an application holds: one database (Postgres from a URL, or embedded PGlite), its
 * clock and its limits. Clients and runners are made from it; `close()` releases the database.
 *
 * This module is what `import "akter"` loads of the handle: `createAkter` loads the code that opens
 * it (openHandle.ts: the driver, kysely, the migrator, the clock) when it opens a database.
 */
import type { AkterInternals } from "./openHandle.js"
import type { AkterOptions } from "./akterOptions.js"
import type { Storage } from "./storage/openStorage.js"
// Refuses, on import, a compiled copy inside akter's own repository (see packageFiles.ts).
import "./packageFiles.js"

export { DEFAULT_MAX_PAYLOAD_BYTES, type AkterOptions } from "./akterOptions.js"
export type { AkterInternals } from "./openHandle.js"

export interface Akter {
  /** `postgres` or `pglite`. */
  readonly backend: Storage["backend"]
  close(): Promise<void>
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
  // Loaded here, when a database is opened, not by `import "akter"`: a process that only imports
  // akter (a script, a test collecting, a CLI command that reaches no database) does not pay for
  // the driver, kysely or the migrator. A failed load rejects here, with the loader's error, like
  // a failed open.
  const { openHandle } = await import("./openHandle.js")
  const { internals, close } = await openHandle(options)
  const akter: Akter = { backend: internals.storage.backend, close }
  internalsByHandle.set(akter, internals)
  return akter
}
