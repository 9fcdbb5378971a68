/**
 * Builds the client objects the generated `Order.client(akter)` and `Order.effectClient(akter)`
 * return. The generated code gives the precise types; this module does the work for every owner
 * alike: validate, write, wake, and decode.
 */
import { randomUUID } from "node:crypto"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Tracer from "effect/Tracer"
import { internalsOf, type Akter, type AkterInternals } from "../akter.js"
import {
  DatabaseUnavailable,
  ExecutionDefect,
  ExecutionInterrupted,
  ForeignTenant,
  ForeignWorkflow,
  InvalidExecutionId,
  InvalidExecutionKey,
  InvalidPayload,
  PayloadTooLarge,
  ResultTimeout,
  UnknownEvent,
} from "../errors.js"
import { defaultCaller, type Caller } from "../model/caller.js"
import { checkExecutionKey, encodeExecutionId } from "../model/executionId.js"
import type { OwnerRegistration, WorkflowRegistration } from "../model/registration.js"
import { placeOwner } from "../owners/routing.js"
import type {
  EffectExecution,
  Execution,
  ExecutionResult,
  DeadlineStartOptions,
  ResultOptions,
} from "./clientApi.js"
import { idempotentCall } from "./databaseCalls.js"
import { emitEvent } from "./emitEvent.js"
import {
  awaitResult,
  readStatus,
  resolveExecution,
  type ResolvedExecution,
} from "./executionResults.js"
import { interruptExecution } from "./interruptExecution.js"
import { checkCommandId, checkOwnerId, checkTenant } from "../model/ownerIds.js"
import { concurrencyGroupOf, executionKeyOf, inputSchemaOf } from "../model/startInput.js"
import { encodePayload } from "./payloads.js"
import { startExecution } from "./startExecution.js"
import { tracedCall, withTraceparent } from "../tracing.js"

const timeoutMsOf = (options: ResultOptions | undefined) =>
  options?.timeout === undefined ? undefined : Duration.toMillis(options.timeout)

const executionHandle = (
  internals: AkterInternals,
  workflow: WorkflowRegistration,
  execution: ResolvedExecution,
): Execution<unknown, unknown> => {
  const attributes = { "akter.execution_id": execution.executionId }
  return {
    executionId: execution.executionId,
    status: () =>
      tracedCall(internals.tracer, "akter.client.status", attributes, () =>
        idempotentCall("status", internals, () => readStatus(internals, workflow, execution)),
      ),
    result: (options) =>
      tracedCall(internals.tracer, "akter.client.result", attributes, () =>
        awaitResult(internals, workflow, execution, timeoutMsOf(options)),
      ),
    interrupt: () =>
      tracedCall(internals.tracer, "akter.client.interrupt", attributes, () =>
        idempotentCall("interrupt", internals, () => interruptExecution(internals, execution)),
      ),
  }
}

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

const startWorkflow = async (
  internals: AkterInternals,
  workflow: WorkflowRegistration,
  caller: Caller,
  ownerId: string,
  input: unknown,
  options: DeadlineStartOptions = {},
  span?: Tracer.Span,
): Promise<Execution<unknown, unknown>> => {
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
  return executionHandle(internals, workflow, { executionId, owner, key })
}

const attachWorkflow = (
  internals: AkterInternals,
  workflow: WorkflowRegistration,
  caller: Caller,
  executionId: string,
): Execution<unknown, unknown> => {
  const resolved = resolveExecution(workflow, caller, executionId)
  if (!("owner" in resolved)) throw resolved
  return executionHandle(internals, workflow, resolved)
}

/**
 * The Promise client of an owner type; generated code narrows its type.
 *
 * @example
 * const orders = makeOwnerClient<OrderClient>(akter, registration, { tenant: "acme" })
 */
export const makeOwnerClient = <Client>(
  akter: Akter,
  owner: OwnerRegistration,
  caller: Caller = defaultCaller,
): Client => {
  const internals = internalsOf(akter)
  const invalidTenant = checkTenant(caller.tenant)
  if (invalidTenant !== undefined) throw invalidTenant
  if (internals.tenant !== undefined && caller.tenant !== internals.tenant) {
    throw new Error(
      `makeOwnerClient: this handle is restricted to tenant ${JSON.stringify(internals.tenant)} (row-level-security mode); a client for tenant ${JSON.stringify(caller.tenant)} needs a handle of its own`,
    )
  }
  const client: Record<string, unknown> = {
    emit: (ownerId: string, event: string, payload: unknown, options?: { commandId?: string }) =>
      tracedCall(
        internals.tracer,
        "akter.client.emit",
        { "akter.owner_type": owner.owner, "akter.owner_id": ownerId, "akter.event": event },
        () => emitEvent(internals, owner, caller, ownerId, event, payload, options),
      ),
  }
  for (const [name, workflow] of Object.entries(owner.workflows)) {
    client[name] = {
      start: (ownerId: string, input: unknown, options?: DeadlineStartOptions) =>
        tracedCall(
          internals.tracer,
          "akter.client.start",
          { "akter.owner_type": workflow.owner, "akter.owner_id": ownerId, "akter.workflow": name },
          (span) => startWorkflow(internals, workflow, caller, ownerId, input, options, span),
        ),
      attach: (executionId: string) => attachWorkflow(internals, workflow, caller, executionId),
    }
  }
  return client as Client
}

