/**
 * Every rule a manifest change can trigger, on a real before/after pair of manifests loaded by the
 * manifest loader: the test asserts the exact findings (rule, severity, file:line:column in the
 * after manifest) and a fragment of the rule's message. Positions were read off the fixture files.
 * (`start-manifest-missing` needs a database and is covered by the verdict and open-execution tests.)
 */
import { readFile } from "node:fs/promises"
import { describe, expect, it } from "vitest"
import { formatDiagnostic } from "../../codegen/manifest/diagnostics.js"
import { loadManifestSources, type LoadedManifest } from "../../codegen/manifest/loadManifests.js"
import { compareManifests } from "../../runtime/compatibility/compareManifests.js"
import { RULE_IDS, type RuleId } from "../../runtime/compatibility/finding.js"
import { canonicalOwner } from "../../runtime/model/canonicalManifest.js"

const FIXTURES = "test/fixtures/compatibility"

interface Expected {
  readonly rollback?: boolean
  /** `rule severity line:column`, in report order. */
  readonly findings: readonly string[]
  /** A fragment of the message of the finding of the fixture's own rule. */
  readonly message: string
}

const cases: Record<Exclude<RuleId, "start-manifest-missing">, Expected> = {
  "workflow-removed": {
    findings: ["workflow-removed error 12:1"],
    message: "workflow Order.refund is not declared by this manifest",
  },
  "step-removed": {
    findings: ["step-removed error 20:5"],
    message: 'step "screen" of Order.fulfill is not declared by this manifest',
  },
  "step-kind-changed": {
    findings: ["step-kind-changed error 28:18"],
    message:
      'step "coolOff" of Order.fulfill is an activity step in this manifest but a sleep step',
  },
  "step-result-incompatible": {
    findings: ["step-result-incompatible error 27:19"],
    message: "output.score: recorded as number, read as integer",
  },
  "step-result-changed": {
    findings: ["step-result-changed info 27:9"],
    message: 'the result type of step "screen" of Order.fulfill changed compatibly',
  },
  "input-incompatible": {
    findings: ["input-incompatible error 14:14"],
    message: "input.orderId: recorded as string, read as integer",
  },
  "output-incompatible": {
    findings: ["output-incompatible error 15:35"],
    message: "output.carrier: required, but recorded values lack it",
  },
  "marker-removed": {
    findings: ["marker-removed error 13:3"],
    message: 'marker "fraudCheck" of Order.fulfill is not declared by this manifest',
  },
  "marker-out-of-range": {
    findings: ["marker-out-of-range error 19:29"],
    message:
      "is 0..1 in this manifest, but executions started under the previous manifest recorded values 1..2",
  },
  "marker-min-raised": {
    findings: ["marker-min-raised error 20:18"],
    message: 'marker "express" of Order.fulfill has min 1 in this manifest',
  },
  "event-removed": {
    findings: ["event-removed error 8:1", "step-removed error 19:5"],
    message: 'event "PaymentConfirmed" of Order is not declared by this manifest',
  },
  "event-payload-incompatible": {
    findings: ["event-payload-incompatible error 9:23", "step-result-incompatible error 9:23"],
    message: "paymentId: recorded as string, read as integer",
  },
  "rollback-workflow-added": {
    rollback: true,
    findings: ["rollback-workflow-added info 33:3"],
    message: "workflow Order.refund is not declared by the previous manifest",
  },
  "rollback-step-added": {
    rollback: true,
    findings: ["rollback-step-added info 28:7"],
    message: 'step "audit" of Order.fulfill is not declared by the previous manifest',
  },
  "rollback-step-kind-changed": {
    rollback: true,
    findings: ["rollback-step-kind-changed error 28:18", "step-kind-changed error 28:18"],
    message: "is a sleep step in the previous manifest but an activity step in this manifest",
  },
  "rollback-step-result-incompatible": {
    rollback: true,
    findings: ["rollback-step-result-incompatible error 27:19", "step-result-changed info 27:9"],
    message: "output.score: required, but optional in the recorded type",
  },
  "rollback-step-result-changed": {
    rollback: true,
    findings: ["rollback-step-result-changed info 27:9", "step-result-changed info 27:9"],
    message: "results recorded under this manifest still decode under the previous manifest",
  },
  "rollback-input-incompatible": {
    rollback: true,
    findings: ["rollback-input-incompatible error 14:5"],
    message: "input.total: required, but recorded values lack it",
  },
  "rollback-marker-added": {
    rollback: true,
    findings: ["rollback-marker-added info 20:7"],
    message: 'marker "express" of Order.fulfill is not declared by the previous manifest',
  },
  "rollback-marker-out-of-range": {
    rollback: true,
    findings: ["rollback-marker-out-of-range error 19:29"],
    message:
      "is 0..1 in the previous manifest, but executions started under this manifest recorded 2",
  },
  "rollback-marker-min-raised": {
    rollback: true,
    findings: ["marker-removed error 13:3", "rollback-marker-min-raised error 13:3"],
    message:
      "has min 1 in the previous manifest, but executions started under this manifest without it read 0",
  },
  "rollback-event-payload-incompatible": {
    rollback: true,
    findings: [
      "rollback-event-payload-incompatible error 9:23",
      "rollback-step-result-incompatible error 9:23",
      "step-result-changed info 29:7",
    ],
    message: "paymentId: required, but optional in the recorded type",
  },
}

const load = async (file: string): Promise<LoadedManifest> => {
  const result = loadManifestSources([{ file, text: await readFile(file, "utf8") }])
  expect(result.diagnostics.map(formatDiagnostic)).toEqual([])
  return result.manifests[0]!
}

describe("compatibility fixtures", () => {
  it("has a fixture for every rule a manifest change can trigger", () => {
    expect(Object.keys(cases).sort()).toEqual(
      RULE_IDS.filter((rule) => rule !== "start-manifest-missing").sort(),
    )
  })

  it.each(Object.entries(cases))("%s", async (rule, expected) => {
    const before = await load(`${FIXTURES}/${rule}/before.yaml`)
    const after = await load(`${FIXTURES}/${rule}/after.yaml`)
    const findings = compareManifests(
      canonicalOwner(before.manifest),
      canonicalOwner(after.manifest),
      {
        rollback: expected.rollback === true,
        locate: (path) => {
          const at = after.positions.locate(path)
          return at === undefined ? undefined : { file: after.file, ...at }
        },
      },
    )
    expect(
      findings.map((f) => `${f.rule} ${f.severity} ${f.location?.line}:${f.location?.column}`),
    ).toEqual(expected.findings)
    expect(findings.every((f) => f.location?.file === `${FIXTURES}/${rule}/after.yaml`)).toBe(true)
    const own = findings.find((f) => f.rule === rule)
    expect(own?.message).toContain(expected.message)
    expect(own?.fix.length).toBeGreaterThan(20)
  })
})
