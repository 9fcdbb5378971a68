/**
 * The three example manifests as hand-built models, written from manifests/*.yaml without the
 * loader: the emitter tests stand on these, so they test the emitters alone.
 */
import type { LoadedManifest, SourcePositions } from "../../codegen/manifest/loadManifests.js"
import type { OwnerManifest } from "../../runtime/model/manifest.js"
import type { FieldNode, TypeNode } from "../../runtime/model/typeModel.js"

export const string: TypeNode = { kind: "string" }
export const integer: TypeNode = { kind: "integer" }
export const number: TypeNode = { kind: "number" }
export const boolean: TypeNode = { kind: "boolean" }
export const ref = (name: string): TypeNode => ({ kind: "ref", name })
export const array = (items: TypeNode): TypeNode => ({ kind: "array", items })
export const enumOf = (...values: string[]): TypeNode => ({ kind: "enum", values })
export const optional = (type: TypeNode): FieldNode => ({ type, optional: true })
export const object = (
  fields: Record<string, TypeNode | FieldNode>,
  description?: string,
): TypeNode => {
  const out: Record<string, FieldNode> = {}
  for (const [name, field] of Object.entries(fields)) {
    out[name] = "optional" in field ? field : { type: field, optional: false }
  }
  return description === undefined
    ? { kind: "object", fields: out }
    : { kind: "object", fields: out, description }
}

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

export const orderManifest: OwnerManifest = {
  format: 1,
  owner: "Order",
  description: "An order placed in the shop, from reservation to shipping.",
  types: {
    Money: object(
      { amount: integer, currency: enumOf("USD", "EUR") },
      "An amount in minor units (cents).",
    ),
    Sku: { kind: "string", description: "A stock keeping unit." },
  },
  events: {
    PaymentConfirmed: { payload: object({ paymentId: string, amount: ref("Money") }) },
    OrderCancelled: { payload: object({ reason: string }) },
  },
  workflows: {
    fulfill: {
      description: "Reserve stock, screen for fraud, wait for payment, then ship.",
      input: object({
        orderId: string,
        total: ref("Money"),
        skus: array(ref("Sku")),
        express: optional(boolean),
      }),
      output: object({ trackingId: string, paymentId: string }),
      errors: { OutOfStock: object({ sku: ref("Sku") }), PaymentMissing: object({}) },
      key: "orderId",
      versions: { fraudCheck: { min: 0, current: 1 } },
      steps: {
        reserve: {
          kind: "activity",
          input: object({ skus: array(ref("Sku")) }),
          output: object({ reservationId: string }),
          errors: ["OutOfStock"],
          retry: {
            attempts: 5,
            initialMs: 1000,
            factor: 2,
            maxMs: MINUTE,
            retryOn: ["OutOfStock"],
          },
          timeoutMs: null,
        },
        release: {
          kind: "activity",
          description: "Compensation of reserve, run when the order fails or is interrupted.",
          input: object({ reservationId: string }),
          output: null,
          errors: [],
          retry: null,
          timeoutMs: null,
        },
        screen: {
          kind: "activity",
          input: null,
          output: object({ score: number }),
          errors: [],
          retry: null,
          timeoutMs: null,
        },
        coolOff: { kind: "sleep", durationMs: 10 * MINUTE },
        paid: { kind: "wait", event: "PaymentConfirmed", timeoutMs: DAY },
        ship: {
          kind: "activity",
          input: object({ orderId: string, express: boolean }),
          output: object({ trackingId: string }),
          errors: [],
          retry: { attempts: 3, initialMs: 500, factor: 2, maxMs: MINUTE },
          timeoutMs: null,
        },
      },
    },
  },
}

