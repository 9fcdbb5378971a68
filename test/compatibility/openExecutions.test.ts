import { describe, expect, it } from "vitest"
import { compareManifests } from "../../runtime/compatibility/compareManifests.js"
import type { Finding } from "../../runtime/compatibility/finding.js"
import {
  checkOpenExecutions,
  type OpenExecutionAggregates,
  type OpenGroup,
  type OpenMarkerAggregate,
  type OpenStepAggregate,
} from "../../runtime/compatibility/openExecutions.js"
import {
  workflowHashes,
  type CanonicalOwner,
  type CanonicalWorkflow,
} from "../../runtime/model/canonicalManifest.js"
import { activity, fulfillV1, money, obj, orderV1, t, wait } from "./canonicalBuilders.js"

const hashOf = (w: CanonicalWorkflow) => workflowHashes(w).compatibility

const v1 = fulfillV1()
const v1b = fulfillV1({ versions: { fraudCheck: { min: 0, current: 2 } } })

const nextOwner = (change: Partial<CanonicalWorkflow>, base: CanonicalOwner = orderV1()) => ({
  ...base,
  workflows: { fulfill: { ...base.workflows.fulfill!, ...change } },
})

const withoutScreen = (() => {
  const { screen: _removed, ...steps } = v1.steps
  return steps
})()

const group = (
  start: CanonicalWorkflow | null,
  count: number,
  oldestStartedAtMs: number,
  hash = start === null ? "akter1:sha256:gone" : hashOf(start),
): OpenGroup => ({
  owner: "Order",
  workflow: "fulfill",
  startManifestHash: hash,
  startManifest: start,
  count,
  oldestStartedAtMs,
})

const stepRow = (
  of: OpenGroup,
  step: string,
  settled: boolean,
  count: number,
  oldestStartedAtMs: number,
): OpenStepAggregate => ({
  owner: of.owner,
  workflow: of.workflow,
  startManifestHash: of.startManifestHash,
  step,
  kind: "activity",
  settled,
  count,
  oldestStartedAtMs,
})

const markerRow = (
  of: OpenGroup,
  marker: string,
  value: number,
  count: number,
  oldestStartedAtMs: number,
): OpenMarkerAggregate => ({
  owner: of.owner,
  workflow: of.workflow,
  startManifestHash: of.startManifestHash,
  marker,
  value,
  count,
  oldestStartedAtMs,
})

const open = (parts: Partial<OpenExecutionAggregates>): OpenExecutionAggregates => ({
  groups: [],
  steps: [],
  markers: [],
  ...parts,
})

const brief = (findings: readonly Finding[]) =>
  findings.map((f) => ({
    rule: f.rule,
    severity: f.severity,
    subject: f.step ?? f.marker ?? f.event ?? f.workflow,
    open: f.open,
  }))

