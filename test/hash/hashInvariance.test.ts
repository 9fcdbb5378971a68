import { describe, expect, it } from "vitest"
import { isHash } from "../../runtime/model/hash.js"
import { edit, hashesOf, SHOP } from "./manifestHashes.js"

/**
 * Everything issue 7 says never changes a hash, each shown with real YAML through the loader: the
 * variant must give exactly the hashes of SHOP, the owner hash and every fingerprint.
 */
describe("hashes never change with", () => {
  const base = hashesOf(SHOP)

  it("(the base manifest has a hash for every fingerprint)", () => {
    expect(Object.keys(base).sort()).toEqual(
      [
        "owner",
        ...["compatibility", "input", "output"].map((h) => `fulfill.${h}`),
        ...["reserve", "coolOff", "paid", "first", "refundLater"].map((s) => `fulfill.step.${s}`),
        ...["compatibility", "input", "output"].map((h) => `refund.${h}`),
        ...["cancelled", "paidBack", "pay"].map((s) => `refund.step.${s}`),
      ].sort(),
    )
    for (const hash of Object.values(base)) expect(isHash(hash)).toBe(true)
    // A fingerprint covers a step's structure, not its name or workflow: both waits on Paid agree.
    expect(base["fulfill.step.paid"]).toBe(base["refund.step.paidBack"])
    expect(base["fulfill.step.paid"]).not.toBe(base["refund.step.cancelled"])
  })

  it("descriptions: removed, reworded, or added on any type, field, step or workflow", () => {
    let text = SHOP
    text = edit(text, "description: A shop that fulfils and refunds orders.\n", "")
    text = edit(text, "    description: An amount in minor units.\n", "")
    text = edit(
      text,
      "    description: A stock keeping unit.",
      "    description: An article number.",
    )
    text = edit(
      text,
      "    description: Reserve, wait for payment, ship.",
      "    description: Ship it.",
    )
    text = edit(
      text,
      "    paymentId: string\n    amount: Money",
      "    paymentId: { type: string, description: From the processor }\n    amount: Money",
    )
    text = edit(
      text,
      "    reason?: string",
      "    description: The order was cancelled.\n    reason?: { type: string, description: Why }",
    )
    text = edit(
      text,
      "        kind: sleep\n",
      "        kind: sleep\n        description: Give the buyer ten minutes.\n",
    )
    text = edit(
      text,
      "            enum: [paid, cancelled]",
      "            enum: [paid, cancelled]\n            description: Which came first.",
    )
    text = edit(
      text,
      "      trackingId: string",
      "      trackingId: { type: string, description: The carrier's id }",
    )
    text = edit(text, "  refund:\n", "  refund:\n    description: Pay the money back.\n")
    expect(hashesOf(text)).toEqual(base)
  })

  it("retry settings: attempts, backoff, and the declared errors retryOn opts into retries", () => {
    // Whether an attempt is retried is decided when it fails and recorded with it (its next due
    // time): replay never reads the policy, so no change to it is a compatibility question.
    let text = edit(SHOP, "          attempts: 5\n", "          attempts: 2\n          factor: 3\n")
    expect(hashesOf(text)).toEqual(base)
    text = edit(
      text,
      "          initial: 1s\n",
      "          initial: 1s\n          retryOn: [OutOfStock]\n",
    )
    expect(hashesOf(text)).toEqual(base)
  })

  it("comments, anywhere", () => {
    const text = SHOP.split("\n")
      .map((line, index) =>
        line.trim() === ""
          ? line
          : index % 2 === 0
            ? `${line} # note ${index}`
            : `# above ${index}\n${line}`,
      )
      .join("\n")
    expect(text).not.toBe(SHOP)
    expect(hashesOf(text)).toEqual(base)
  })

  it("key order: sections, fields, step keys, events, errors and workflows in another order", () => {
    const reordered = `owner: Shop
workflows:
  refund:
    steps:
      pay:
        output: { refundId: string }
        input: { amount: Money }
        kind: activity
      paidBack: { event: Paid, kind: wait }
      cancelled: { event: Cancelled, kind: wait }
    input: { amount: Money, orderId: string }
  fulfill:
    steps:
      refundLater: { workflow: refund, kind: start }
      first: { output: { winner: { enum: [paid, cancelled] } }, kind: race }
      paid: { timeout: 1d, event: Paid, kind: wait }
      coolOff: { duration: 10m, kind: sleep }
      reserve:
        timeout: 30s
        retry: { initial: 1s, attempts: 5 }
        errors: [OutOfStock]
        output: { reservationId: string }
        input: { skus: "Sku[]" }
        kind: activity
    versions:
      fraudCheck: { current: 1, min: 0 }
    key: orderId
    errors:
      Fraud: {}
      OutOfStock: { sku: Sku }
    output: { trackingId: string }
    input: { skus: "Sku[]", total: Money, orderId: string }
    description: Reserve, wait for payment, ship.
events:
  Audited: { by: string }
  Cancelled: { reason?: string }
  Paid: { amount: Money, paymentId: string }
types:
  Sku: { description: A stock keeping unit., type: string }
  Money: { currency: { enum: [USD, EUR] }, amount: integer, description: An amount in minor units. }
description: A shop that fulfils and refunds orders.
akter: 1
`
    expect(hashesOf(reordered)).toEqual(base)
  })

  it("step order", () => {
    let text = SHOP
    const coolOff = "      coolOff:\n        kind: sleep\n        duration: 10m\n"
    text = edit(text, coolOff, "")
    text = edit(text, "      reserve:\n", `${coolOff}      reserve:\n`)
    text = edit(text, "      cancelled:\n        kind: wait\n        event: Cancelled\n", "")
    text = `${text}      cancelled:\n        kind: wait\n        event: Cancelled\n`
    expect(hashesOf(text)).toEqual(base)
  })

  it("YAML style: flow instead of block, quoting, anchors and aliases", () => {
    const flow = `{ "akter": 1, "owner": "Shop", "description": "A shop that fulfils and refunds orders.",
  "types": { "Money": &money { "description": "An amount in minor units.", "amount": "integer", "currency": { "enum": ["USD", 'EUR'] } },
             "Sku": { "type": "string", "description": "A stock keeping unit." } },
  "events": { "Paid": { "paymentId": "string", "amount": "Money" }, "Cancelled": { "reason?": "string" }, "Audited": { "by": 'string' } },
  "workflows": {
    "fulfill": { "description": "Reserve, wait
                   for payment, ship.",
      "input": { "orderId": "string", "total": "Money", "skus": "Sku[]" }, "output": { "trackingId": "string" },
      "errors": { "OutOfStock": { "sku": "Sku" }, "Fraud": {} }, "key": "orderId",
      "versions": { "fraudCheck": { "min": 0x0, "current": 1 } },
      "steps": {
        "reserve": { "kind": "activity", "input": &skus { "skus": "Sku[]" }, "output": { "reservationId": "string" },
                     "errors": ["OutOfStock"], "retry": { "attempts": 5, "initial": "1s" }, "timeout": "30s" },
        "coolOff": { "kind": "sleep", "duration": "10m" },
        "paid": { "kind": "wait", "event": "Paid", "timeout": "1d" },
        "first": { "kind": "race", "output": { "winner": { "enum": [paid, cancelled] } } },
        "refundLater": { "kind": "start", "workflow": "refund" } } },
    "refund": { "input": { "orderId": "string", "amount": "Money" },
      "steps": { "cancelled": { "kind": "wait", "event": "Cancelled" }, "paidBack": { "kind": "wait", "event": "Paid" },
                 "pay": { "kind": "activity", "input": { "amount": "Money" }, "output": { "refundId": "string" } } } } } }
`
    expect(hashesOf(flow)).toEqual(base)
  })

  it("the names of named types: renamed, or inlined as their structure", () => {
    let renamed = SHOP.replaceAll("Money", "Amount").replaceAll("Sku", "ProductCode")
    expect(renamed).not.toContain("Money")
    expect(hashesOf(renamed)).toEqual(base)

    let inlined = SHOP
    inlined = edit(
      inlined,
      "      total: Money\n",
      "      total: { amount: integer, currency: { enum: [USD, EUR] } }\n",
    )
    inlined = edit(inlined, "      sku: Sku\n", "      sku: string\n")
    inlined = edit(
      inlined,
      '      skus: "Sku[]"\n    output:\n      trackingId',
      "      skus: { array: string }\n    output:\n      trackingId",
    )
    expect(hashesOf(inlined)).toEqual(base)
  })
})
