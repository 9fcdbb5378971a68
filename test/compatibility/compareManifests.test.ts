import { describe, expect, it } from "vitest"
import { compareManifests } from "../../runtime/compatibility/compareManifests.js"
import type { Finding } from "../../runtime/compatibility/finding.js"
import type { CanonicalOwner, CanonicalWorkflow } from "../../runtime/model/canonicalManifest.js"
import {
  activity,
  arr,
  en,
  fulfillV1,
  money,
  obj,
  orderV1,
  owner,
  paymentConfirmed,
  sleep,
  start,
  t,
  wait,
  workflow,
} from "./canonicalBuilders.js"

const withFulfill = (change: (w: CanonicalWorkflow) => CanonicalWorkflow): CanonicalOwner => {
  const base = orderV1()
  return { ...base, workflows: { fulfill: change(base.workflows.fulfill!) } }
}

const withSteps = (steps: CanonicalWorkflow["steps"]) =>
  withFulfill((w) => ({ ...w, steps: { ...w.steps, ...steps } }))

const summary = (findings: readonly Finding[]) =>
  findings.map((f) => ({
    rule: f.rule,
    severity: f.severity,
    ...(f.step === undefined ? {} : { step: f.step }),
    ...(f.marker === undefined ? {} : { marker: f.marker }),
    ...(f.event === undefined ? {} : { event: f.event }),
  }))

const only = (findings: readonly Finding[]): Finding => {
  expect(findings).toHaveLength(1)
  return findings[0]!
}

describe("compareManifests: workflows", () => {
  it("finds nothing between a manifest and itself", () => {
    expect(compareManifests(orderV1(), orderV1(), { rollback: true })).toEqual([])
  })

  it("reports a removed workflow as a replay error with a fix", () => {
    const next = { ...orderV1(), workflows: {} }
    const finding = only(compareManifests(orderV1(), next))
    expect(finding).toMatchObject({
      rule: "workflow-removed",
      axis: "replay",
      severity: "error",
      owner: "Order",
      workflow: "fulfill",
    })
    expect(finding.message).toBe(
      "workflow Order.fulfill is not declared by this manifest; executions started under the previous manifest cannot run",
    )
    expect(finding.fix).toContain("keep the workflow declared until its executions have finished")
  })

  it("reports every workflow of an owner type whose manifest was deleted", () => {
    const finding = only(compareManifests(orderV1(), undefined))
    expect(finding.rule).toBe("workflow-removed")
    expect(finding.message).toContain("which declares no owner type Order")
  })

  it("refuses to compare two owner types", () => {
    expect(() => compareManifests(orderV1(), owner("User", []))).toThrow(
      "owner types differ (Order and User)",
    )
  })
})

describe("compareManifests: steps", () => {
  it("reports a removed step", () => {
    const next = withFulfill((w) => {
      const { screen: _removed, ...steps } = w.steps
      return { ...w, steps }
    })
    const finding = only(compareManifests(orderV1(), next))
    expect(finding).toMatchObject({ rule: "step-removed", severity: "error", step: "screen" })
    expect(finding.message).toContain(
      'step "screen" of Order.fulfill is not declared by this manifest; executions started under the previous manifest may have reached it',
    )
  })

  it("accepts an added step", () => {
    expect(compareManifests(orderV1(), withSteps({ audit: activity() }))).toEqual([])
  })

  it("reports a changed kind, and nothing about the changed step's results", () => {
    const finding = only(compareManifests(orderV1(), withSteps({ coolOff: activity() })))
    expect(finding).toMatchObject({ rule: "step-kind-changed", step: "coolOff" })
    expect(finding.message).toContain(
      'step "coolOff" of Order.fulfill is an activity step in this manifest but a sleep step in the previous manifest',
    )
  })

  it("reports a result type that no longer accepts the old one as incompatible: the step may be settled", () => {
    const finding = only(
      compareManifests(orderV1(), withSteps({ screen: activity(obj({ score: t.integer })) })),
    )
    expect(finding).toMatchObject({
      rule: "step-result-incompatible",
      axis: "decode",
      severity: "error",
      step: "screen",
    })
    expect(finding.message).toContain("output.score: recorded as number, read as integer")
    expect(finding.fix).toContain("put the change behind a version marker and add a new step")
  })

  it("reports a result type that still accepts the old one as an info", () => {
    const widened = withSteps({ screen: activity(obj({ score: t.number, "reason?": t.string })) })
    const finding = only(compareManifests(orderV1(), widened))
    expect(finding).toMatchObject({ rule: "step-result-changed", severity: "info", step: "screen" })
    expect(finding.message).toContain("changed compatibly")
  })

  it("reports a declared error a step no longer declares", () => {
    const next = withSteps({ reserve: activity(obj({ reservationId: t.string })) })
    expect(only(compareManifests(orderV1(), next)).message).toContain(
      "errors.OutOfStock: error is not declared by the reading manifest",
    )
  })

  it("reports a wait that waits for another event", () => {
    const next = withSteps({ paid: wait("OrderCancelled", obj({ reason: t.string })) })
    expect(only(compareManifests(orderV1(), next)).message).toContain(
      'event: waits for "OrderCancelled" instead of "PaymentConfirmed"',
    )
  })

  it("reports a start step that starts another workflow", () => {
    const before = withSteps({ next: start("Order", "fulfill") })
    const after = withSteps({ next: start("Order", "refund") })
    expect(only(compareManifests(before, after)).message).toContain(
      "workflow: starts Order.refund instead of Order.fulfill",
    )
  })
})