export const subscriptionManifest: OwnerManifest = {
  format: 1,
  owner: "Subscription",
  description: "A customer's subscription, billed one cycle per execution.",
  types: {
    Money: object({ amount: integer, currency: enumOf("USD", "EUR") }),
    Plan: enumOf("basic", "pro", "team"),
  },
  events: {
    PaymentMethodUpdated: { payload: object({ last4: string }) },
    Cancelled: { payload: object({ reason: optional(string) }) },
  },
  workflows: {
    billingCycle: {
      description:
        "Wait out the billing period, charge the card (retrying declines), fall back to dunning when every attempt fails, then start the next cycle.",
      input: object({
        plan: ref("Plan"),
        price: ref("Money"),
        cycle: integer,
        lastCycle: optional(integer),
      }),
      output: {
        kind: "oneOf",
        variants: [
          object({ outcome: enumOf("renewed"), invoiceId: string, next: string }),
          object({ outcome: enumOf("ended"), invoiceId: string }),
          object({ outcome: enumOf("lapsed") }),
        ],
      },
      errors: { CardDeclined: object({ code: string }) },
      key: null,
      versions: { dunning: { min: 0, current: 1 } },
      steps: {
        period: { kind: "sleep", durationMs: 30 * DAY },
        charge: {
          kind: "activity",
          input: object({ price: ref("Money"), cycle: integer }),
          output: object({ invoiceId: string }),
          errors: ["CardDeclined"],
          retry: { attempts: 4, initialMs: HOUR, factor: 3, maxMs: DAY, retryOn: ["CardDeclined"] },
          timeoutMs: null,
        },
        updated: { kind: "wait", event: "PaymentMethodUpdated", timeoutMs: 3 * DAY },
        retryCharge: {
          kind: "activity",
          input: object({ price: ref("Money"), cycle: integer }),
          output: object({ invoiceId: string }),
          errors: ["CardDeclined"],
          retry: null,
          timeoutMs: null,
        },
        sendReceipt: {
          kind: "activity",
          input: object({ invoiceId: string }),
          output: null,
          errors: [],
          retry: null,
          timeoutMs: null,
        },
        next: {
          kind: "start",
          owner: "Subscription",
          workflow: "billingCycle",
          awaits: false,
          parentClose: "leave",
        },
      },
    },
  },
}

export const userManifest: OwnerManifest = {
  format: 1,
  owner: "User",
  description: "A person signing up, from the first form to a billed account.",
  types: {},
  events: {
    EmailVerified: { payload: object({ email: string }) },
    ProfileCompleted: { payload: object({ displayName: string, locale: optional(string) }) },
  },
  workflows: {
    signUp: {
      description: "Verify the email (or give up after a day), create the account, start billing.",
      input: object({ email: string, plan: enumOf("basic", "pro", "team") }),
      output: object({ accountId: string, billing: optional(string) }),
      errors: { EmailBounced: object({ email: string }) },
      key: "email",
      versions: {},
      steps: {
        sendVerification: {
          kind: "activity",
          input: object({ email: string }),
          output: null,
          errors: ["EmailBounced"],
          retry: { attempts: 3, initialMs: 200, factor: 2, maxMs: MINUTE },
          timeoutMs: null,
        },
        verified: { kind: "wait", event: "EmailVerified", timeoutMs: null },
        deadline: { kind: "sleep", durationMs: DAY },
        verification: {
          kind: "race",
          description: "The first of the verification email and the deadline.",
          output: object({ outcome: enumOf("verified", "expired") }),
          errors: [],
        },
        profile: { kind: "wait", event: "ProfileCompleted", timeoutMs: 7 * DAY },
        createAccount: {
          kind: "activity",
          input: object({ email: string, displayName: optional(string) }),
          output: object({ accountId: string }),
          errors: [],
          retry: null,
          timeoutMs: null,
        },
        startBilling: {
          kind: "start",
          owner: "Subscription",
          workflow: "billingCycle",
          awaits: false,
          parentClose: "leave",
        },
      },
    },
  },
}

const nowhere: SourcePositions = {
  locate: () => undefined,
  locateValue: () => undefined,
  start: { line: 1, column: 1 },
}

/** A model as the loader would hand it over, without source positions. */
export const loaded = (file: string, manifest: OwnerManifest): LoadedManifest => ({
  file,
  manifest,
  positions: nowhere,
})

export const exampleManifests: readonly LoadedManifest[] = [
  loaded("manifests/order.yaml", orderManifest),
  loaded("manifests/subscription.yaml", subscriptionManifest),
  loaded("manifests/user.yaml", userManifest),
]
