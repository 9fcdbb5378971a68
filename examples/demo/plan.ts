/**
 * What `akter demo` does, decided before it starts: which executions it starts with which inputs,
 * which events it emits (and interrupts it sends) how long after each start, and — computed from the
 * inputs alone, independently of the engine — how every execution must end. Owner ids carry the
 * run id, so runs on a shared Postgres never count each other's executions.
 */
import type { FulfillInput, Money } from "../../generated/order/index.js"
import type { BillingCycleInput, Plan } from "../../generated/subscription/index.js"
import type { SignUpInput } from "../../generated/user/index.js"
import { DEMO_BILLED_CYCLES } from "../app.js"

export type PlannedStart =
  | { readonly workflow: "Order.fulfill"; readonly ownerId: string; readonly input: FulfillInput }
  | { readonly workflow: "User.signUp"; readonly ownerId: string; readonly input: SignUpInput }
  | {
      readonly workflow: "Subscription.billingCycle"
      readonly ownerId: string
      readonly input: BillingCycleInput
    }

/** Something the demo does to an execution's owner after the start: an event, or an interrupt. */
export type PlannedAction =
  | {
      readonly kind: "payment"
      readonly afterMs: number
      readonly amount: Money
      readonly paymentId: string
    }
  | { readonly kind: "cancel"; readonly afterMs: number }
  | { readonly kind: "emailVerified"; readonly afterMs: number; readonly email: string }
  | { readonly kind: "profileCompleted"; readonly afterMs: number; readonly displayName: string }

export type Outcome = "succeeded" | "failed" | "interrupted"

export interface PlannedExecution {
  readonly start: PlannedStart
  readonly actions: readonly PlannedAction[]
  /** How this execution ends. */
  readonly outcome: Outcome
  /** Executions it causes through start steps, with their outcomes (billing cycles). */
  readonly caused: readonly { readonly workflow: string; readonly outcome: Outcome }[]
}

export interface DemoPlan {
  readonly runId: string
  readonly executions: readonly PlannedExecution[]
}

const PLANS: readonly Plan[] = ["basic", "pro", "team"]

const pad = (index: number) => String(index).padStart(4, "0")

const billingCycles = (cycles: number) =>
  Array.from({ length: cycles }, () => ({
    workflow: "Subscription.billingCycle",
    outcome: "succeeded" as const,
  }))

const order = (runId: string, index: number): PlannedExecution => {
  const ownerId = `${runId}-order-${pad(index)}`
  const total: Money = { amount: 1500 + index * 7, currency: index % 2 === 0 ? "USD" : "EUR" }
  const discontinued = index % 50 === 24
  const cancelled = !discontinued && index % 25 === 11
  const unpaid = !discontinued && !cancelled && index % 10 === 7
  const skus = [
    `sku-${index % 7}`,
    ...(index % 6 === 0 ? ["restock-umbrella"] : []),
    ...(discontinued ? ["discontinued-kettle"] : []),
  ]
  const actions: PlannedAction[] = []
  if (cancelled) actions.push({ kind: "cancel", afterMs: 700 + ((index * 37) % 900) })
  else if (!unpaid && !discontinued) {
    const afterMs = 600 + ((index * 53) % 2600)
    if (index % 10 === 3) {
      // A payment of another amount first: the wait's `where` filter skips it.
      actions.push({
        kind: "payment",
        afterMs: afterMs - 200,
        amount: { ...total, amount: total.amount + 1 },
        paymentId: `${ownerId}-pay-wrong`,
      })
    }
    actions.push({ kind: "payment", afterMs, amount: total, paymentId: `${ownerId}-pay` })
  }
  return {
    start: {
      workflow: "Order.fulfill",
      ownerId,
      input: { orderId: ownerId, total, skus, ...(index % 5 === 0 ? { express: true } : {}) },
    },
    actions,
    outcome: cancelled ? "interrupted" : unpaid || discontinued ? "failed" : "succeeded",
    caused: [],
  }
}

const signUp = (runId: string, index: number): PlannedExecution => {
  const ownerId = `${runId}-user-${pad(index)}`
  const domain =
    index % 9 === 4 ? "bounce.example" : index % 7 === 2 ? "greylist.example" : "mail.example"
  const email = `${ownerId}@${domain}`
  const bounced = domain === "bounce.example"
  const verifies = !bounced && index % 5 !== 1
  const actions: PlannedAction[] = []
  if (verifies) {
    const afterMs = 300 + ((index * 71) % 2000)
    actions.push({ kind: "emailVerified", afterMs, email })
    if (index % 5 !== 3) {
      actions.push({
        kind: "profileCompleted",
        afterMs: afterMs + 150 + ((index * 13) % 500),
        displayName: `User ${index}`,
      })
    }
  }
  return {
    start: {
      workflow: "User.signUp",
      ownerId,
      input: { email, plan: PLANS[index % PLANS.length]! },
    },
    actions,
    outcome: bounced ? "failed" : "succeeded",
    caused: verifies ? billingCycles(DEMO_BILLED_CYCLES) : [],
  }
}

const subscription = (runId: string, index: number): PlannedExecution => {
  const plan = PLANS[index % PLANS.length]!
  const lastCycle = 1 + (index % 3)
  return {
    start: {
      workflow: "Subscription.billingCycle",
      ownerId: `${runId}-sub-${pad(index)}`,
      input: {
        plan,
        price: { amount: 900 + index, currency: "USD" },
        cycle: 1,
        lastCycle,
      },
    },
    actions: [],
    outcome: "succeeded",
    caused: billingCycles(lastCycle - 1),
  }
}

/**
 * The plan of one demo run: half orders, three tenths sign-ups, the rest subscriptions.
 *
 * @example
 * const plan = planDemo("demo-3f2a", 300)
 * plan.executions.length // 300
 */
export const planDemo = (runId: string, count: number): DemoPlan => {
  const orders = Math.round(count * 0.5)
  const signUps = Math.round(count * 0.3)
  const subscriptions = count - orders - signUps
  const executions: PlannedExecution[] = []
  // Interleaved, so every workflow is in flight from the first second.
  for (let index = 0; executions.length < count; index++) {
    if (index < orders) executions.push(order(runId, index))
    if (index < signUps) executions.push(signUp(runId, index))
    if (index < subscriptions) executions.push(subscription(runId, index))
  }
  return { runId, executions }
}

/** Executions the plan ends with, by `Owner.workflow` and outcome, start steps' included. */
export const expectedOutcomes = (plan: DemoPlan): Map<string, number> => {
  const counts = new Map<string, number>()
  const add = (workflow: string, outcome: Outcome) => {
    const key = `${workflow} ${outcome}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  for (const execution of plan.executions) {
    add(execution.start.workflow, execution.outcome)
    for (const caused of execution.caused) add(caused.workflow, caused.outcome)
  }
  return counts
}

/** How many events and interrupts the plan sends. */
export const plannedActionCount = (plan: DemoPlan): number =>
  plan.executions.reduce((total, execution) => total + execution.actions.length, 0)
