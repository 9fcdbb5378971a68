import { describe, expect, it } from "vitest"
import {
  executionVerdict,
  type ExecutionRecord,
  type RecordedStep,
} from "../../runtime/compatibility/executionVerdict.js"
import { workflowHashes, type CanonicalWorkflow } from "../../runtime/model/canonicalManifest.js"
import { activity, fulfillV1, obj, sleep, t } from "./canonicalBuilders.js"

const v1 = fulfillV1()
const hashOf = (w: CanonicalWorkflow) => workflowHashes(w).compatibility

const record = (parts: Partial<ExecutionRecord> = {}): ExecutionRecord => ({
  owner: "Order",
  workflow: "fulfill",
  startManifest: v1,
  startManifestHash: hashOf(v1),
  startManifestNewer: false,
  steps: [],
  markers: { fraudCheck: 1 },
  ...parts,
})

const settled = (name: string): RecordedStep => ({ name, kind: "activity", settled: true })
const pending = (name: string): RecordedStep => ({ name, kind: "activity", settled: false })

const runnerWith = (change: Partial<CanonicalWorkflow>): CanonicalWorkflow => ({ ...v1, ...change })
const withSteps = (steps: CanonicalWorkflow["steps"]) =>
  runnerWith({ steps: { ...v1.steps, ...steps } })

const rules = (verdict: ReturnType<typeof executionVerdict>) =>
  verdict.problems.map((p) => [p.rule, p.step ?? p.marker ?? null])

