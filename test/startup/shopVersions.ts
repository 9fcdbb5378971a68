/**
 * Three releases of one manifest (test/fixtures/lock/shop/v1..v3.yaml) and a runner implementation of
 * each: v2 adds an audit step behind a marker (compatible with v1's executions), v3 removes the
 * reserve step that v1 and v2 executions recorded (breaking while they are open). Every execution
 * waits for a `Paid` event, so a test decides when executions drain.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import {
  implementWorkflow,
  type OwnerRegistration,
  type WorkflowImplementation,
} from "../../runtime/index.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"

export type ShopVersion = 1 | 2 | 3

export const SHOP_FILE = "manifests/shop.yaml"

export const shopYaml = (version: ShopVersion): string =>
  readFileSync(new URL(`../fixtures/lock/shop/v${version}.yaml`, import.meta.url), "utf8")

export interface Shop {
  readonly version: ShopVersion
  readonly registration: OwnerRegistration
  readonly fulfill: WorkflowImplementation
}

// Bodies are written against the untyped `wf`: these workflows have no generated SDK.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Wf = any

const activities = {
  reserve: (ctx: { ownerId: string }) => Promise.resolve({ reservationId: `r-${ctx.ownerId}` }),
  audit: () => Promise.resolve({ auditor: "bot" }),
  ship: (ctx: { ownerId: string }) => Promise.resolve({ trackingId: `t-${ctx.ownerId}` }),
}

/** The registration and the `fulfill` implementation of one release of the shop. */
export const shop = async (version: ShopVersion): Promise<Shop> => {
  const registration = await registrationFromYaml(shopYaml(version), SHOP_FILE)
  const declared = Object.keys(registration.workflows["fulfill"]!.canonical.steps)
  const fulfill = implementWorkflow(registration, "fulfill", {
    activities: Object.fromEntries(
      Object.entries(activities).filter(([step]) => declared.includes(step)),
    ),
    body: (_input: { orderId: string }, wf: Wf): Effect.Effect<unknown, unknown> =>
      Effect.gen(function* () {
        if (declared.includes("reserve")) yield* wf.reserve()
        if (declared.includes("audit") && (yield* wf.version("audit")) >= 1) yield* wf.audit()
        yield* wf.paid()
        return yield* wf.ship()
      }) as Effect.Effect<unknown, unknown>,
  })
  return { version, registration, fulfill }
}
