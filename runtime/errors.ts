/**
 * Every error akter shows a user. Each is a tagged error (catchable with `Effect.catchTag`, and an
 * `Error` for Promise callers) whose message says what was wrong, where, and what to do.
 */
import * as Data from "effect/Data"
import type { Finding } from "./compatibility/finding.js"
import type { InterruptCause } from "./model/exit.js"

export const MAX_KEY_BYTES = 256

/**
 * An execution key is empty, longer than 256 UTF-8 bytes, or not storable as Postgres text: it holds
 * a NUL character or a lone surrogate (`problem` then says which, and where).
 */
export class InvalidExecutionKey extends Data.TaggedError("InvalidExecutionKey")<{
  readonly bytes: number
  readonly problem: string | undefined
  readonly message: string
}> {
  constructor(bytes: number, problem?: string) {
    super({
      bytes,
      problem,
      message:
        problem === undefined
          ? `execution key is ${bytes} bytes; a key must be 1 to ${MAX_KEY_BYTES} UTF-8 bytes (shorten the key field, or hash it)`
          : `execution key ${problem}, which Postgres text cannot store exactly; a key must be well-formed Unicode without NUL (clean the key field, or hash it)`,
    })
  }
}

/** A string is not an execution id akter issued (not canonical, malformed, or oversized). */
export class InvalidExecutionId extends Data.TaggedError("InvalidExecutionId")<{
  readonly executionId: string
  readonly reason: string
  readonly message: string
}> {
  constructor(executionId: string, reason: string) {
    const shown = executionId.length > 80 ? `${executionId.slice(0, 77)}...` : executionId
    super({
      executionId,
      reason,
      message: `invalid execution id ${JSON.stringify(shown)}: ${reason}`,
    })
  }
}

/** An execution id names another tenant than the caller's: refused, and nothing is read. */
export class ForeignTenant extends Data.TaggedError("ForeignTenant")<{
  readonly executionId: string
  readonly message: string
}> {
  constructor(executionId: string) {
    super({ executionId, message: `execution ${executionId} belongs to another tenant` })
  }
}

/** An execution id names another owner type or workflow than the client it was given to. */
export class ForeignWorkflow extends Data.TaggedError("ForeignWorkflow")<{
  readonly executionId: string
  readonly expected: string
  readonly actual: string
  readonly message: string
}> {
  constructor(executionId: string, expected: string, actual: string) {
    super({
      executionId,
      expected,
      actual,
      message: `execution ${executionId} is a ${actual} execution, not ${expected}; attach it with the ${actual} client`,
    })
  }
}

/** An input or event payload fails its schema; `path` locates the first problem (`total.amount`). */
export class InvalidPayload extends Data.TaggedError("InvalidPayload")<{
  readonly what: string
  readonly path: string
  readonly issues: readonly { readonly path: string; readonly message: string }[]
  readonly message: string
}> {
  constructor(
    what: string,
    issues: readonly { readonly path: string; readonly message: string }[],
  ) {
    const first = issues[0] ?? { path: "", message: "invalid" }
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : ""
    super({
      what,
      path: first.path,
      issues,
      message: `${what} is invalid at ${first.path === "" ? "the top level" : first.path}: ${first.message}${more}`,
    })
  }
}

/** An encoded payload is over the configured limit (default 1 MiB). */
export class PayloadTooLarge extends Data.TaggedError("PayloadTooLarge")<{
  readonly what: string
  readonly bytes: number
  readonly limit: number
  readonly message: string
}> {
  constructor(what: string, bytes: number, limit: number) {
    super({
      what,
      bytes,
      limit,
      message: `${what} is ${bytes} bytes of JSON, over the limit of ${limit} (raise maxPayloadBytes in createAkter, or store the data elsewhere and pass a reference)`,
    })
  }
}

/** An emit names an event the owner's manifest does not declare. */
export class UnknownEvent extends Data.TaggedError("UnknownEvent")<{
  readonly owner: string
  readonly event: string
  readonly message: string
}> {
  constructor(owner: string, event: string, source: string) {
    super({ owner, event, message: `owner ${owner} declares no event "${event}" (see ${source})` })
  }
}

/** A `listExecutions` or `countExecutions` query is malformed; `field` names the part. */
export class InvalidQuery extends Data.TaggedError("InvalidQuery")<{
  readonly field: string
  readonly message: string
}> {
  constructor(field: string, problem: string) {
    super({ field, message: `invalid execution query: ${field} ${problem}` })
  }
}

/** `result()` stopped waiting; the execution itself goes on. */
export class ResultTimeout extends Data.TaggedError("ResultTimeout")<{
  readonly executionId: string
  readonly message: string
}> {
  constructor(executionId: string, waitedMs: number) {
    super({
      executionId,
      message: `execution ${executionId} did not finish within ${waitedMs} ms (it keeps running; call result() again)`,
    })
  }
}

/**
 * The database could not be reached, dropped the connection, or did not answer in time, and the
 * call's retries (with backoff, within its timeout) ran out. Nothing may have been written, or a
 * start or emit may have committed unseen: retrying with the same command id is safe.
 */
export class DatabaseUnavailable extends Data.TaggedError("DatabaseUnavailable")<{
  /** The call that gave up: `start Order.fulfill`, `result`, `emit PaymentConfirmed`. */
  readonly operation: string
  /** How long the call tried, in milliseconds. */
  readonly waitedMs: number
  /** The last failure: the driver's error, or a description of the wait that ran out. */
  readonly cause: unknown
  readonly message: string
}> {
  constructor(operation: string, waitedMs: number, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause)
    super({
      operation,
      waitedMs,
      cause,
      message: `${operation}: the database is unavailable (${reason}); gave up after ${waitedMs} ms (retry later; a retry with the same command id is safe)`,
    })
  }
}

