/**
 * Reading an execution from the client side, once its id is resolved (resolveExecution.ts): its
 * status, and its decoded result — typed success, typed declared error, interrupt, or defect.
 */
import { ResultTimeout } from "../errors.js"
import type { AkterInternals } from "../akter.js"
import { interruptCauseOf, isStoredResult } from "../model/exit.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { schemaOf } from "../model/schemaOf.js"
import { readExecutionState, readExecutionStateAwaiting } from "../engine/executionStore.js"
import { timeoutDelay } from "../storage/clock.js"
import { decodeJson } from "../storage/codec.js"
import type { ExecutionResult, ExecutionStatus } from "./clientApi.js"
import { idempotentCall, raceDeadline } from "./databaseCalls.js"
import type { ResolvedExecution } from "./resolveExecution.js"

// The resolution lives in resolveExecution.ts, which a client's `attach` reads without loading
// this module; the schedule ticker reads it here.
export { resolveExecution, type ResolvedExecution } from "./resolveExecution.js"

/** Turns a stored result into the client's typed result; a result it cannot read is a defect. */
export const decodeResult = (
  workflow: WorkflowRegistration,
  stored: Buffer,
): ExecutionResult<unknown, unknown> => {
  let result: unknown
  try {
    result = decodeJson(stored)
  } catch (error) {
    return { _tag: "Defect", message: `stored result is unreadable: ${String(error)}` }
  }
  if (!isStoredResult(result)) return { _tag: "Defect", message: "stored result is malformed" }
  switch (result._tag) {
    case "Success": {
      const output = workflow.canonical.output
      if (output === null) return { _tag: "Success", value: undefined }
      const decoded = schemaOf(output, "tolerant").safeParse(result.value)
      return decoded.success
        ? { _tag: "Success", value: decoded.data }
        : {
            _tag: "Defect",
            message: `result does not match ${workflow.owner}.${workflow.name}'s output type: ${decoded.error.message}`,
          }
    }
    case "Failure": {
      const { _tag: tag, ...fields } = result.error
      const make = workflow.errors[tag]
      const declared = workflow.canonical.errors[tag]
      if (make === undefined || declared === undefined) {
        return { _tag: "Defect", message: `execution failed with undeclared error ${tag}` }
      }
      const decoded = schemaOf(declared, "tolerant").safeParse(fields)
      if (!decoded.success) {
        return { _tag: "Defect", message: `error ${tag} does not match its declared fields` }
      }
      return { _tag: "Failure", error: new make(decoded.data as never) }
    }
    case "Die":
      return { _tag: "Defect", message: result.message }
    case "Interrupt":
      return { _tag: "Interrupted", cause: interruptCauseOf(result) }
  }
}

export const readStatus = async (
  internals: AkterInternals,
  workflow: WorkflowRegistration,
  execution: ResolvedExecution,
  /** The caller waits for the result once read: an unfinished execution is marked awaited. */
  options: { readonly awaiting?: boolean } = {},
): Promise<ExecutionStatus<unknown, unknown>> => {
  // Notifications exist on Postgres only; on PGlite every runner is in this process.
  const read =
    options.awaiting === true && internals.storage.backend === "postgres"
      ? readExecutionStateAwaiting
      : readExecutionState
  const state = await read(internals.storage.db, execution.owner.routingKey, execution.executionId)
  if (state === undefined) return { status: "unknown" }
  if (state.status === "finished" && state.result !== null) {
    return { status: "finished", result: decodeResult(workflow, state.result) }
  }
  return {
    status: state.status === "finished" ? "running" : state.status,
    interrupting: state.interrupt,
  }
}

/**
 * Polling is only the fallback: a finish in this process, or on Postgres in any process, wakes the
 * waiter at once. So the first re-read waits long enough not to cost a statement per workflow, and
 * while this process hears finishes, an execution marked awaited is re-read only every
 * `POLL_MAX_MS`: its finish will be announced, so a read before that finds nothing new.
 */
const POLL_FIRST_MS = 100
const POLL_MAX_MS = 1000
/** The longest pause between re-reads when notifications do not reach this process. */
export const FAST_POLL_MS = 200

/**
 * Waits for the execution's result: woken at once when a runner in this process (or, on Postgres,
 * any process) finishes it, and polling with backoff as the fallback. While a pass of this process
 * runs the execution, its finish hands the result over and nothing is read; a finish elsewhere
 * whose notification carries the result (a small one, without tenant isolation) is not read
 * either. An unknown id keeps waiting — its start may not have committed yet — until the timeout.
 */
export const awaitResult = async (
  internals: AkterInternals,
  workflow: WorkflowRegistration,
  execution: ResolvedExecution,
  timeoutMs: number | undefined,
): Promise<ExecutionResult<unknown, unknown>> => {
  const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs
  // A caller with a timeout waits out an outage up to it; one without, up to the call timeout.
  const bounds = {
    callTimeoutMs: timeoutMs === undefined ? internals.callTimeoutMs : Number.POSITIVE_INFINITY,
    deadline,
    onDeadline: () => new ResultTimeout(execution.executionId, timeoutMs ?? 0),
  }
  // Listening never fails the call: while it cannot connect, the reads below find the result.
  await raceDeadline(internals.listenForResults(), deadline - Date.now()).catch(() => {})
  let announced: Buffer | undefined
  let signalled = false
  let wake: (() => void) | undefined
  const stop = internals.wakeups.onFinished(execution.executionId, (result) => {
    announced ??= result
    signalled = true
    wake?.()
  })
  // Asked after the listener is registered: a start this process just wrote, whose finish has not
  // been announced, finishes with a notification this listener hears; nothing to read before it.
  const freshStart = internals.wakeups.takeFreshStart(execution.executionId)
  // A finish announced with its result before this caller asked: nothing to read.
  announced ??= freshStart.result
  let fresh = freshStart.waiting
  try {
    let delay = fresh ? POLL_MAX_MS : POLL_FIRST_MS
    for (;;) {
      if (announced !== undefined) return decodeResult(workflow, announced)
      // Asked after the listener is registered: a pass ending after this line is heard by it, and
      // says whether it finished the execution. Until then there is nothing to read or poll.
      const passHere = internals.wakeups.passRunsHere(execution.executionId)
      if (!passHere && !fresh) {
        // A database that is away or silent fails this call with DatabaseUnavailable by the
        // deadline (or the call timeout, if sooner), not with ResultTimeout.
        const status = await idempotentCall("result", bounds, () =>
          readStatus(internals, workflow, execution, { awaiting: true }),
        )
        if (status.status === "finished") return status.result
        // The read marked it awaited: its finish will be announced to this process.
        if (status.status !== "unknown" && internals.hearsResults()) {
          delay = Math.max(delay, POLL_MAX_MS)
        }
      }
      // Only the first wait may skip the read: after it, a read finds what the notification said.
      fresh = false
      const remaining = deadline - Date.now()
      if (remaining <= 0) throw new ResultTimeout(execution.executionId, timeoutMs ?? 0)
      if (!signalled) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(
            resolve,
            timeoutDelay(passHere ? remaining : Math.min(delay, remaining)),
          )
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        wake = undefined
        const slowest =
          internals.storage.notifications().state === "unavailable" ? FAST_POLL_MS : POLL_MAX_MS
        if (!passHere) delay = Math.min(delay * 2, slowest)
      }
      signalled = false
    }
  } finally {
    stop()
  }
}
