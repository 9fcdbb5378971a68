/**
 * The example app at the manifests' own pace, with akter/testing's clock: the paths the demo
 * cannot show in seconds (a declined card retried over hours, dunning, a day-long deadline), and
 * the compensation of an unpaid order.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startRunner, type Runner } from "../../runtime/index.js"
import {
  inspectExecution,
  runUntilIdle,
  testAkter,
  type TestAkter,
} from "../../runtime/testing/index.js"
import { Order, Subscription, User } from "../../generated/index.js"
import { ACTIVITY_LOG_VARIABLE, readActivityRuns } from "../../examples/activityLog.js"
import { makeWorkflows } from "../../examples/app.js"
import { manifestPace } from "../../examples/pace.js"

describe("the example workflows at manifest pace", { timeout: 240_000 }, () => {
  let akter: TestAkter
  let runner: Runner
  const logDir = mkdtempSync(path.join(tmpdir(), "akter-examples-"))
  const activityLog = path.join(logDir, "activities.log")

  beforeAll(async () => {
    process.env[ACTIVITY_LOG_VARIABLE] = activityLog
    akter = await testAkter()
    // Moving the clock by days lapses the runner's leases; a short lease takes them back quickly.
    runner = await startRunner({
      akter,
      workflows: makeWorkflows(manifestPace),
      pollMs: 20,
      leaseMs: 2000,
    })
  })

  afterAll(async () => {
    await runner?.close()
    await akter?.close()
    delete process.env[ACTIVITY_LOG_VARIABLE]
    rmSync(logDir, { recursive: true, force: true })
  })

  const idle = () => runUntilIdle(akter, runner, { timeoutMs: 60_000 })

  it("fails an order nobody pays within a day with PaymentMissing, releasing its reservation first", async () => {
    const orders = Order.client(akter)
    const run = await orders.fulfill.start("o-unpaid", {
      orderId: "o-unpaid",
      total: { amount: 1200, currency: "USD" },
      skus: ["sku-1"],
    })
    await idle()
    akter.advance("11 minutes")
    await idle()
    const waiting = await inspectExecution(akter, run.executionId)
    expect(waiting?.steps.map((step) => [step.step, step.settled])).toEqual([
      ["reserve", true],
      ["screen", true],
      ["coolOff", true],
      ["paid", false],
    ])
    // A payment of another amount does not pass the wait's filter.
    await orders.emit("o-unpaid", "PaymentConfirmed", {
      paymentId: "p-wrong",
      amount: { amount: 1, currency: "USD" },
    })
    await idle()
    expect((await run.status()).status).toBe("suspended")
    akter.advance("1 day")
    await idle()
    const result = await run.result({ timeout: "10 seconds" })
    expect(result._tag).toBe("Failure")
    expect(result._tag === "Failure" ? result.error._tag : undefined).toBe("PaymentMissing")
    const ran = readActivityRuns(activityLog)
      .filter((line) => line.executionId === run.executionId)
      .map((line) => line.step)
    expect(ran).toEqual(["reserve", "screen", "release"])
  })

  it("retries a declined card over hours, then takes the updated card through dunning", async () => {
    const subscriptions = Subscription.client(akter)
    const run = await subscriptions.billingCycle.start("acct-expired-card", {
      plan: "pro",
      price: { amount: 2900, currency: "USD" },
      cycle: 1,
      lastCycle: 1,
    })
    await idle()
    akter.advance("31 days")
    await idle()
    // Four attempts, 1 h, 3 h and 9 h apart (initial 1h, factor 3).
    for (const hours of [1, 3, 9]) {
      akter.advance(`${hours} hours`)
      await idle()
    }
    const dunning = await inspectExecution(akter, run.executionId)
    expect(dunning?.steps.map((step) => [step.step, step.attempt, step.exit?._tag])).toEqual([
      ["period", 1, "Success"],
      ["charge", 1, "Failure"],
      ["charge", 2, "Failure"],
      ["charge", 3, "Failure"],
      ["charge", 4, "Failure"],
      ["updated", 1, undefined],
    ])
    await subscriptions.emit("acct-expired-card", "PaymentMethodUpdated", { last4: "4242" })
    const result = await run.result({ timeout: "10 seconds" })
    expect(result._tag).toBe("Success")
    expect(result._tag === "Success" ? result.value.outcome : undefined).toBe("ended")
  })

  it("lapses a subscription whose card is declined and never updated", async () => {
    const subscriptions = Subscription.client(akter)
    const run = await subscriptions.billingCycle.start("acct-expired-card-2", {
      plan: "basic",
      price: { amount: 900, currency: "USD" },
      cycle: 1,
    })
    await idle()
    akter.advance("31 days")
    await idle()
    for (const hours of [1, 3, 9]) {
      akter.advance(`${hours} hours`)
      await idle()
    }
    akter.advance("3 days")
    await idle()
    expect(await run.result({ timeout: "10 seconds" })).toEqual({
      _tag: "Success",
      value: { outcome: "lapsed" },
    })
  })

  it("gives an unverified user a free account once the day-long deadline wins the race", async () => {
    const users = User.client(akter)
    const run = await users.signUp.start("u-late", { email: "u-late@mail.example", plan: "team" })
    await idle()
    akter.advance("25 hours")
    await idle()
    expect(await run.result({ timeout: "10 seconds" })).toEqual({
      _tag: "Success",
      value: { accountId: "u-late-acct" },
    })
  })
})
