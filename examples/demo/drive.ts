/**
 * The demo's hands: starts the planned executions and performs their planned actions (emits and
 * interrupts) through the generated clients, each with a command id derived from the plan, so a
 * retried call applies once.
 */
import type { Akter } from "akter"
import { Order, Subscription, User } from "../../generated/index.js"
import type { PlannedAction, PlannedExecution } from "./plan.js"

export interface DemoClients {
  readonly orders: ReturnType<typeof Order.client>
  readonly users: ReturnType<typeof User.client>
  readonly subscriptions: ReturnType<typeof Subscription.client>
}

export const demoClients = (akter: Akter): DemoClients => ({
  orders: Order.client(akter),
  users: User.client(akter),
  subscriptions: Subscription.client(akter),
})

/** Starts one planned execution; resolves to its execution id. */
export const startPlanned = async (
  clients: DemoClients,
  planned: PlannedExecution,
): Promise<string> => {
  const { start } = planned
  const commandId = `${start.ownerId}-start`
  switch (start.workflow) {
    case "Order.fulfill":
      return (await clients.orders.fulfill.start(start.ownerId, start.input, { commandId }))
        .executionId
    case "User.signUp":
      return (await clients.users.signUp.start(start.ownerId, start.input, { commandId }))
        .executionId
    case "Subscription.billingCycle":
      return (
        await clients.subscriptions.billingCycle.start(start.ownerId, start.input, { commandId })
      ).executionId
  }
}

/** Performs one planned action on the execution's owner. */
export const performAction = async (
  clients: DemoClients,
  planned: PlannedExecution,
  executionId: string,
  action: PlannedAction,
): Promise<void> => {
  const ownerId = planned.start.ownerId
  const commandId = `${ownerId}-${action.kind}-${action.afterMs}`
  switch (action.kind) {
    case "payment":
      await clients.orders.emit(
        ownerId,
        "PaymentConfirmed",
        { paymentId: action.paymentId, amount: action.amount },
        { commandId },
      )
      return
    case "cancel":
      await clients.orders.emit(ownerId, "OrderCancelled", { reason: "customer" }, { commandId })
      await clients.orders.fulfill.attach(executionId).interrupt()
      return
    case "emailVerified":
      await clients.users.emit(ownerId, "EmailVerified", { email: action.email }, { commandId })
      return
    case "profileCompleted":
      await clients.users.emit(
        ownerId,
        "ProfileCompleted",
        { displayName: action.displayName },
        { commandId },
      )
      return
  }
}
