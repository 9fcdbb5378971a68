/**
 * Which failures mean "the database is unreachable right now" rather than "this statement is
 * wrong": the class a caller may retry once the database is back. A restarted, stopped, failed-over
 * or paused server shows up as one of these, from the server (SQLSTATE class 08, 57P01–57P03, a
 * standby that cannot take writes yet) or from the driver and the socket (refused, reset, closed,
 * timed out). Everything else — constraint violations, syntax, serialization — is not.
 *
 * Beside them, the conflicts (`isTransientConflict`): a statement the server aborted because of
 * another transaction, rolled back whole, which an idempotent call may simply run again.
 */

/** SQLSTATEs the server sends when it is going away or cannot serve this session now. */
const CONNECTION_SQLSTATES = new Set([
  "57P01", // admin_shutdown: a fast stop or restart terminated the session
  "57P02", // crash_shutdown: another backend crashed, the server resets every session
  "57P03", // cannot_connect_now: the server is starting up or shutting down
  "53300", // too_many_connections: a brief state while sessions of the old server linger
  "25006", // read_only_sql_transaction: a standby not yet promoted during a failover
])

/** Node socket error codes of a connection that failed or died. */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTCONN",
  "EADDRNOTAVAIL",
  "ECONNABORTED",
])

/** Messages of node-postgres and pg-pool for the same situations (they carry no code). */
const DRIVER_MESSAGES = [
  "Connection terminated",
  "connection timeout",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
  "Cannot use a pool after calling end on the pool",
  "the database system is starting up",
  "the database system is shutting down",
  "the database system is in recovery mode",
  "server closed the connection unexpectedly",
  // PgBouncer, when its server connection went away or it cannot reach the server.
  "server conn crashed",
  "server login has been failing",
  "no more connections allowed",
  "query_wait_timeout",
  "client_idle_timeout",
]

const codeOf = (error: object): unknown => (error as { code?: unknown }).code

/** SQLSTATEs of a statement aborted for a conflict with another transaction: deadlock, serialization. */
const CONFLICT_SQLSTATES: ReadonlySet<unknown> = new Set(["40P01", "40001"])

/**
 * Whether the server aborted `error`'s statement for a conflict with another transaction (deadlock
 * detected, serialization failure): it was rolled back whole, so an idempotent call may run it
 * again. Seen in CI: a client's interrupt chosen as a deadlock's victim beside a pass.
 */
export const isTransientConflict = (error: unknown): boolean =>
  typeof error === "object" && error !== null && CONFLICT_SQLSTATES.has(codeOf(error))

/**
 * Whether `error` (or an error it wraps as `cause`, or one of an AggregateError's) means the
 * database could not be reached or dropped the session: retrying after a pause may succeed.
 *
 * @example
 * isConnectionError(Object.assign(new Error("terminating connection"), { code: "57P01" })) // true
 * isConnectionError(Object.assign(new Error("duplicate key"), { code: "23505" })) // false
 */
export const isConnectionError = (error: unknown, depth = 0): boolean => {
  if (typeof error !== "object" || error === null || depth > 4) return false
  const code = codeOf(error)
  if (typeof code === "string") {
    if (code.startsWith("08") || CONNECTION_SQLSTATES.has(code) || SOCKET_CODES.has(code)) {
      return true
    }
  }
  const message = (error as { message?: unknown }).message
  if (typeof message === "string" && isConnectionMessage(message)) return true
  const errors = (error as { errors?: unknown }).errors
  if (Array.isArray(errors) && errors.some((inner) => isConnectionError(inner, depth + 1))) {
    return true
  }
  return isConnectionError((error as { cause?: unknown }).cause, depth + 1)
}

/** The same test on a message alone: for failures that reached this code only as text. */
export const isConnectionMessage = (message: string): boolean =>
  DRIVER_MESSAGES.some((known) => message.includes(known)) ||
  [...SOCKET_CODES].some((code) => message.includes(code)) ||
  /terminating connection due to (administrator command|crash of another server process)/.test(
    message,
  )
