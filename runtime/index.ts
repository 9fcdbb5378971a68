/**
 * The public runtime API: what generated code and applications import from `akter`.
 */
export { createAkter, type Akter, type AkterOptions } from "./akter.js"
export type { TelemetryOptions } from "./observability/telemetry.js"
export { prometheusMetrics } from "./observability/prometheus.js"
export { countExecutions, inspectExecution, listExecutions } from "./inspect/lazyListing.js"
export type { ExecutionCounts, ExecutionPage, ExecutionQuery } from "./inspect/executionListing.js"
export type {
  ExecutionDetail,
  ExecutionSummary,
  InspectedStep,
  StatusFilter,
} from "./inspect/executionQueries.js"
export type { InspectedExit, InspectedValue, Outcome } from "./inspect/storedValues.js"
export type { Caller } from "./model/caller.js"
export { defineOwner, StaleRegistration } from "./model/registration.js"
export type {
  ErrorConstructor,
  OwnerRegistration,
  OwnerRegistrationInput,
  StepSettings,
  WorkflowRegistration,
  WorkflowRegistrationInput,
} from "./model/registration.js"
export type {
  CanonicalOwner,
  CanonicalStep,
  CanonicalWorkflow,
  WorkflowHashes,
} from "./model/canonicalManifest.js"
export type {
  EarlierShapes,
  OwnerEarlierShapes,
  ReaderEarlierShapes,
  WorkflowEarlierShapes,
} from "./model/earlierShapes.js"
export type { Hash } from "./model/hash.js"
export type { TypeNode } from "./model/typeModel.js"
export { implementWorkflow } from "./engine/workflowApi.js"
export type {
  Activity,
  ActivityContext,
  ActivityReturn,
  InputlessActivity,
  MigratingWorkflowDefinition,
  Migration,
  TimedWaitOptions,
  WaitOptions,
  WaitResult,
  WorkflowDefinition,
  WorkflowImplementation,
  WorkflowMigrations,
  WorkflowSteps,
} from "./engine/workflowApi.js"
export { makeEffectOwnerClient, makeOwnerClient } from "./client/ownerClient.js"
export { startRunner } from "./runner/lazyRunner.js"
export type { Runner, RunnerOptions } from "./runner/runner.js"
export { AkterHandle, AkterRunner } from "./layers.js"
export { makeLogger, type Logger, type LogLevel } from "./log.js"
export type {
  AttachRefused,
  DeadlineStartOptions,
  EffectEmitFunction,
  EffectExecution,
  EffectWorkflowClient,
  EmitFunction,
  EmitOptions,
  EmitReceipt,
  EmitRefused,
  Execution,
  ExecutionEnded,
  ExecutionResult,
  ExecutionStatus,
  ResultOptions,
  StartOptions,
  StartRefused,
  WorkflowClient,
} from "./client/clientApi.js"
export * from "./errors.js"
export type { InterruptCause } from "./model/exit.js"
