/**
 * The example application: implementations of every workflow in manifests/, written against the
 * generated SDK. `akter run examples/app.ts` serves them; `akter demo` runs hundreds of executions
 * of them through a runner it kills halfway.
 *
 * Everything that varies is driven by the input, never by chance, so a replay takes the same path:
 * - Order.fulfill: a sku named `restock-…` is out of stock on the first attempt and back on the
 *   retry; `discontinued-…` stays out of stock (the order fails with OutOfStock); an express order's
 *   first shipping attempt finds no pickup slot and is retried; an order that is not paid in time
 *   fails with PaymentMissing, and its reservation is released by the compensation of `reserve`.
 * - Subscription.billingCycle: an account whose id contains `expired-card` is declined; with the
 *   `dunning` marker the cycle then waits for a new card and retries once (`declined-again` is
 *   declined again), or lapses.
 * - User.signUp: `@greylist.example` addresses defer the first verification email, `@bounce.example`
 *   addresses bounce; the verification event races a deadline; a verified user is billed.
 *
 * Durations come from the pace (examples/pace.ts): the manifests' own, or `AKTER_EXAMPLE_PACE=demo`.
 */
import { createHash } from "node:crypto"
import { Effect, Option } from "effect"
import type { ActivityContext, WorkflowImplementation } from "akter"
import { Order, Subscription, User } from "../generated/index.js"
import { OutOfStock, PaymentMissing, type Money } from "../generated/order/index.js"
import { CardDeclined, type Plan } from "../generated/subscription/index.js"
import { EmailBounced } from "../generated/user/index.js"
import { recordActivityRun } from "./activityLog.js"
import { paceFromEnvironment, type ExamplePace } from "./pace.js"

/** A number in [0, 1) fixed by `text`: stands in for a scoring service's answer. */
const stableFraction = (text: string): number =>
  createHash("sha256").update(text).digest().readUInt32BE(0) / 2 ** 32

const shortHash = (text: string): string =>
  createHash("sha256").update(text).digest("hex").slice(0, 10)

/** Fraud scores from here up hold the order for a longer review cool-off. */
export const REVIEW_SCORE = 0.9

export const PLAN_PRICES: Readonly<Record<Plan, Money>> = {
  basic: { amount: 900, currency: "USD" },
  pro: { amount: 2900, currency: "USD" },
  team: { amount: 9900, currency: "EUR" },
}

/** Every activity first leaves its witness line (see examples/activityLog.ts). */
const witnessed =
  <I, O>(run: (input: I, ctx: ActivityContext) => Promise<O>) =>
  (input: I, ctx: ActivityContext): Promise<O> => {
    recordActivityRun(ctx)
    return run(input, ctx)
  }

const sameMoney = (a: Money, b: Money) => a.amount === b.amount && a.currency === b.currency

export const makeFulfill = (pace: ExamplePace): WorkflowImplementation =>
  Order.fulfill.implement({
    activities: {
      reserve: witnessed(async ({ skus }, ctx) => {
        const missing =
          skus.find((sku) => sku.startsWith("discontinued-")) ??
          (ctx.attempt === 1 ? skus.find((sku) => sku.startsWith("restock-")) : undefined)
        if (missing !== undefined) throw new OutOfStock({ sku: missing })
        return { reservationId: `res-${shortHash(ctx.idempotencyKey())}` }
      }),
      release: witnessed(async () => undefined),
      screen: (ctx) => {
        recordActivityRun(ctx)
        return Promise.resolve({ score: stableFraction(ctx.ownerId) })
      },
      ship: witnessed(async ({ orderId, express }, ctx) => {
        if (express && ctx.attempt === 1) {
          throw new Error("the express carrier had no pickup slot left; retrying")
        }
        return { trackingId: `${express ? "EXP" : "STD"}-${shortHash(orderId)}` }
      }),
    },
    body: (input, wf) =>
      Effect.gen(function* () {
        yield* wf.withCompensation(wf.reserve({ skus: input.skus }), (reserved) =>
          wf.release({ reservationId: reserved.reservationId }),
        )
        // Orders placed before the fraud screen existed (marker value 0) are not screened.
        const screened = (yield* wf.version("fraudCheck")) >= 1
        const { score } = screened ? yield* wf.screen() : { score: 0 }
        yield* wf.coolOff(score >= REVIEW_SCORE ? pace.reviewCoolOff : pace.coolOff)
        const payment = yield* wf.paid({
          where: (paid) => sameMoney(paid.amount, input.total),
          ...(pace.paymentTimeout === undefined ? {} : { timeout: pace.paymentTimeout }),
        })
        if (Option.isNone(payment)) return yield* Effect.fail(new PaymentMissing())
        const shipped = yield* wf.ship({ orderId: input.orderId, express: input.express ?? false })
        return { trackingId: shipped.trackingId, paymentId: payment.value.paymentId }
      }),
  })