describe("executionVerdict", () => {
  it("replays an execution started under the runner's own manifest", () => {
    const verdict = executionVerdict(v1, record({ steps: [settled("reserve"), pending("screen")] }))
    expect(verdict).toEqual({ problems: [], adopt: false })
  })

  it("refuses when the runner does not have the workflow", () => {
    const verdict = executionVerdict(undefined, record())
    expect(rules(verdict)).toEqual([["workflow-removed", null]])
    expect(verdict.problems[0]!.message).toBe(
      "workflow Order.fulfill is not declared by this runner; executions started under the start manifest cannot run",
    )
    expect(verdict.adopt).toBe(false)
  })

  it("refuses when the start manifest is not stored", () => {
    const runner = withSteps({ audit: activity() })
    const verdict = executionVerdict(runner, record({ startManifest: null }))
    expect(rules(verdict)).toEqual([["start-manifest-missing", null]])
    expect(verdict.problems[0]!.message).toContain(`the start manifest ${hashOf(v1)}`)
  })

  it("refuses when a step of the start manifest is not declared, even if never reached", () => {
    const { screen: _removed, ...steps } = v1.steps
    const verdict = executionVerdict(runnerWith({ steps }), record())
    expect(rules(verdict)).toEqual([["step-removed", "screen"]])
    expect(verdict.problems[0]!.message).toBe(
      'step "screen" of Order.fulfill is not declared by this runner; executions started under the start manifest may have reached it',
    )
  })

  it("refuses when a step of the start manifest is declared with another kind", () => {
    const verdict = executionVerdict(withSteps({ coolOff: activity() }), record())
    expect(rules(verdict)).toEqual([["step-kind-changed", "coolOff"]])
  })

  it("refuses when the input type does not accept the start manifest's", () => {
    const runner = runnerWith({ input: obj({ orderId: t.integer }) })
    const verdict = executionVerdict(runner, record())
    expect(rules(verdict)).toEqual([["input-incompatible", null]])
    expect(verdict.problems[0]!.message).toContain(
      "input.orderId: recorded as string, read as integer",
    )
  })

  it("refuses a recorded step the runner does not declare, even under the runner's own manifest", () => {
    const verdict = executionVerdict(v1, record({ steps: [settled("reserve"), pending("audit")] }))
    expect(rules(verdict)).toEqual([["step-removed", "audit"]])
    expect(verdict.problems[0]!.message).toContain(
      "executions started under the start manifest recorded it",
    )
  })

  it("refuses a recorded step declared with another kind", () => {
    const runner = withSteps({ audit: activity() })
    const verdict = executionVerdict(
      runner,
      record({ steps: [{ name: "audit", kind: "sleep", settled: true }] }),
    )
    expect(rules(verdict)).toEqual([["step-kind-changed", "audit"]])
  })

  it("refuses a settled step whose recorded result no longer decodes", () => {
    const runner = withSteps({ screen: activity(obj({ score: t.integer })) })
    const verdict = executionVerdict(
      runner,
      record({ steps: [settled("reserve"), settled("screen")] }),
    )
    expect(rules(verdict)).toEqual([["step-result-incompatible", "screen"]])
    expect(verdict.adopt).toBe(false)
  })

  it("adopts when only an unsettled step changed its result type", () => {
    const runner = withSteps({ screen: activity(obj({ score: t.integer })) })
    expect(executionVerdict(runner, record({ steps: [settled("reserve")] }))).toEqual({
      problems: [],
      adopt: true,
    })
    expect(
      executionVerdict(runner, record({ steps: [settled("reserve"), pending("screen")] })),
    ).toEqual({ problems: [], adopt: true })
  })

  it("replays without adopting when a settled step changed compatibly and nothing unsettled changed", () => {
    const runner = withSteps({ screen: activity(obj({ score: t.number, "why?": t.string })) })
    expect(executionVerdict(runner, record({ steps: [settled("screen")] }))).toEqual({
      problems: [],
      adopt: false,
    })
  })

  it("replays without adopting when the manifests differ in nothing a step records", () => {
    const runner = withSteps({ audit: activity() })
    expect(executionVerdict(runner, record({ steps: [settled("reserve")] }))).toEqual({
      problems: [],
      adopt: false,
    })
  })

  it("refuses a recorded marker the runner no longer declares", () => {
    const verdict = executionVerdict(runnerWith({ versions: {} }), record())
    expect(rules(verdict)).toEqual([["marker-removed", "fraudCheck"]])
    expect(verdict.problems[0]!.message).toContain("recorded 1")
  })

  it("refuses a recorded marker value outside min..current", () => {
    const runner = runnerWith({ versions: { fraudCheck: { min: 2, current: 3 } } })
    const verdict = executionVerdict(runner, record())
    expect(rules(verdict)).toEqual([["marker-out-of-range", "fraudCheck"]])
    expect(verdict.problems[0]!.message).toBe(
      'marker "fraudCheck" of Order.fulfill is 2..3 in this runner, but executions started under the start manifest recorded 1',
    )
  })

  it("refuses a recorded marker value above the runner's current, locating the current", () => {
    const runner = runnerWith({ versions: { fraudCheck: { min: 0, current: 0 } } })
    const verdict = executionVerdict(runner, record())
    expect(rules(verdict)).toEqual([["marker-out-of-range", "fraudCheck"]])
    expect(verdict.problems[0]!.message).toBe(
      'marker "fraudCheck" of Order.fulfill is 0..0 in this runner, but executions started under the start manifest recorded 1',
    )
  })

  it("adopts nothing when it refuses, though an unsettled step's result type changed too", () => {
    const runner = runnerWith({
      versions: {},
      steps: { ...v1.steps, screen: activity(obj({ score: t.string })) },
    })
    const verdict = executionVerdict(runner, record({ steps: [pending("screen")] }))
    expect(rules(verdict)).toEqual([["marker-removed", "fraudCheck"]])
    expect(verdict.adopt).toBe(false)
    const adopting = executionVerdict(
      runnerWith({ steps: { ...v1.steps, screen: activity(obj({ score: t.string })) } }),
      record({ steps: [pending("screen")] }),
    )
    expect(adopting).toEqual({ problems: [], adopt: true })
  })

  it("replays recorded marker values at either end of the runner's range", () => {
    for (const range of [
      { min: 1, current: 3 },
      { min: 0, current: 1 },
      { min: 1, current: 1 },
    ]) {
      const runner = runnerWith({ versions: { fraudCheck: range } })
      expect(executionVerdict(runner, record()).problems, JSON.stringify(range)).toEqual([])
    }
  })

  it("replays an execution whose marker value is within a widened range", () => {
    const runner = runnerWith({ versions: { fraudCheck: { min: 1, current: 2 } } })
    expect(executionVerdict(runner, record()).problems).toEqual([])
  })

  it("refuses an execution that predates a declared marker with min above 0", () => {
    const runner = runnerWith({
      versions: { fraudCheck: { min: 0, current: 1 }, express: { min: 1, current: 1 } },
    })
    expect(rules(executionVerdict(runner, record()))).toEqual([["marker-min-raised", "express"]])
    const lenient = runnerWith({
      versions: { fraudCheck: { min: 0, current: 1 }, express: { min: 0, current: 1 } },
    })
    expect(executionVerdict(lenient, record()).problems).toEqual([])
  })

  it("never touches an execution whose newer start manifest changed a shared step's result type at all", () => {
    const newer = {
      ...v1,
      steps: { ...v1.steps, screen: activity(obj({ score: t.number, "why?": t.string })) },
    }
    const verdict = executionVerdict(
      v1,
      record({ startManifest: newer, startManifestHash: hashOf(newer), startManifestNewer: true }),
    )
    expect(rules(verdict)).toEqual([["rollback-step-result-changed", "screen"]])
    expect(verdict.problems[0]).toMatchObject({ severity: "error", axis: "rollback" })
    expect(verdict.problems[0]!.message).toBe(
      'the result type of step "screen" of Order.fulfill differs in the start manifest, which was accepted after this runner\'s; its runners may record results this runner cannot read',
    )
    expect(verdict.adopt).toBe(false)
  })

  it("replays an execution of a newer start manifest that changed no shared step", () => {
    const newer = { ...v1, steps: { ...v1.steps, audit: sleep() } }
    const verdict = executionVerdict(
      {
        ...v1,
        steps: { ...v1.steps, audit: sleep() },
        versions: { fraudCheck: { min: 0, current: 2 } },
      },
      record({ startManifest: newer, startManifestHash: hashOf(newer), startManifestNewer: true }),
    )
    expect(verdict).toEqual({ problems: [], adopt: false })
  })

  it("reports every problem at once, each once, in a stable order", () => {
    const { screen: _removed, ...steps } = v1.steps
    const runner = runnerWith({ steps: { ...steps, coolOff: activity() }, versions: {} })
    const verdict = executionVerdict(
      runner,
      record({ steps: [settled("screen"), { name: "coolOff", kind: "sleep", settled: true }] }),
    )
    expect(rules(verdict)).toEqual([
      ["marker-removed", "fraudCheck"],
      ["step-kind-changed", "coolOff"],
      ["step-removed", "screen"],
    ])
  })
})
