/**
 * The handle an application holds: one database (Postgres from a URL, or embedded PGlite), its
 * clock and its limits. Clients and runners are made from it; `close()` releases the database.
 */
export interface AkterOptions {
  /** Postgres connection string; when absent, embedded PGlite is used. */
  readonly databaseUrl?: string
  /** PGlite data directory (default `.akter/pglite`); `"memory"` keeps the database in memory. */
  readonly dataDir?: string
  /** Apply pending migrations on open (default true). */
  readonly migrate?: boolean
  /** Largest encoded input, event payload or activity result accepted, in bytes (default 1 MiB). */
  readonly maxPayloadBytes?: number
}

export interface Akter {
  close(): Promise<void>
}

export const createAkter = async (_options: AkterOptions = {}): Promise<Akter> => {
  throw new Error("createAkter: not implemented yet")
}