describe("compareManifests: input and output", () => {
  const input = (fields: Record<string, Parameters<typeof obj>[0][string]>) =>
    withFulfill((w) => ({
      ...w,
      input: obj({
        orderId: t.string,
        total: money,
        skus: arr(t.string),
        "express?": t.boolean,
        ...fields,
      }),
    }))

  it("accepts an added optional input field", () => {
    expect(compareManifests(orderV1(), input({ "note?": t.string }))).toEqual([])
  })

  it("reports an added required input field", () => {
    const finding = only(compareManifests(orderV1(), input({ priority: t.integer })))
    expect(finding).toMatchObject({ rule: "input-incompatible", severity: "error" })
    expect(finding.message).toBe(
      "inputs of Order.fulfill recorded under the previous manifest do not decode under this manifest: input.priority: required, but recorded values lack it",
    )
  })

  it("reports an output field removed, for clients built from the previous manifest", () => {
    const next = withFulfill((w) => ({ ...w, output: obj({ trackingId: t.string }) }))
    const finding = only(compareManifests(orderV1(), next))
    expect(finding.rule).toBe("output-incompatible")
    expect(finding.message).toBe(
      "results of Order.fulfill written under this manifest do not decode in clients built from the previous manifest, which may be awaiting them: output.paymentId: required, but recorded values lack it",
    )
  })

  it("reports an output field added as required, for results recorded under the previous manifest", () => {
    const next = withFulfill((w) => ({
      ...w,
      output: obj({ trackingId: t.string, paymentId: t.string, carrier: t.string }),
    }))
    expect(only(compareManifests(orderV1(), next)).message).toBe(
      "results recorded under the previous manifest do not decode under this manifest: output.carrier: required, but recorded values lack it",
    )
  })

  it("accepts an output field added as optional", () => {
    const next = withFulfill((w) => ({
      ...w,
      output: obj({ trackingId: t.string, paymentId: t.string, "carrier?": t.string }),
    }))
    expect(compareManifests(orderV1(), next)).toEqual([])
  })

  it("reports a declared error added to the workflow: clients built from the previous manifest cannot decode it", () => {
    const next = withFulfill((w) => ({ ...w, errors: { ...w.errors, Fraud: obj({}) } }))
    expect(only(compareManifests(orderV1(), next)).message).toContain(
      "clients built from the previous manifest, which may be awaiting them: errors.Fraud: error is not declared by the reading manifest",
    )
  })
})