type Refusal =
  | InvalidPayload
  | PayloadTooLarge
  | InvalidExecutionKey
  | InvalidExecutionId
  | ForeignTenant
  | ForeignWorkflow
  | UnknownEvent
  | DatabaseUnavailable

const isRefusal = (error: unknown): error is Refusal =>
  error instanceof InvalidPayload ||
  error instanceof PayloadTooLarge ||
  error instanceof InvalidExecutionKey ||
  error instanceof InvalidExecutionId ||
  error instanceof ForeignTenant ||
  error instanceof ForeignWorkflow ||
  error instanceof UnknownEvent ||
  error instanceof DatabaseUnavailable

/** A read or write that fails only when the database is away: that in the error channel. */
const databaseCall = <A>(call: () => Promise<A>): Effect.Effect<A, DatabaseUnavailable> =>
  Effect.tryPromise({ try: call, catch: (error) => error }).pipe(
    Effect.catch((error) =>
      error instanceof DatabaseUnavailable ? Effect.fail(error) : Effect.die(error),
    ),
  )

/** A client call as an Effect: refusals in the error channel, anything else a defect. */
const refusable = <A>(call: () => Promise<A>): Effect.Effect<A, Refusal> =>
  Effect.tryPromise({ try: call, catch: (error) => error }).pipe(
    Effect.catch((error) => (isRefusal(error) ? Effect.fail(error) : Effect.die(error))),
  )

const effectResult = (
  execution: Execution<unknown, unknown>,
  options: ResultOptions | undefined,
): Effect.Effect<unknown, unknown> =>
  Effect.tryPromise({ try: () => execution.result(options), catch: (error) => error }).pipe(
    Effect.catch((error) =>
      error instanceof ResultTimeout || error instanceof DatabaseUnavailable
        ? Effect.fail(error)
        : Effect.die(error),
    ),
    Effect.flatMap((result: ExecutionResult<unknown, unknown>) => {
      switch (result._tag) {
        case "Success":
          return Effect.succeed(result.value)
        case "Failure":
          return Effect.fail(result.error)
        case "Interrupted":
          return Effect.fail(new ExecutionInterrupted(execution.executionId, result.cause))
        case "Defect":
          return Effect.fail(new ExecutionDefect(execution.executionId, result.message))
      }
    }),
  )

const effectExecution = (
  execution: Execution<unknown, unknown>,
): EffectExecution<unknown, unknown> => ({
  executionId: execution.executionId,
  status: databaseCall(() => execution.status()),
  result: (options) => effectResult(execution, options),
  interrupt: databaseCall(() => execution.interrupt()),
})

/**
 * The Effect client of an owner type: the same calls as `makeOwnerClient`, returning Effects whose
 * error channel holds the refusals and the workflow's declared errors.
 */
export const makeEffectOwnerClient = <Client>(
  akter: Akter,
  owner: OwnerRegistration,
  caller: Caller = defaultCaller,
): Client => {
  const promises = makeOwnerClient<Record<string, any>>(akter, owner, caller)
  const client: Record<string, unknown> = {
    emit: (ownerId: string, event: string, payload: unknown, options?: { commandId?: string }) =>
      refusable(() => promises["emit"](ownerId, event, payload, options)),
  }
  for (const name of Object.keys(owner.workflows)) {
    const workflow = promises[name] as {
      start: (
        ownerId: string,
        input: unknown,
        options?: DeadlineStartOptions,
      ) => Promise<Execution<unknown, unknown>>
      attach: (executionId: string) => Execution<unknown, unknown>
    }
    client[name] = {
      start: (ownerId: string, input: unknown, options?: DeadlineStartOptions) =>
        refusable(() => workflow.start(ownerId, input, options)).pipe(Effect.map(effectExecution)),
      attach: (executionId: string) =>
        refusable(async () => workflow.attach(executionId)).pipe(Effect.map(effectExecution)),
    }
  }
  return client as Client
}