export const makeBillingCycle = (pace: ExamplePace): WorkflowImplementation =>
  Subscription.billingCycle.implement({
    activities: {
      charge: witnessed(async ({ cycle }, ctx) => {
        if (ctx.ownerId.includes("expired-card")) throw new CardDeclined({ code: "expired_card" })
        return { invoiceId: `inv-${shortHash(`${ctx.ownerId}/${cycle}`)}` }
      }),
      retryCharge: witnessed(async ({ cycle }, ctx) => {
        if (ctx.ownerId.includes("declined-again")) {
          throw new CardDeclined({ code: "insufficient_funds" })
        }
        return { invoiceId: `inv-${shortHash(`${ctx.ownerId}/${cycle}/retry`)}` }
      }),
      sendReceipt: witnessed(async () => undefined),
    },
    body: (input, wf) =>
      Effect.gen(function* () {
        yield* wf.period(pace.billingPeriod)
        const charge = { price: input.price, cycle: input.cycle }
        const dunning = (yield* wf.version("dunning")) >= 1
        const charged = yield* wf.charge(charge).pipe(
          Effect.map(Option.some),
          // With dunning, a declined card gets one more chance after the customer updates it.
          Effect.catchTag("CardDeclined", (declined) =>
            dunning ? Effect.succeed(Option.none()) : Effect.fail(declined),
          ),
        )
        let invoiceId: string
        if (Option.isSome(charged)) invoiceId = charged.value.invoiceId
        else {
          const updated = yield* wf.updated(
            pace.cardUpdateTimeout === undefined ? {} : { timeout: pace.cardUpdateTimeout },
          )
          if (Option.isNone(updated)) return { outcome: "lapsed" as const }
          invoiceId = (yield* wf.retryCharge(charge)).invoiceId
        }
        yield* wf.sendReceipt({ invoiceId })
        if (input.lastCycle !== undefined && input.cycle >= input.lastCycle) {
          return { outcome: "ended" as const, invoiceId }
        }
        const next = yield* wf.next(wf.ownerId, { ...input, cycle: input.cycle + 1 })
        return { outcome: "renewed" as const, invoiceId, next }
      }),
  })

export const makeSignUp = (pace: ExamplePace, billedCycles?: number): WorkflowImplementation =>
  User.signUp.implement({
    activities: {
      sendVerification: witnessed(async ({ email }, ctx) => {
        if (email.endsWith("@bounce.example")) throw new EmailBounced({ email })
        if (email.endsWith("@greylist.example") && ctx.attempt === 1) {
          throw new Error("451 greylisted: the receiving server asks to try again later")
        }
      }),
      createAccount: witnessed(async (_, ctx) => ({ accountId: `${ctx.ownerId}-acct` })),
    },
    body: (input, wf) =>
      Effect.gen(function* () {
        yield* wf.sendVerification({ email: input.email })
        const { outcome } = yield* wf.verification([
          Effect.as(wf.verified({ where: (verified) => verified.email === input.email }), {
            outcome: "verified" as const,
          }),
          Effect.as(wf.deadline(pace.verificationDeadline), { outcome: "expired" as const }),
        ])
        // An unverified user keeps a free account: nothing is billed to an address nobody owns.
        if (outcome === "expired") return yield* wf.createAccount({ email: input.email })
        const profile = yield* wf.profile(
          pace.profileTimeout === undefined ? {} : { timeout: pace.profileTimeout },
        )
        const { accountId } = yield* wf.createAccount({
          email: input.email,
          ...(Option.isSome(profile) ? { displayName: profile.value.displayName } : {}),
        })
        const billing = yield* wf.startBilling(accountId, {
          plan: input.plan,
          price: PLAN_PRICES[input.plan],
          cycle: 1,
          ...(billedCycles === undefined ? {} : { lastCycle: billedCycles }),
        })
        return { accountId, billing }
      }),
  })

/** Cycles a sign-up is billed at demo pace, so that every execution the demo causes can finish. */
export const DEMO_BILLED_CYCLES = 2

/** The example implementations at a pace (sign-ups are billed until cancelled at manifest pace). */
export const makeWorkflows = (pace: ExamplePace): WorkflowImplementation[] => [
  makeFulfill(pace),
  makeBillingCycle(pace),
  makeSignUp(pace, pace.name === "demo" ? DEMO_BILLED_CYCLES : undefined),
]

/** What `akter run examples/app.ts` serves. */
export const workflows = makeWorkflows(paceFromEnvironment())
