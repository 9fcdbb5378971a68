/**
 * Every error akter shows a user. Each is a tagged error (catchable with `Effect.catchTag`, and an
 * `Error` for Promise callers) whose message says what was wrong, where, and what to do.
 */
import { Data } from "effect"

export const MAX_KEY_BYTES = 256

/** An execution key is empty or longer than 256 UTF-8 bytes. */
export class InvalidExecutionKey extends Data.TaggedError("InvalidExecutionKey")<{
  readonly bytes: number
  readonly message: string
}> {
  constructor(bytes: number) {
    super({
      bytes,
      message: `execution key is ${bytes} bytes; a key must be 1 to ${MAX_KEY_BYTES} UTF-8 bytes (shorten the key field, or hash it)`,
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

/** The awaited execution was interrupted. */
export class ExecutionInterrupted extends Data.TaggedError("ExecutionInterrupted")<{
  readonly executionId: string
  readonly message: string
}> {
  constructor(executionId: string) {
    super({ executionId, message: `execution ${executionId} was interrupted` })
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

/**
 * A runner's manifests cannot replay some open executions, so it refused to start and recorded
 * nothing. One line per problem: owner type and workflow (or event), rule, how many open executions
 * it concerns and when the oldest started.
 */
export class IncompatibleDeployment extends Data.TaggedError("IncompatibleDeployment")<{
  readonly problems: readonly import("./compatibility/finding.js").Finding[]
  readonly message: string
}> {
  constructor(problems: readonly import("./compatibility/finding.js").Finding[]) {
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
