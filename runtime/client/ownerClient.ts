/**
 * Builds the client objects the generated `Order.client(akter)` and `Order.effectClient(akter)`
 * return. The generated code gives the precise types; this module does the work for every owner
 * alike: validate, write, wake, and decode.
 *
 * What the calls do beyond refusing a wrong handle, tenant or execution id lives in clientCalls.ts
 * (the stores, kysely, the payload schemas and zod): loaded from the moment the first client is
 * made, not by `import "akter"`. Every call returns a promise already; one made before the load
 * ends waits for it.
 */
import * as Effect from "effect/Effect"
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
import type { OwnerRegistration, WorkflowRegistration } from "../model/registration.js"
import type {
  EffectExecution,
  Execution,
  ExecutionResult,
  DeadlineStartOptions,
  ResultOptions,
} from "./clientApi.js"
import { checkTenant } from "../model/ownerIds.js"
import { resolveExecution, type ResolvedExecution } from "./resolveExecution.js"
import { tracedCall } from "../tracing.js"

type ClientCalls = typeof import("./clientCalls.js")

/** clientCalls.ts, once loaded. */
let loadedCalls: ClientCalls | undefined

const loadCalls = (): Promise<ClientCalls> =>
  import("./clientCalls.js").then((calls) => (loadedCalls = calls))

/**
 * Runs `call` with clientCalls.ts: at once when it is loaded — so that, as when it was imported
 * up front, a call reads its arguments (a start validates and encodes its input) before it returns
 * — else once it is.
 */
const withCalls = <A>(call: (calls: ClientCalls) => Promise<A>): Promise<A> =>
  loadedCalls === undefined ? loadCalls().then(call) : call(loadedCalls)

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
        withCalls((calls) => calls.statusOf(internals, workflow, execution)),
      ),
    result: (options) =>
      tracedCall(internals.tracer, "akter.client.result", attributes, () =>
        withCalls((calls) => calls.resultOf(internals, workflow, execution, options)),
      ),
    interrupt: () =>
      tracedCall(internals.tracer, "akter.client.interrupt", attributes, () =>
        withCalls((calls) => calls.interruptOf(internals, execution)),
      ),
  }
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
  // Starts loading the calls now, so that a first call seldom waits for them; a failed load fails
  // each call instead.
  if (loadedCalls === undefined) loadCalls().catch(() => undefined)
  const client: Record<string, unknown> = {
    emit: (ownerId: string, event: string, payload: unknown, options?: { commandId?: string }) =>
      tracedCall(
        internals.tracer,
        "akter.client.emit",
        { "akter.owner_type": owner.owner, "akter.owner_id": ownerId, "akter.event": event },
        () =>
          withCalls((calls) =>
            calls.emitEvent(internals, owner, caller, ownerId, event, payload, options),
          ),
      ),
  }
  for (const [name, workflow] of Object.entries(owner.workflows)) {
    client[name] = {
      start: (ownerId: string, input: unknown, options?: DeadlineStartOptions) =>
        tracedCall(
          internals.tracer,
          "akter.client.start",
          { "akter.owner_type": workflow.owner, "akter.owner_id": ownerId, "akter.workflow": name },
          (span) =>
            withCalls(async (calls) =>
              executionHandle(
                internals,
                workflow,
                await calls.startWorkflow(
                  internals,
                  workflow,
                  caller,
                  ownerId,
                  input,
                  options,
                  span,
                ),
              ),
            ),
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