/** The awaited execution was interrupted. */
export class ExecutionInterrupted extends Data.TaggedError("ExecutionInterrupted")<{
  readonly executionId: string
  /** Why: a client's `interrupt()` (`request`) or the workflow's `deadline`. */
  readonly interruptedBy: InterruptCause
  readonly message: string
}> {
  constructor(executionId: string, interruptedBy: InterruptCause = "request") {
    super({
      executionId,
      interruptedBy,
      message:
        interruptedBy === "deadline"
          ? `execution ${executionId} was interrupted: its deadline passed`
          : `execution ${executionId} was interrupted`,
    })
  }
}

/** The awaited execution died of a defect (an undeclared error or a bug in its body). */
export class ExecutionDefect extends Data.TaggedError("ExecutionDefect")<{
  readonly executionId: string
  readonly defect: string
  readonly message: string
}> {
  constructor(executionId: string, defect: string) {
    super({ executionId, defect, message: `execution ${executionId} died: ${defect}` })
  }
}

/**
 * An activity asked for its idempotency key after the key expired: the receiver may no longer
 * deduplicate it, so the attempt dies instead of risking a duplicate side effect.
 */
export class ActivityOutcomeUnknown extends Data.TaggedError("ActivityOutcomeUnknown")<{
  readonly executionId: string
  readonly step: string
  readonly attempt: number
  readonly message: string
}> {
  constructor(executionId: string, step: string, attempt: number) {
    super({
      executionId,
      step,
      attempt,
      message: `activity ${step} attempt ${attempt} of ${executionId} outlived its idempotency key; its outcome is unknown (catch the defect and start a new step to retry as a new operation)`,
    })
  }
}

/** The body called a step its workflow's manifest does not declare. */
export class UndeclaredStep extends Data.TaggedError("UndeclaredStep")<{
  readonly workflow: string
  readonly step: string
  readonly message: string
}> {
  constructor(workflow: string, step: string, source: string) {
    super({
      workflow,
      step,
      message: `workflow ${workflow} called step "${step}", which ${source} does not declare (declare it under steps: and run akter generate)`,
    })
  }
}

/** Who holds a PGlite data directory, as its lock records it. */
export interface DataDirectoryHolder {
  readonly pid: number
  readonly host: string
  /** The holder's command line, shortened. */
  readonly command: string
  /** When it took the directory (ISO 8601). */
  readonly since: string
  /** Where it serves the database to other processes (`akter dev`), if it does. */
  readonly url?: string
}

/**
 * A PGlite data directory is open in another live process. PGlite is one process's database: two
 * processes on one directory would each see only their own writes, so the second is refused.
 */
export class DataDirectoryInUse extends Data.TaggedError("DataDirectoryInUse")<{
  readonly dataDir: string
  readonly lockFolder: string
  readonly holder: DataDirectoryHolder
  readonly message: string
}> {
  /** `thisHost`: where the lock was read; a holder elsewhere may be dead without akter knowing. */
  constructor(dataDir: string, lockFolder: string, holder: DataDirectoryHolder, thisHost: string) {
    const who = `process ${holder.pid} on ${holder.host} (${holder.command}, since ${holder.since})`
    const message =
      holder.url !== undefined
        ? `the PGlite data directory ${dataDir} is served by ${who} at ${holder.url}: connect to it with DATABASE_URL=${holder.url} (or --database-url) instead of opening the directory`
        : `the PGlite data directory ${dataDir} is in use by ${who}, and PGlite is one process's database: to share it between a runner and other processes, run the runner under \`akter dev\` (it serves the directory and prints the DATABASE_URL the others use), or use Postgres (DATABASE_URL=postgres://…); else stop that process first${holder.host === thisHost ? "" : ` (akter cannot tell from ${thisHost} whether it still runs; if it does not, delete ${lockFolder})`}`
    super({ dataDir, lockFolder, holder, message })
  }
}

/**
 * A runner's manifests cannot replay some open executions, so it refused to start and recorded
 * nothing. One line per problem: owner type and workflow (or event), rule, how many open executions
 * it concerns and when the oldest started.
 */
export class IncompatibleDeployment extends Data.TaggedError("IncompatibleDeployment")<{
  readonly problems: readonly Finding[]
  readonly message: string
}> {
  constructor(problems: readonly Finding[]) {
    const lines = problems.map((problem) => {
      const subject =
        problem.workflow !== undefined
          ? `${problem.owner}.${problem.workflow}`
          : problem.event !== undefined
            ? `${problem.owner} event ${problem.event}`
            : problem.owner
      const open =
        problem.open === undefined
          ? "open executions"
          : `${problem.open.count} open execution${problem.open.count === 1 ? "" : "s"}, oldest started ${new Date(problem.open.oldestStartedAtMs).toISOString()}`
      return `  ${subject}  ${problem.rule}  ${open}: ${problem.message}`
    })
    super({
      problems,
      message: [
        "this runner's manifests cannot replay open executions; it refused to start and recorded nothing:",
        ...lines,
        "deploy a build that still declares what they recorded, or let them finish first (`akter check --database-url` lists them, with the fix for each rule)",
      ].join("\n"),
    })
  }
}
