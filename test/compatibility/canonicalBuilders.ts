/**
 * Hand-built canonical models for the compatibility tests: types, steps, workflows and owners written
 * tersely, normalized the way `canonicalType` normalizes manifests, so that what the rules see is
 * what a loaded manifest would give them.
 */
import type {
  CanonicalOwner,
  CanonicalStep,
  CanonicalWorkflow,
} from "../../runtime/model/canonicalManifest.js"
import { canonicalType } from "../../runtime/model/canonicalType.js"
import type { MarkerRange } from "../../runtime/model/manifest.js"
import type { FieldNode, TypeNode } from "../../runtime/model/typeModel.js"

const norm = (type: TypeNode): TypeNode => canonicalType(type, {})

export const t = {
  string: { kind: "string" },
  number: { kind: "number" },
  integer: { kind: "integer" },
  boolean: { kind: "boolean" },
  null: { kind: "null" },
  json: { kind: "json" },
} as const satisfies Record<string, TypeNode>

/** An object; a key written `name?` is an optional field. */
export const obj = (fields: Record<string, TypeNode>): TypeNode => {
  const out: Record<string, FieldNode> = {}
  for (const [key, type] of Object.entries(fields)) {
    const optional = key.endsWith("?")
    out[optional ? key.slice(0, -1) : key] = { type, optional }
  }
  return norm({ kind: "object", fields: out })
}
export const arr = (items: TypeNode): TypeNode => norm({ kind: "array", items })
export const rec = (values: TypeNode): TypeNode => norm({ kind: "record", values })
export const en = (...values: string[]): TypeNode => norm({ kind: "enum", values })
export const oneOf = (...variants: TypeNode[]): TypeNode => norm({ kind: "oneOf", variants })

export const activity = (
  output: TypeNode | null = null,
  errors: Record<string, TypeNode> = {},
): CanonicalStep => ({ kind: "activity", output, errors })
export const race = (output: TypeNode | null = null): CanonicalStep => ({
  kind: "race",
  output,
  errors: {},
})
export const sleep = (): CanonicalStep => ({ kind: "sleep" })
export const wait = (event: string, payload: TypeNode): CanonicalStep => ({
  kind: "wait",
  event,
  payload,
})
export const start = (owner: string, workflow: string): CanonicalStep => ({
  kind: "start",
  target: { owner, workflow },
})

export interface WorkflowParts {
  readonly input?: TypeNode | null
  readonly output?: TypeNode | null
  readonly errors?: Record<string, TypeNode>
  readonly steps?: Record<string, CanonicalStep>
  readonly versions?: Record<string, MarkerRange>
}

export const workflow = (
  owner: string,
  name: string,
  parts: WorkflowParts = {},
): CanonicalWorkflow => ({
  owner,
  workflow: name,
  input: parts.input ?? null,
  output: parts.output ?? null,
  errors: parts.errors ?? {},
  steps: parts.steps ?? {},
  versions: parts.versions ?? {},
})

export const owner = (
  name: string,
  workflows: CanonicalWorkflow[],
  events: Record<string, TypeNode> = {},
): CanonicalOwner => ({
  format: 1,
  owner: name,
  events,
  workflows: Object.fromEntries(workflows.map((w) => [w.workflow, w])),
})

/** The order fulfillment of `manifests/order.yaml`, reduced to what the rules read. */
export const money = obj({ amount: t.integer, currency: en("USD", "EUR") })
export const paymentConfirmed = obj({ paymentId: t.string, amount: money })

export const fulfillV1 = (parts: WorkflowParts = {}): CanonicalWorkflow =>
  workflow("Order", "fulfill", {
    input: obj({ orderId: t.string, total: money, skus: arr(t.string), "express?": t.boolean }),
    output: obj({ trackingId: t.string, paymentId: t.string }),
    errors: { OutOfStock: obj({ sku: t.string }), PaymentMissing: obj({}) },
    versions: { fraudCheck: { min: 0, current: 1 } },
    steps: {
      reserve: activity(obj({ reservationId: t.string }), { OutOfStock: obj({ sku: t.string }) }),
      release: activity(),
      screen: activity(obj({ score: t.number })),
      coolOff: sleep(),
      paid: wait("PaymentConfirmed", paymentConfirmed),
      ship: activity(obj({ trackingId: t.string })),
    },
    ...parts,
  })

export const orderV1 = (parts: WorkflowParts = {}): CanonicalOwner =>
  owner("Order", [fulfillV1(parts)], {
    PaymentConfirmed: paymentConfirmed,
    OrderCancelled: obj({ reason: t.string }),
  })
