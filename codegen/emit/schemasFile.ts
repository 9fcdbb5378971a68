/**
 * Emits an owner's schemas.json: one JSON Schema document whose `definitions` hold every type of
 * its types.ts (named types, event payloads, inputs, outputs) and every declared error's payload,
 * under the same names.
 */
import { typeJsonSchema, type JsonSchema } from "./jsonSchema.js"
import type { OwnerPlan } from "./ownerPlan.js"
import type { JsonDocument } from "./writer.js"

export const ownerSchemasDocument = (plan: OwnerPlan): Record<string, unknown> => {
  const definitions: Record<string, JsonSchema> = {}
  const define = (name: string, schema: JsonSchema, docs: string | undefined) => {
    definitions[name] = docs === undefined ? schema : { ...schema, description: docs }
  }
  for (const declaration of plan.types) {
    define(declaration.name, typeJsonSchema(declaration.type), declaration.docs)
  }
  for (const error of plan.errors) define(error.name, typeJsonSchema(error.payload), error.docs)
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: `Types of owner ${plan.owner}`,
    definitions,
  }
}

export const ownerSchemasFile = (plan: OwnerPlan): JsonDocument => ({
  path: `${plan.folder}/schemas.json`,
  header: { source: plan.source.file, hash: plan.hash },
  document: ownerSchemasDocument(plan),
})
