import { describe, expect, it } from "vitest"
import { findingOf, type Finding } from "../../runtime/compatibility/finding.js"
import { applyIgnores, type IgnoreEntry } from "../../runtime/compatibility/ignores.js"

const screenRemoved: Finding = findingOf({
  rule: "step-removed",
  owner: "Order",
  workflow: "fulfill",
  step: "screen",
  message: 'step "screen" of Order.fulfill is not declared by this manifest',
})
const markerRemoved: Finding = findingOf({
  rule: "marker-removed",
  owner: "Order",
  workflow: "fulfill",
  marker: "fraudCheck",
  message: 'marker "fraudCheck" of Order.fulfill is not declared by this manifest',
})

describe("applyIgnores", () => {
  it("marks a matched finding as ignored with its reason, keeping every finding in order", () => {
    const outcome = applyIgnores(
      [screenRemoved, markerRemoved],
      [
        {
          rule: "step-removed",
          owner: "Order",
          workflow: "fulfill",
          step: "screen",
          reason: "  never released  ",
        },
      ],
    )
    expect(outcome.problems).toEqual([])
    expect(outcome.findings).toEqual([
      { ...screenRemoved, ignored: { reason: "never released" } },
      markerRemoved,
    ])
  })

  it("lets an entry without workflow or step match every finding of its rule and owner type", () => {
    const other = { ...screenRemoved, workflow: "refund" }
    const outcome = applyIgnores(
      [screenRemoved, other],
      [{ rule: "step-removed", owner: "Order", reason: "drained" }],
    )
    expect(outcome.findings.map((f) => f.ignored?.reason)).toEqual(["drained", "drained"])
  })

  it("does not match another step, rule or owner type", () => {
    const entries: IgnoreEntry[] = [
      { rule: "step-removed", owner: "Order", step: "ship", reason: "r" },
      { rule: "step-kind-changed", owner: "Order", reason: "r" },
      { rule: "step-removed", owner: "User", reason: "r" },
    ]
    const outcome = applyIgnores([screenRemoved], entries)
    expect(outcome.findings).toEqual([screenRemoved])
    expect(outcome.problems.map((p) => [p.kind, p.severity, p.index])).toEqual([
      ["stale", "warning", 0],
      ["stale", "warning", 1],
      ["stale", "warning", 2],
    ])
    expect(outcome.problems[0]!.message).toBe(
      'ignore entry 1 (step-removed Order step "ship") matches no finding; remove it',
    )
  })

  it("refuses an entry without a reason, and does not apply it", () => {
    const outcome = applyIgnores(
      [screenRemoved],
      [{ rule: "step-removed", owner: "Order", workflow: "fulfill", step: "screen", reason: " " }],
    )
    expect(outcome.findings).toEqual([screenRemoved])
    expect(outcome.problems).toEqual([
      {
        kind: "missing-reason",
        severity: "error",
        index: 0,
        message:
          'ignore entry 1 (step-removed Order.fulfill step "screen") has no reason; write why this break is accepted, e.g. "no executions of it were ever started"',
      },
    ])
  })

  it("refuses an entry naming an unknown rule", () => {
    const outcome = applyIgnores(
      [screenRemoved],
      [{ rule: "step-gone", owner: "Order", reason: "x" }],
    )
    expect(outcome.problems.map((p) => [p.kind, p.severity])).toEqual([["unknown-rule", "error"]])
    expect(outcome.problems[0]!.message).toContain(
      "ignore entry 1 (step-gone Order) names no known rule",
    )
  })

  it("counts an entry as used when an earlier entry matched the same finding", () => {
    const outcome = applyIgnores(
      [screenRemoved],
      [
        { rule: "step-removed", owner: "Order", reason: "first" },
        { rule: "step-removed", owner: "Order", workflow: "fulfill", reason: "second" },
      ],
    )
    expect(outcome.problems).toEqual([])
    expect(outcome.findings[0]!.ignored).toEqual({ reason: "first" })
  })
})
