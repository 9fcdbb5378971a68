/**
 * What a start derives from its input, the same for a client's start and a `start` step: the strict
 * schema the input must pass, and the execution key (the manifest's key field of the input, else
 * the start's command id) from which, with the owner, the execution id follows.
 */
import { createHash } from "node:crypto"
import { z } from "zod"
import type { WorkflowRegistration } from "./registration.js"
import { schemaOf } from "./schemaOf.js"

const noInput = z.undefined()

/** The strict schema of a workflow's start input: the generated one, else one built from the manifest. */
export const inputSchemaOf = (workflow: WorkflowRegistration) =>
  workflow.input ??
  (workflow.canonical.input === null ? noInput : schemaOf(workflow.canonical.input, "strict"))

/** The execution key: the manifest's key field of the input, else the start's command id. */
export const executionKeyOf = (
  workflow: WorkflowRegistration,
  input: unknown,
  commandId: string,
) => (workflow.key === null ? commandId : String((input as Record<string, unknown>)[workflow.key]))

/**
 * The execution's concurrency group within its workflow, when the workflow declares a concurrency
 * key: the key path and the input's value there, as text (the manifest check allows only paths
 * through required fields to a string, integer, boolean or enum, so the value is always there).
 */
export const concurrencyGroupOf = (
  workflow: WorkflowRegistration,
  input: unknown,
): ConcurrencyGroup | null => {
  const declared = workflow.canonical.concurrency
  if (declared === undefined) return null
  let value = input
  for (const field of declared.key.split(".")) {
    value = (value as Record<string, unknown>)[field]
  }
  return { key: declared.key, value: String(value) }
}

/** The group of executions one concurrency limit applies to, within a workflow and tenant. */
export interface ConcurrencyGroup {
  /** The key path, as the manifest writes it (`customer.id`). */
  readonly key: string
  /** The input's value at that path. */
  readonly value: string
}

/**
 * The command id of a `start` step: derived from the starting execution and the step, so every
 * replay of the step names the same started execution.
 */
export const startStepCommandId = (executionId: string, step: string): string =>
  `start-${createHash("sha256")
    .update(JSON.stringify([executionId, step]))
    .digest("hex")
    .slice(0, 32)}`
