/**
 * The types of the generated clients. `Order.client(akter)` returns an object whose workflows are
 * `WorkflowClient`s and whose `emit` is typed by the owner's events; `Order.effectClient(akter)`
 * is the same surface returning Effects.
 */
import type { Duration, Effect } from "effect"
import type { InterruptCause } from "../model/exit.js"
import type {
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

/** How an execution ended, as its recorded result says. */
export type ExecutionResult<O, E> =
  | { readonly _tag: "Success"; readonly value: O }
  | { readonly _tag: "Failure"; readonly error: E }
  | { readonly _tag: "Interrupted"; readonly cause: InterruptCause }
  | { readonly _tag: "Defect"; readonly message: string }

export type ExecutionStatus<O, E> =
  | { readonly status: "unknown" }
  /**
   * `queued`: its workflow's concurrency key holds it until an execution of its group finishes
   * (see the README's concurrency keys).
   */
  | { readonly status: "queued" | "running" | "suspended"; readonly interrupting: boolean }
  | { readonly status: "finished"; readonly result: ExecutionResult<O, E> }

export interface StartOptions {
  /**
   * Identifies this start for retries: a retried start with the same command id attaches to the
   * execution the first one created. Generated when absent.
   */
  readonly commandId?: string | undefined
}

/** The start options of a workflow that declares a `deadline:`. */
export interface DeadlineStartOptions extends StartOptions {
  /**
   * How long after its start this execution may stay open, if sooner than the workflow's
   * deadline; a later one is refused (`InvalidPayload` at `deadline`), a start never lengthens it.
   * Ignored when the start attaches to an execution that exists.
   */
  readonly deadline?: Duration.Input | undefined
}

export interface EmitOptions {
  /** A retried emit with the same command id appends nothing new. Generated when absent. */
  readonly commandId?: string | undefined
}

export interface ResultOptions {
  /**
   * Stop waiting after this long (the execution goes on); the call then fails with `ResultTimeout`,
   * or with `DatabaseUnavailable` when the database was unreachable or silent at the deadline.
   */
  readonly timeout?: Duration.Input | undefined
}

export interface EmitReceipt {
  /** The event's sequence number in its owner's log. */
  readonly sequence: number
}

export interface Execution<O, E> {
  readonly executionId: string
  status(): Promise<ExecutionStatus<O, E>>
  /** Waits for the execution to finish; rejects with `ResultTimeout` past `options.timeout`. */
  result(options?: ResultOptions): Promise<ExecutionResult<O, E>>
  /** Asks the execution to stop: compensations run, then `Interrupted` is recorded. Idempotent. */
  interrupt(): Promise<void>
}

export interface WorkflowClient<I, O, E, S extends StartOptions = StartOptions> {
  start(ownerId: string, input: I, options?: S): Promise<Execution<O, E>>
  /** Reattaches to an execution by id; refuses ids of another tenant, owner type or workflow. */
  attach(executionId: string): Execution<O, E>
}

export type EmitFunction<Events> = <N extends keyof Events & string>(
  ownerId: string,
  event: N,
  payload: Events[N],
  options?: EmitOptions,
) => Promise<EmitReceipt>

export interface EffectExecution<O, E> {
  readonly executionId: string
  readonly status: Effect.Effect<ExecutionStatus<O, E>, DatabaseUnavailable>
  /**
   * Succeeds with the value; fails with the declared error, `ExecutionInterrupted`,
   * `ExecutionDefect`, `ResultTimeout`, or `DatabaseUnavailable`.
   */
  result(options?: ResultOptions): Effect.Effect<O, E | ExecutionEnded>
  readonly interrupt: Effect.Effect<void, DatabaseUnavailable>
}

export interface EffectWorkflowClient<I, O, E, S extends StartOptions = StartOptions> {
  start(
    ownerId: string,
    input: I,
    options?: S,
  ): Effect.Effect<EffectExecution<O, E>, StartRefused | DatabaseUnavailable>
  attach(executionId: string): Effect.Effect<EffectExecution<O, E>, AttachRefused>
}

export type EffectEmitFunction<Events> = <N extends keyof Events & string>(
  ownerId: string,
  event: N,
  payload: Events[N],
  options?: EmitOptions,
) => Effect.Effect<EmitReceipt, EmitRefused | DatabaseUnavailable>

/** Failures of `EffectExecution.result` other than the workflow's declared errors. */
export type ExecutionEnded =
  ExecutionInterrupted | ExecutionDefect | ResultTimeout | DatabaseUnavailable

/** Why a start wrote nothing. */
export type StartRefused = InvalidPayload | PayloadTooLarge | InvalidExecutionKey

/** Why an id was refused before anything was read. */
export type AttachRefused = InvalidExecutionId | ForeignTenant | ForeignWorkflow

/** Why an emit wrote nothing. */
export type EmitRefused = InvalidPayload | PayloadTooLarge | UnknownEvent
