/**
 * The work behind an owner client's calls: validating and writing a start, an emit, and reading or
 * interrupting an execution. ownerClient.ts builds the client objects and loads this module when
 * the first client is made, so `import "akter"` loads none of what it brings (the stores, kysely,
 * the payload schemas and zod).
 */
import { randomUUID } from "node:crypto"
import type * as Tracer from "effect/Tracer"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import type { AkterInternals } from "../akter.js"
import { InvalidPayload } from "../errors.js"
import type { Caller } from "../model/caller.js"
import { checkExecutionKey, encodeExecutionId } from "../model/executionId.js"
import { checkCommandId, checkOwnerId } from "../model/ownerIds.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { concurrencyGroupOf, executionKeyOf, inputSchemaOf } from "../model/startInput.js"
import { placeOwner } from "../owners/routing.js"
import { withTraceparent } from "../tracing.js"
import type { DeadlineStartOptions, ResultOptions } from "./clientApi.js"
import { idempotentCall } from "./databaseCalls.js"
import { awaitResult, readStatus } from "./executionResults.js"
import { interruptExecution } from "./interruptExecution.js"
import { encodePayload } from "./payloads.js"
import type { ResolvedExecution } from "./resolveExecution.js"
import { startExecution } from "./startExecution.js"

export { emitEvent } from "./emitEvent.js"

/**
 * The deadline a start asks for, in ms: only a workflow with a deadline takes one, and only a
 * shorter one (or the same); anything else is refused, located at `deadline`.
 */
const requestedDeadlineMs = (
  workflow: WorkflowRegistration,
  requested: Duration.Input | undefined,
): number | InvalidPayload | undefined => {
  if (requested === undefined) return undefined
  const refuse = (message: string) =>
    new InvalidPayload(`start options of ${workflow.owner}.${workflow.name}`, [
      { path: "deadline", message },
    ])
  if (workflow.deadlineMs === undefined) {
    return refuse("this workflow declares no deadline, so a start cannot shorten one")
  }
  const decoded = Duration.fromInput(requested)
  const ms = Option.isSome(decoded) ? Duration.toMillis(decoded.value) : Number.NaN
  if (!Number.isFinite(ms) || ms <= 0) return refuse("not a positive, finite duration")
  if (ms > workflow.deadlineMs) {
    return refuse(
      `${ms} ms is later than the workflow's deadline of ${workflow.deadlineMs} ms; a start may only shorten it`,
    )
  }
  return Math.ceil(ms)
}

/**
 * A client's `start`: validates the owner id, the deadline and the input, derives the key and the
 * execution id, and writes the start (or attaches to the execution already started under it).
 */
export const startWorkflow = async (
  internals: AkterInternals,
  workflow: WorkflowRegistration,
  caller: Caller,
  ownerId: string,
  input: unknown,
  options: DeadlineStartOptions = {},
  span?: Tracer.Span,
): Promise<ResolvedExecution> => {
  const invalidOwner = checkOwnerId(ownerId)
  if (invalidOwner !== undefined) throw invalidOwner
  const deadlineMs = requestedDeadlineMs(workflow, options.deadline)
  if (deadlineMs instanceof InvalidPayload) throw deadlineMs
  const encoded = encodePayload(
    `input of ${workflow.owner}.${workflow.name}`,
    inputSchemaOf(workflow),
    input,
    internals.maxPayloadBytes,
  )
  if (!("stored" in encoded)) throw encoded
  const invalidCommand =
    options.commandId === undefined ? undefined : checkCommandId(options.commandId)
  if (invalidCommand !== undefined) throw invalidCommand
  const commandId = options.commandId ?? randomUUID()
  const key = executionKeyOf(workflow, encoded.value, commandId)
  const invalidKey = checkExecutionKey(key)
  if (invalidKey !== undefined) throw invalidKey
  const owner = placeOwner({ tenant: caller.tenant, ownerType: workflow.owner, ownerId })
  const executionId = encodeExecutionId({
    tenant: caller.tenant,
    ownerType: workflow.owner,
    ownerId,
    workflow: workflow.name,
    key,
  })
  const request = {
    owner,
    workflow,
    executionId,
    key,
    input: encoded.stored,
    caller: JSON.stringify(withTraceparent(caller, span)),
    concurrency: concurrencyGroupOf(workflow, encoded.value),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
  }
  // Retried under the same execution id: a second start of it attaches and writes nothing.
  await idempotentCall(`start ${workflow.owner}.${workflow.name}`, internals, () =>
    startExecution(internals, request),
  )
  return { executionId, owner, key }
}

/** An execution's `status()`. */
export const statusOf = (
  internals: AkterInternals,
  workflow: WorkflowRegistration,
  execution: ResolvedExecution,
) => idempotentCall("status", internals, () => readStatus(internals, workflow, execution))

/** An execution's `result()`. */
export const resultOf = (
  internals: AkterInternals,
  workflow: WorkflowRegistration,
  execution: ResolvedExecution,
  options: ResultOptions | undefined,
) =>
  awaitResult(
    internals,
    workflow,
    execution,
    options?.timeout === undefined ? undefined : Duration.toMillis(options.timeout),
  )

/** An execution's `interrupt()`. */
export const interruptOf = (internals: AkterInternals, execution: ResolvedExecution) =>
  idempotentCall("interrupt", internals, () => interruptExecution(internals, execution))
