import { describe, expect, it } from "vitest"
import { edit, hashesOf, movedHashes, SHOP } from "./manifestHashes.js"

/**
 * One test per kind of structural change: the set of hashes that differ from SHOP's is exactly
 * the set the change touches, worked out by hand from what each fingerprint covers (a step: its
 * kind, result types and event; input; output with the declared errors; compatibility over all of
 * those plus the marker ranges; the owner hash over everything).
 */
const base = hashesOf(SHOP)
const moved = (text: string) => movedHashes(base, hashesOf(text))
const sorted = (...names: string[]) => [...names].sort()

describe("a structural change moves exactly the fingerprints it touches:", () => {
  it("an activity's output type moves that step and the compatibility hash", () => {
    const text = edit(SHOP, "          reservationId: string", "          reservationId: integer")
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility", "fulfill.step.reserve"))
  })

  it("the workflow input moves the input and compatibility hashes", () => {
    const text = edit(
      SHOP,
      "      orderId: string\n      total: Money",
      "      orderId: string\n      note?: string\n      total: Money",
    )
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility", "fulfill.input"))
  })

  it("making an input field optional moves the input and compatibility hashes", () => {
    const text = edit(
      SHOP,
      "      orderId: string\n      amount: Money",
      "      orderId?: string\n      amount: Money",
    )
    expect(moved(text)).toEqual(sorted("owner", "refund.compatibility", "refund.input"))
  })

  it("a marker range moves the compatibility hash only", () => {
    const text = edit(SHOP, "        current: 1", "        current: 2")
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility"))
  })

  it("a new marker moves the compatibility hash only", () => {
    const text = edit(
      SHOP,
      "    versions:\n",
      "    versions:\n      express: { min: 0, current: 1 }\n",
    )
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility"))
  })

  it("an event's payload moves the waits on that event, in every workflow", () => {
    const text = edit(SHOP, "    paymentId: string", "    paymentId: integer")
    expect(moved(text)).toEqual(
      sorted(
        "owner",
        "fulfill.compatibility",
        "fulfill.step.paid",
        "refund.compatibility",
        "refund.step.paidBack",
      ),
    )
  })

  it("the payload of an event no step waits for moves the owner hash only", () => {
    const text = edit(SHOP, "    by: string", "    by: string\n    at: integer")
    expect(moved(text)).toEqual(["owner"])
  })

  it("the workflow output moves the output and compatibility hashes", () => {
    const text = edit(
      SHOP,
      "      trackingId: string",
      "      trackingId: string\n      carrier: string",
    )
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility", "fulfill.output"))
  })

  it("a declared error's payload moves the output hash and the steps that list the error", () => {
    const text = edit(SHOP, "        sku: Sku", "        sku: Sku\n        available: integer")
    expect(moved(text)).toEqual(
      sorted("owner", "fulfill.compatibility", "fulfill.output", "fulfill.step.reserve"),
    )
  })

  it("a declared error no step lists moves the output hash only among fingerprints", () => {
    const text = edit(SHOP, "      Fraud: {}", "      Fraud: { score: number }")
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility", "fulfill.output"))
  })

  it("listing one more error on an activity moves that step", () => {
    const text = edit(SHOP, "        errors: [OutOfStock]", "        errors: [OutOfStock, Fraud]")
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility", "fulfill.step.reserve"))
  })

  it("a step's kind moves that step", () => {
    const text = edit(
      SHOP,
      "        kind: sleep\n        duration: 10m",
      "        kind: wait\n        event: Audited",
    )
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility", "fulfill.step.coolOff"))
  })

  it("a wait switched to another event moves that wait", () => {
    const text = edit(SHOP, "        event: Cancelled", "        event: Audited")
    expect(moved(text)).toEqual(sorted("owner", "refund.compatibility", "refund.step.cancelled"))
  })

  it("a race's output moves that race", () => {
    const text = edit(
      SHOP,
      "            enum: [paid, cancelled]",
      "            enum: [paid, cancelled, expired]",
    )
    expect(moved(text)).toEqual(sorted("owner", "fulfill.compatibility", "fulfill.step.first"))
  })

  it("a start step's target moves that step", () => {
    const text = edit(SHOP, "        workflow: refund", "        workflow: fulfill")
    expect(moved(text)).toEqual(
      sorted("owner", "fulfill.compatibility", "fulfill.step.refundLater"),
    )
  })

  it("adding a step adds its fingerprint and moves the compatibility hash", () => {
    const text = `${SHOP}      notify: { kind: activity }\n`
    expect(moved(text)).toEqual(sorted("owner", "refund.compatibility", "refund.step.notify"))
  })

  it("removing a step removes its fingerprint and moves the compatibility hash", () => {
    const text = edit(SHOP, "      cancelled:\n        kind: wait\n        event: Cancelled\n", "")
    expect(moved(text)).toEqual(sorted("owner", "refund.compatibility", "refund.step.cancelled"))
  })

  it("renaming a step replaces its fingerprint's name and moves the compatibility hash", () => {
    const text = edit(SHOP, "      coolOff:", "      pause:")
    const after = hashesOf(text)
    expect(moved(text)).toEqual(
      sorted("owner", "fulfill.compatibility", "fulfill.step.coolOff", "fulfill.step.pause"),
    )
    expect(after["fulfill.step.pause"]).toBe(base["fulfill.step.coolOff"])
  })

  it("a named type's structure moves everything that uses it, through refs, and nothing else", () => {
    // Money is used by fulfill's input, refund's input, the Paid event (waited on in both) and the
    // input of refund.pay, which no fingerprint covers.
    const text = edit(
      SHOP,
      "    amount: integer\n    currency:",
      "    amount: number\n    currency:",
    )
    expect(moved(text)).toEqual(
      sorted(
        "owner",
        "fulfill.compatibility",
        "fulfill.input",
        "fulfill.step.paid",
        "refund.compatibility",
        "refund.input",
        "refund.step.paidBack",
      ),
    )
  })

  it("a named type used in an error payload moves the output hash and the steps listing that error", () => {
    // Sku is used by fulfill's input (skus), the OutOfStock payload (listed by reserve) and reserve's input.
    const text = edit(
      SHOP,
      "    type: string\n    description: A stock keeping unit.",
      "    type: integer",
    )
    expect(moved(text)).toEqual(
      sorted(
        "owner",
        "fulfill.compatibility",
        "fulfill.input",
        "fulfill.output",
        "fulfill.step.reserve",
      ),
    )
  })

  it("renaming the owner moves every compatibility hash and the starts that default to it", () => {
    const text = edit(SHOP, "owner: Shop", "owner: Store")
    expect(moved(text)).toEqual(
      sorted("owner", "fulfill.compatibility", "fulfill.step.refundLater", "refund.compatibility"),
    )
  })
})

describe("settings that do not decide replay move no hash:", () => {
  it("retry policies, timeouts, default sleep durations, the key field and an activity's input", () => {
    let text = SHOP
    text = edit(
      text,
      "          attempts: 5\n          initial: 1s",
      "          attempts: 9\n          initial: 2s\n          factor: 3",
    )
    text = edit(text, "        timeout: 30s", "        timeout: 1m")
    text = edit(text, "        duration: 10m", "        duration: 1h")
    text = edit(text, "        timeout: 1d", "        timeout: 2d")
    text = edit(text, "    key: orderId\n", "")
    text = edit(
      text,
      "        input:\n          amount: Money",
      "        input:\n          amount: Money\n          reason?: string",
    )
    expect(moved(text)).toEqual([])
  })
})
