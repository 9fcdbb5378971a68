/**
 * Three releases of one manifest (test/fixtures/lock/shop/v1..v3.yaml) and a runner implementation of
 * each: v2 adds an audit step behind a marker (compatible with v1's executions), v3 removes the
 * reserve step that v1 and v2 executions recorded (breaking while they are open). Every execution
 * waits for a `Paid` event, so a test decides when executions drain: `startWaitingOrders`, then
 * `payOrders`.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import {
  implementWorkflow,
  type ActivityContext,
  makeOwnerClient,
  startRunner,
  type OwnerRegistration,
  type WorkflowImplementation,
} from "../../runtime/index.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { journalRun } from "../support/activityJournal.js"
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

/**
 * Every activity first appends its run to the activity journal (when `ACTIVITY_JOURNAL` names one),
 * noting the release it ran under, so a multi-process test can tell which deployment ran what.
 */
const activitiesOf = (version: ShopVersion) => {
  const note = `v${version}`
  return {
    reserve: (ctx: ActivityContext) => {
      journalRun(ctx, note)
      return Promise.resolve({ reservationId: `r-${ctx.ownerId}` })
    },
    audit: (ctx: ActivityContext) => {
      journalRun(ctx, note)
      return Promise.resolve({ auditor: "bot" })
    },
    ship: (ctx: ActivityContext) => {
      journalRun(ctx, note)
      return Promise.resolve({ trackingId: `t-${ctx.ownerId}` })
    },
  }
}

/** The registration and the `fulfill` implementation of one release of the shop. */
export const shop = async (version: ShopVersion): Promise<Shop> => {
  const registration = await registrationFromYaml(shopYaml(version), SHOP_FILE)
  const declared = Object.keys(registration.workflows["fulfill"]!.canonical.steps)
  const fulfill = implementWorkflow(registration, "fulfill", {
    activities: Object.fromEntries(
      Object.entries(activitiesOf(version)).filter(([step]) => declared.includes(step)),
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

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

/** Runs a runner of `release` until nothing is due, then closes it. */
const withRunnerOf = async (
  akter: TestAkter,
  release: Shop,
  work: (client: AnyClient) => Promise<void>,
): Promise<void> => {
  const runner = await startRunner({ akter, workflows: [release.fulfill], pollMs: 20 })
  try {
    await work(makeOwnerClient<AnyClient>(akter, release.registration))
    await runUntilIdle(akter, runner)
  } finally {
    await runner.close()
  }
}

/**
 * Starts one order per owner id (order id `A`, `B`, … in turn) with a runner of `release`, and runs
 * it until every one has reserved and waits for payment.
 */
export const startWaitingOrders = (
  akter: TestAkter,
  release: Shop,
  ownerIds: readonly string[],
): Promise<void> =>
  withRunnerOf(akter, release, async (client) => {
    for (const [index, ownerId] of ownerIds.entries()) {
      await client.fulfill.start(ownerId, { orderId: String.fromCharCode(65 + index) })
    }
  })

/** Pays every order with a runner of `release`, and runs it until they have finished. */
export const payOrders = (
  akter: TestAkter,
  release: Shop,
  ownerIds: readonly string[],
): Promise<void> =>
  withRunnerOf(akter, release, async (client) => {
    for (const [index, ownerId] of ownerIds.entries()) {
      await client.emit(ownerId, "Paid", { amount: 100 * (index + 1) })
    }
  })