describe("checkOpenExecutions", () => {
  it("finds nothing when every open execution started under the current manifest", () => {
    const g = group(v1, 3, 1_000)
    const findings = checkOpenExecutions(
      open({ groups: [g], markers: [markerRow(g, "fraudCheck", 1, 3, 1_000)] }),
      [orderV1()],
    )
    expect(findings).toEqual([])
  })

  it("reports a removed step with the open executions whose start manifest contains it", () => {
    const findings = checkOpenExecutions(open({ groups: [group(v1, 3, 1_000)] }), [
      nextOwner({ steps: withoutScreen }),
    ])
    expect(brief(findings)).toEqual([
      {
        rule: "step-removed",
        severity: "error",
        subject: "screen",
        open: { count: 3, oldestStartedAtMs: 1_000 },
      },
    ])
    expect(findings[0]!.message).toContain(
      "is not declared by this manifest; executions started under their start manifest may have reached it",
    )
  })

  it("merges one finding of several groups, summing counts and keeping the oldest start", () => {
    const findings = checkOpenExecutions(
      open({ groups: [group(v1, 3, 5_000), group(v1b, 2, 2_000)] }),
      [nextOwner({ steps: withoutScreen })],
    )
    expect(brief(findings)).toEqual([
      {
        rule: "step-removed",
        severity: "error",
        subject: "screen",
        open: { count: 5, oldestStartedAtMs: 2_000 },
      },
    ])
  })

  it("reports a workflow or an owner type the new manifests no longer declare", () => {
    const g = group(v1, 4, 1_000)
    expect(brief(checkOpenExecutions(open({ groups: [g] }), []))).toEqual([
      {
        rule: "workflow-removed",
        severity: "error",
        subject: "fulfill",
        open: { count: 4, oldestStartedAtMs: 1_000 },
      },
    ])
    expect(checkOpenExecutions(open({ groups: [g] }), [])[0]!.message).toContain(
      "which declares no owner type Order",
    )
  })

  it("reports executions whose start manifest is not stored", () => {
    const findings = checkOpenExecutions(open({ groups: [group(null, 2, 7_000)] }), [orderV1()])
    expect(brief(findings)).toEqual([
      {
        rule: "start-manifest-missing",
        severity: "error",
        subject: "fulfill",
        open: { count: 2, oldestStartedAtMs: 7_000 },
      },
    ])
  })

  it("splits an incompatible result type into the executions that settled it and those runners adopt", () => {
    const g = group(v1, 4, 1_000)
    const next = nextOwner({ steps: { ...v1.steps, screen: activity(obj({ score: t.integer })) } })
    const findings = checkOpenExecutions(
      open({
        groups: [g],
        steps: [stepRow(g, "screen", true, 1, 3_000), stepRow(g, "reserve", true, 4, 1_000)],
      }),
      [next],
    )
    expect(brief(findings)).toEqual([
      {
        rule: "step-result-incompatible",
        severity: "error",
        subject: "screen",
        open: { count: 1, oldestStartedAtMs: 3_000 },
      },
      {
        rule: "step-result-changed",
        severity: "info",
        subject: "screen",
        open: { count: 3, oldestStartedAtMs: 1_000 },
      },
    ])
    expect(findings[1]!.message).toContain(
      "but no execution concerned has settled it; runners of this manifest adopt them",
    )
  })

  it("downgrades a lock-file finding no open execution observes, and drops one they do observe", () => {
    const next = nextOwner({ steps: { ...v1.steps, screen: activity(obj({ score: t.integer })) } })
    const g = group(v1, 4, 1_000)
    const lockFindings = compareManifests(orderV1(), next)
    expect(lockFindings.map((f) => [f.rule, f.severity])).toEqual([
      ["step-result-incompatible", "error"],
    ])
    const findings = checkOpenExecutions(open({ groups: [g] }), [next], { lockFindings })
    expect(brief(findings)).toEqual([
      { rule: "step-result-incompatible", severity: "warning", subject: "screen", open: undefined },
      {
        rule: "step-result-changed",
        severity: "info",
        subject: "screen",
        open: { count: 4, oldestStartedAtMs: 1_000 },
      },
    ])
    expect(findings[0]!.message).toMatch(/; no open execution observes this$/)

    const settled = checkOpenExecutions(
      open({ groups: [g], steps: [stepRow(g, "screen", true, 2, 1_500)] }),
      [next],
      { lockFindings },
    )
    expect(brief(settled).filter((f) => f.rule === "step-result-incompatible")).toEqual([
      {
        rule: "step-result-incompatible",
        severity: "error",
        subject: "screen",
        open: { count: 2, oldestStartedAtMs: 1_500 },
      },
    ])
  })

  it("does not fail on a step removed that no open execution's start manifest contains", () => {
    const next = nextOwner({ steps: withoutScreen })
    const current = next.workflows.fulfill
    const lockFindings = compareManifests(orderV1(), next)
    const findings = checkOpenExecutions(open({ groups: [group(current, 6, 1_000)] }), [next], {
      lockFindings,
    })
    expect(brief(findings)).toEqual([
      { rule: "step-removed", severity: "warning", subject: "screen", open: undefined },
    ])
  })

  it("reports a recorded step the new manifest does not declare, counting the executions that recorded it", () => {
    const g = group(v1, 5, 1_000)
    const findings = checkOpenExecutions(
      open({
        groups: [g],
        steps: [stepRow(g, "audit", false, 2, 4_000), stepRow(g, "audit", true, 1, 9_000)],
      }),
      [orderV1()],
    )
    expect(brief(findings)).toEqual([
      {
        rule: "step-removed",
        severity: "error",
        subject: "audit",
        open: { count: 3, oldestStartedAtMs: 4_000 },
      },
    ])
    expect(findings[0]!.message).toContain(
      "executions started under their start manifest recorded it",
    )
  })

  it("counts executions per recorded marker value and the executions without a marker that needs one", () => {
    const g = group(v1b, 5, 1_000)
    const next = nextOwner({
      versions: { fraudCheck: { min: 2, current: 2 }, express: { min: 1, current: 1 } },
    })
    const findings = checkOpenExecutions(
      open({
        groups: [g],
        markers: [
          markerRow(g, "fraudCheck", 1, 2, 1_000),
          markerRow(g, "fraudCheck", 2, 3, 1_200),
          markerRow(g, "express", 1, 3, 1_500),
        ],
      }),
      [next],
    )
    expect(brief(findings)).toEqual([
      {
        rule: "marker-min-raised",
        severity: "error",
        subject: "express",
        open: { count: 2, oldestStartedAtMs: 1_000 },
      },
      {
        rule: "marker-out-of-range",
        severity: "error",
        subject: "fraudCheck",
        open: { count: 2, oldestStartedAtMs: 1_000 },
      },
    ])
  })

  it("reports an input the new manifest cannot decode and an event its waits cannot", () => {
    const base = orderV1()
    const payment = obj({ paymentId: t.integer, amount: money })
    const next: CanonicalOwner = {
      ...nextOwner({
        input: obj({ orderId: t.integer }),
        steps: { ...v1.steps, paid: wait("PaymentConfirmed", payment) },
      }),
      events: { ...base.events, PaymentConfirmed: payment },
    }
    const findings = checkOpenExecutions(open({ groups: [group(v1, 2, 1_000)] }), [next])
    const twoOpen = { count: 2, oldestStartedAtMs: 1_000 }
    expect(brief(findings)).toEqual([
      {
        rule: "event-payload-incompatible",
        severity: "error",
        subject: "PaymentConfirmed",
        open: twoOpen,
      },
      { rule: "input-incompatible", severity: "error", subject: "fulfill", open: twoOpen },
      { rule: "step-result-changed", severity: "info", subject: "paid", open: twoOpen },
    ])
    expect(findings[0]!.workflow).toBeUndefined()
  })

  it("locates findings in the new manifest of their owner type", () => {
    const findings = checkOpenExecutions(
      open({ groups: [group(v1, 1, 1_000)] }),
      [nextOwner({ steps: withoutScreen })],
      {
        locate: (owner, path) =>
          owner === "Order" && path.join(".") === "workflows.fulfill.steps"
            ? { file: "manifests/order.yaml", line: 28, column: 5 }
            : undefined,
      },
    )
    expect(findings[0]!.location).toEqual({ file: "manifests/order.yaml", line: 28, column: 5 })
  })
})