describe("compareManifests: markers", () => {
  const markers = (versions: CanonicalWorkflow["versions"]) =>
    withFulfill((w) => ({ ...w, versions }))

  it("reports a removed marker", () => {
    const finding = only(compareManifests(orderV1(), markers({})))
    expect(finding).toMatchObject({ rule: "marker-removed", marker: "fraudCheck" })
    expect(finding.message).toContain("executions started under the previous manifest recorded 1")
  })

  it("reports a lowered current as out of range", () => {
    const finding = only(
      compareManifests(
        markers({ fraudCheck: { min: 0, current: 2 } }),
        markers({ fraudCheck: { min: 0, current: 1 } }),
      ),
    )
    expect(finding.rule).toBe("marker-out-of-range")
    expect(finding.message).toBe(
      'marker "fraudCheck" of Order.fulfill is 0..1 in this manifest, but executions started under the previous manifest recorded values 1..2',
    )
  })

  it("reports a raised min above a possibly recorded value, and above 0 for executions that predate the marker", () => {
    const findings = compareManifests(
      markers({ fraudCheck: { min: 0, current: 2 } }),
      markers({ fraudCheck: { min: 2, current: 2 } }),
    )
    expect(summary(findings)).toEqual([
      { rule: "marker-min-raised", severity: "error", marker: "fraudCheck" },
      { rule: "marker-out-of-range", severity: "error", marker: "fraudCheck" },
    ])
  })

  it("accepts a raised min when the previous min already excluded executions without the marker", () => {
    expect(
      compareManifests(
        markers({ fraudCheck: { min: 1, current: 2 } }),
        markers({ fraudCheck: { min: 1, current: 3 } }),
      ),
    ).toEqual([])
  })

  it("reports a new marker with min above 0: executions of the previous manifest read 0", () => {
    const findings = compareManifests(
      orderV1(),
      markers({ fraudCheck: { min: 0, current: 1 }, express: { min: 1, current: 1 } }),
    )
    const finding = only(findings)
    expect(finding).toMatchObject({ rule: "marker-min-raised", marker: "express" })
    expect(finding.message).toBe(
      'marker "express" of Order.fulfill has min 1 in this manifest, but executions started under the previous manifest without it read 0',
    )
  })

  it("accepts a new marker with min 0 and a raised current", () => {
    expect(
      compareManifests(
        orderV1(),
        markers({ fraudCheck: { min: 0, current: 2 }, express: { min: 0, current: 1 } }),
      ),
    ).toEqual([])
  })
})

describe("compareManifests: events", () => {
  const events = (list: CanonicalOwner["events"]): CanonicalOwner => ({
    ...orderV1(),
    events: list,
  })

  it("reports a removed event that workflows waited for as an error, and one nothing waited for as a warning", () => {
    const next = withSteps({ paid: sleep() })
    const findings = compareManifests(orderV1(), { ...next, events: {} })
    expect(summary(findings)).toEqual([
      { rule: "event-removed", severity: "error", event: "PaymentConfirmed" },
      { rule: "event-removed", severity: "warning", event: "OrderCancelled" },
      { rule: "step-kind-changed", severity: "error", step: "paid" },
    ])
    expect(findings[0]!.message).toBe(
      'event "PaymentConfirmed" of Order is not declared by this manifest; workflows of the previous manifest wait for it, and its events stay in the log',
    )
  })

  it("reports an event payload that no longer accepts the old one", () => {
    const next = events({
      PaymentConfirmed: obj({
        paymentId: t.string,
        amount: obj({ amount: t.string, currency: en("EUR", "USD") }),
      }),
      OrderCancelled: obj({ reason: t.string }),
    })
    const finding = only(compareManifests(orderV1(), next))
    expect(finding).toMatchObject({ rule: "event-payload-incompatible", event: "PaymentConfirmed" })
    expect(finding.message).toBe(
      '"PaymentConfirmed" events emitted under the previous manifest do not decode under this manifest: amount.amount: recorded as integer, read as string',
    )
  })

  it("accepts an added event and an added optional payload field", () => {
    const next = events({
      PaymentConfirmed: obj({ paymentId: t.string, amount: money, "note?": t.string }),
      OrderCancelled: obj({ reason: t.string }),
      Refunded: obj({}),
    })
    expect(compareManifests(orderV1(), next)).toEqual([])
  })
})

