import { describe, expect, it } from "vitest"
import { findingOf, RULES, type Finding } from "../../runtime/compatibility/finding.js"
import type { IgnoreProblem } from "../../runtime/compatibility/ignores.js"
import {
  exitCodeOf,
  formatFindingText,
  formatGithub,
  formatJson,
  formatText,
} from "../../runtime/compatibility/report.js"

const located: Finding = findingOf(
  {
    rule: "step-removed",
    owner: "Order",
    workflow: "fulfill",
    step: "screen",
    message: 'step "screen" of Order.fulfill is not declared by this manifest, 100% gone',
  },
  {
    location: { file: "manifests/order.yaml", line: 14, column: 7 },
    open: { count: 3, oldestStartedAtMs: Date.UTC(2026, 0, 2, 3, 4, 5) },
  },
)
const unlocated: Finding = findingOf({
  rule: "step-result-changed",
  owner: "Order",
  workflow: "fulfill",
  step: "screen",
  message: "the result type changed compatibly",
})
const ignored: Finding = {
  ...located,
  rule: "marker-removed",
  ignored: { reason: "drained, see #12" },
}
const stale: IgnoreProblem = {
  kind: "stale",
  severity: "warning",
  index: 0,
  message: "ignore entry 1 matches no finding",
}

describe("formatFindingText", () => {
  it("prints file:line:column, severity and rule, then the fix and the open executions", () => {
    expect(formatFindingText(located)).toBe(
      [
        'manifests/order.yaml:14:7: error[step-removed] step "screen" of Order.fulfill is not declared by this manifest, 100% gone',
        `  fix: ${RULES["step-removed"].fix}`,
        "  open: 3 open executions, the oldest started 2026-01-02T03:04:05.000Z",
      ].join("\n"),
    )
  })

  it("starts with the owner type and workflow when the finding has no location", () => {
    expect(formatFindingText(unlocated).split("\n")[0]).toBe(
      "Order.fulfill: info[step-result-changed] the result type changed compatibly",
    )
  })

  it("says why an ignored finding is ignored", () => {
    expect(formatFindingText(ignored).split("\n").at(-1)).toBe("  ignored: drained, see #12")
  })
})

describe("formatText", () => {
  it("ends with a summary that does not count ignored findings", () => {
    const text = formatText({ findings: [located, unlocated, ignored], ignoreProblems: [stale] })
    const lines = text.split("\n")
    expect(lines).toContain("warning[ignore-stale] ignore entry 1 matches no finding")
    expect(lines.at(-1)).toBe("1 error, 0 warnings, 1 info, 1 ignored")
  })
})

describe("formatJson", () => {
  it("parses back to the findings, a summary and the exit code", () => {
    const parsed = JSON.parse(
      formatJson({ findings: [located, unlocated, ignored], ignoreProblems: [stale] }),
    )
    expect(parsed.findings).toEqual([located, unlocated, ignored])
    expect(parsed.ignoreProblems).toEqual([stale])
    expect(parsed.summary).toEqual({ errors: 1, warnings: 0, infos: 1, ignored: 1 })
    expect(parsed.exitCode).toBe(1)
  })
})

// Parses one workflow command as GitHub's runner does: `::level props::data`, escapes undone.
const parseCommand = (line: string) => {
  const match = /^::(\w+) ?([^:]*)::(.*)$/.exec(line)
  if (match === null) throw new Error(`not a workflow command: ${line}`)
  const unescape = (text: string) =>
    text
      .replaceAll("%0A", "\n")
      .replaceAll("%0D", "\r")
      .replaceAll("%3A", ":")
      .replaceAll("%2C", ",")
      .replaceAll("%25", "%")
  const properties = Object.fromEntries(
    match[2]!
      .split(",")
      .filter((part) => part !== "")
      .map((part) => {
        const [name, value] = part.split("=")
        return [name!, unescape(value!)]
      }),
  )
  return { level: match[1], properties, message: unescape(match[3]!) }
}

describe("formatGithub", () => {
  it("emits one annotation per finding with file, line, column and the rule as title", () => {
    const lines = formatGithub({
      findings: [located, unlocated, ignored],
      ignoreProblems: [stale],
    }).split("\n")
    expect(
      lines[0]!.startsWith("::error file=manifests/order.yaml,line=14,col=7,title=step-removed::"),
    ).toBe(true)
    expect(lines.map(parseCommand)).toEqual([
      {
        level: "error",
        properties: { file: "manifests/order.yaml", line: "14", col: "7", title: "step-removed" },
        message: [
          located.message,
          `fix: ${located.fix}`,
          "open: 3 open executions, the oldest started 2026-01-02T03:04:05.000Z",
        ].join("\n"),
      },
      {
        level: "notice",
        properties: { title: "step-result-changed" },
        message: `Order.fulfill: ${unlocated.message}\nfix: ${unlocated.fix}`,
      },
      {
        level: "notice",
        properties: {
          file: "manifests/order.yaml",
          line: "14",
          col: "7",
          title: "marker-removed (ignored)",
        },
        message: [
          located.message,
          `fix: ${located.fix}`,
          "open: 3 open executions, the oldest started 2026-01-02T03:04:05.000Z",
          "ignored: drained, see #12",
        ].join("\n"),
      },
      { level: "warning", properties: { title: "ignore-stale" }, message: stale.message },
    ])
  })

  it("keeps each annotation on one line whatever the message holds", () => {
    const tricky = { ...unlocated, message: "a\nb\r\nc: d, e" }
    const out = formatGithub({ findings: [tricky] })
    expect(out.split("\n")).toHaveLength(1)
    expect(parseCommand(out).message.startsWith("Order.fulfill: a\nb\r\nc: d, e")).toBe(true)
  })
})

describe("exitCodeOf", () => {
  const invalidIgnore: IgnoreProblem = {
    kind: "missing-reason",
    severity: "error",
    index: 0,
    message: "m",
  }

  it.each([
    ["no findings", { status: "checked", findings: [] }, 0],
    [
      "only infos and warnings",
      { status: "checked", findings: [unlocated, { ...located, severity: "warning" }] },
      0,
    ],
    ["an error", { status: "checked", findings: [unlocated, located] }, 1],
    ["only ignored errors", { status: "checked", findings: [ignored], ignoreProblems: [stale] }, 0],
    [
      "an ignore entry without a reason",
      { status: "checked", findings: [located], ignoreProblems: [invalidIgnore] },
      2,
    ],
    [
      "invalid input",
      { status: "invalid", message: "manifests/order.yaml:3:1: error[unknown-key]" },
      2,
    ],
    ["a crash", { status: "crashed", error: new TypeError("boom") }, 2],
  ] as const)("exits %s → %i", (_name, outcome, code) => {
    expect(exitCodeOf(outcome)).toBe(code)
  })
})