describe("compareManifests: rollback", () => {
  it("reports nothing of the rollback axis unless asked", () => {
    const next = withSteps({ audit: activity() })
    expect(compareManifests(orderV1(), next)).toEqual([])
    const finding = only(compareManifests(orderV1(), next, { rollback: true }))
    expect(finding).toMatchObject({
      rule: "rollback-step-added",
      axis: "rollback",
      severity: "info",
      step: "audit",
    })
    expect(finding.message).toBe(
      'step "audit" of Order.fulfill is not declared by the previous manifest; executions started under this manifest may have reached it after a rollback',
    )
  })

  it("reports a removed result field: old code cannot read new results", () => {
    const next = withSteps({ reserve: activity(obj({}), { OutOfStock: obj({ sku: t.string }) }) })
    expect(summary(compareManifests(orderV1(), next, { rollback: true }))).toEqual([
      { rule: "rollback-step-result-incompatible", severity: "error", step: "reserve" },
      { rule: "step-result-changed", severity: "info", step: "reserve" },
    ])
  })

  it("reports a raised current: the previous manifest cannot replay executions that recorded it", () => {
    const next = withFulfill((w) => ({ ...w, versions: { fraudCheck: { min: 0, current: 2 } } }))
    const finding = only(compareManifests(orderV1(), next, { rollback: true }))
    expect(finding).toMatchObject({ rule: "rollback-marker-out-of-range", marker: "fraudCheck" })
    expect(finding.message).toContain(
      "is 0..1 in the previous manifest, but executions started under this manifest recorded 2",
    )
  })

  it("reports added workflows and markers as infos", () => {
    const base = orderV1()
    const next: CanonicalOwner = {
      ...base,
      workflows: {
        fulfill: {
          ...base.workflows.fulfill!,
          versions: { fraudCheck: { min: 0, current: 1 }, express: { min: 0, current: 1 } },
        },
        refund: workflow("Order", "refund"),
      },
    }
    expect(summary(compareManifests(base, next, { rollback: true }))).toEqual([
      { rule: "rollback-marker-added", severity: "info", marker: "express" },
      { rule: "rollback-workflow-added", severity: "info" },
    ])
  })

  it("reports a removed required input field and a removed payload field", () => {
    const base = orderV1()
    const next: CanonicalOwner = {
      ...base,
      events: { ...base.events, PaymentConfirmed: obj({ amount: money }) },
      workflows: {
        fulfill: {
          ...fulfillV1(),
          input: obj({ orderId: t.string, total: money, "express?": t.boolean }),
          steps: { ...fulfillV1().steps, paid: wait("PaymentConfirmed", obj({ amount: money })) },
        },
      },
    }
    expect(summary(compareManifests(base, next, { rollback: true }))).toEqual([
      { rule: "rollback-event-payload-incompatible", severity: "error", event: "PaymentConfirmed" },
      { rule: "rollback-input-incompatible", severity: "error" },
      { rule: "rollback-step-result-incompatible", severity: "error", step: "paid" },
      { rule: "step-result-changed", severity: "info", step: "paid" },
    ])
  })

  it("reports a removed marker with min above 0: executions of the new manifest lack it", () => {
    const before = withFulfill((w) => ({ ...w, versions: { fraudCheck: { min: 1, current: 1 } } }))
    const after = withFulfill((w) => ({ ...w, versions: {} }))
    expect(summary(compareManifests(before, after, { rollback: true }))).toEqual([
      { rule: "marker-removed", severity: "error", marker: "fraudCheck" },
      { rule: "rollback-marker-min-raised", severity: "error", marker: "fraudCheck" },
    ])
  })
})

describe("compareManifests: locations", () => {
  it("locates a finding at the first of its paths the new manifest has", () => {
    const asked: string[] = []
    const next = withFulfill((w) => {
      const { screen: _removed, ...steps } = w.steps
      return { ...w, steps }
    })
    const finding = only(
      compareManifests(orderV1(), next, {
        locate: (path) => {
          asked.push(path.join("."))
          return path.join(".") === "workflows.fulfill.steps"
            ? { file: "manifests/order.yaml", line: 28, column: 5 }
            : undefined
        },
      }),
    )
    expect(finding.location).toEqual({ file: "manifests/order.yaml", line: 28, column: 5 })
    expect(asked).toEqual(["workflows.fulfill.steps.screen", "workflows.fulfill.steps"])
  })
})
