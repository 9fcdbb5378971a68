/**
 * Every rule a manifest change can trigger, on a real before/after pair of manifests loaded by the
 * manifest loader: the test asserts the fixture's own finding (rule, severity, file:line:column in
 * the after manifest), a fragment of its message, and no other finding than those the edit implies,
 * each listed with why. Positions were read off the fixture files.
 * (`start-manifest-missing` needs a database and is covered by the verdict and open-execution tests.)
 */
import { readFile } from "node:fs/promises"
import { describe, expect, it } from "vitest"
import { formatDiagnostic } from "../../codegen/manifest/diagnostics.js"
import { loadManifestSources, type LoadedManifest } from "../../codegen/manifest/loadManifests.js"
import { compareManifests } from "../../runtime/compatibility/compareManifests.js"
import { RULE_IDS, type RuleId } from "../../runtime/compatibility/finding.js"
import { canonicalOwner } from "../../runtime/model/canonicalManifest.js"
import { canonicalEarlierShapes } from "../../runtime/model/earlierShapes.js"

const FIXTURES = "test/fixtures/compatibility"

interface Expected {
  readonly rollback?: boolean
  /** The fixture's own finding, `rule severity line:column`. */
  readonly finding: string
  /**
   * The other findings its edit cannot help causing, each with why: an edit made to trigger one
   * rule may need a second change (a removed event takes its wait step with it) or be seen from
   * the other side too (a rollback check also runs the forward one).
   */
  readonly implied?: readonly { readonly finding: string; readonly because: string }[]
  /** A fragment of the message of the finding of the fixture's own rule. */
  readonly message: string
}

const cases: Record<Exclude<RuleId, "start-manifest-missing">, Expected> = {
  "workflow-removed": {
    finding: "workflow-removed error 12:1",
    message: "workflow Order.refund is not declared by this manifest",
  },
  "step-removed": {
    finding: "step-removed error 20:5",
    message: 'step "screen" of Order.fulfill is not declared by this manifest',
  },
  "step-kind-changed": {
    finding: "step-kind-changed error 28:18",
    message:
      'step "coolOff" of Order.fulfill is an activity step in this manifest but a sleep step',
  },
  "step-result-incompatible": {
    finding: "step-result-incompatible error 27:19",
    message: "output.score: recorded as number, read as integer",
  },
  "recorded-data-migrated": {
    finding: "recorded-data-migrated info 30:13",
    message:
      'results of step "screen" of Order.fulfill recorded under the previous manifest are read through migration "v1"',
  },
  "step-result-changed": {
    finding: "step-result-changed info 27:9",
    message: 'the result type of step "screen" of Order.fulfill changed compatibly',
  },
  "start-parent-close-changed": {
    finding: "start-parent-close-changed warning 10:61",
    message:
      'the parent-close policy of start step "ship" of Order.fulfill is leave in this manifest but interrupt in the previous manifest; children started under the previous manifest keep interrupt',
  },
  "input-incompatible": {
    finding: "input-incompatible error 14:14",
    message: "input.orderId: recorded as string, read as integer",
  },
  "output-incompatible": {
    finding: "output-incompatible error 15:35",
    message: "output.carrier: required, but recorded values lack it",
  },
  "marker-removed": {
    finding: "marker-removed error 13:3",
    message: 'marker "fraudCheck" of Order.fulfill is not declared by this manifest',
  },
  "marker-out-of-range": {
    finding: "marker-out-of-range error 19:29",
    message:
      "is 0..1 in this manifest, but executions started under the previous manifest recorded values 1..2",
  },
  "marker-min-raised": {
    finding: "marker-min-raised error 20:18",
    message: 'marker "express" of Order.fulfill has min 1 in this manifest',
  },
  "event-removed": {
    finding: "event-removed error 8:1",
    implied: [
      {
        finding: "step-removed error 19:5",
        because: "the wait for the removed event must go too, or the manifest would not load",
      },
    ],
    message: 'event "PaymentConfirmed" of Order is not declared by this manifest',
  },
  "event-payload-incompatible": {
    finding: "event-payload-incompatible error 9:23",
    implied: [
      {
        finding: "step-result-incompatible error 9:23",
        because: "a wait for the event records its payload as its result",
      },
    ],
    message: "paymentId: recorded as string, read as integer",
  },
  "concurrency-key-changed": {
    finding: "concurrency-key-changed error 8:20",
    message:
      'the concurrency key of Order.fulfill is "accountId" in this manifest but "customerId" under the previous manifest',
  },
  "concurrency-limit-lowered": {
    finding: "concurrency-limit-lowered warning 8:37",
    message: "the concurrency limit of Order.fulfill is 1 in this manifest, lowered from 2",
  },
  "concurrency-added": {
    finding: "concurrency-added warning 8:20",
    message: 'Order.fulfill declares the concurrency key "customerId" in this manifest',
  },
  "concurrency-removed": {
    finding: "concurrency-removed warning 6:3",
    message: "Order.fulfill declares no concurrency key in this manifest",
  },
  "rollback-workflow-added": {
    rollback: true,
    finding: "rollback-workflow-added info 33:3",
    message: "workflow Order.refund is not declared by the previous manifest",
  },
  "rollback-step-added": {
    rollback: true,
    finding: "rollback-step-added info 28:7",
    message: 'step "audit" of Order.fulfill is not declared by the previous manifest',
  },
  "rollback-step-kind-changed": {
    rollback: true,
    finding: "rollback-step-kind-changed error 28:18",
    implied: [
      {
        finding: "step-kind-changed error 28:18",
        because: "a changed kind breaks a replay either way: the forward check refuses it too",
      },
    ],
    message: "is a sleep step in the previous manifest but an activity step in this manifest",
  },
  "rollback-step-result-incompatible": {
    rollback: true,
    finding: "rollback-step-result-incompatible error 27:19",
    implied: [
      {
        finding: "step-result-changed info 27:9",
        because:
          "forward, the field made optional still reads the old results: a compatible change",
      },
    ],
    message: "output.score: required, but optional in the recorded type",
  },
  "rollback-step-result-changed": {
    rollback: true,
    finding: "rollback-step-result-changed info 27:9",
    implied: [
      {
        finding: "step-result-changed info 27:9",
        because: "an added optional field is a compatible change seen from either side",
      },
    ],
    message: "results recorded under this manifest still decode under the previous manifest",
  },
  "rollback-input-incompatible": {
    rollback: true,
    finding: "rollback-input-incompatible error 14:5",
    message: "input.total: required, but recorded values lack it",
  },
  "rollback-marker-added": {
    rollback: true,
    finding: "rollback-marker-added info 20:7",
    message: 'marker "express" of Order.fulfill is not declared by the previous manifest',
  },
  "rollback-marker-out-of-range": {
    rollback: true,
    finding: "rollback-marker-out-of-range error 19:29",
    message:
      "is 0..1 in the previous manifest, but executions started under this manifest recorded 2",
  },
  "rollback-marker-min-raised": {
    rollback: true,
    finding: "rollback-marker-min-raised error 13:3",
    implied: [
      {
        finding: "marker-removed error 13:3",
        because:
          "the marker the previous manifest declared with min 1 is gone from this one: forward, its recorded values have no range",
      },
    ],
    message:
      "has min 1 in the previous manifest, but executions started under this manifest without it read 0",
  },
  "rollback-event-payload-incompatible": {
    rollback: true,
    finding: "rollback-event-payload-incompatible error 9:23",
    implied: [
      {
        finding: "rollback-step-result-incompatible error 9:23",
        because:
          "the wait for the event records its payload: the old manifest cannot read it either",
      },
      {
        finding: "step-result-changed info 29:7",
        because: "forward, the wait's result type widened compatibly (a field made optional)",
      },
    ],
    message: "paymentId: required, but optional in the recorded type",
  },
  "schedule-removed": {
    finding: "schedule-removed warning 15:1",
    message: 'schedule "nightly" of Order is not declared by this manifest',
  },
  "schedule-workflow-changed": {
    finding: "schedule-workflow-changed warning 17:5",
    message: "starts Order.audit in this manifest but Order.fulfill in the previous one",
  },
  "schedule-timing-changed": {
    finding: "schedule-timing-changed warning 18:5",
    message:
      'ticks on cron "0 3 * * *" in Europe/Berlin in this manifest but on cron "30 2 * * *" in Europe/Berlin in the previous one',
  },
  "schedule-input-incompatible": {
    finding: "schedule-input-incompatible error 21:5",
    implied: [
      {
        finding: "input-incompatible error 7:14",
        because:
          "the released input fits the released input type, so only a changed input type can refuse it",
      },
    ],
    message: 'the input schedule "nightly" starts Order.fulfill with in the previous manifest',
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
        earlier: canonicalEarlierShapes(after.manifest),
        locate: (path) => {
          const at = after.positions.locate(path)
          return at === undefined ? undefined : { file: after.file, ...at }
        },
      },
    )
    const shown = findings.map(
      (f) => `${f.rule} ${f.severity} ${f.location?.line}:${f.location?.column}`,
    )
    // The own finding, and exactly the implied ones: nothing incidental, in any order.
    expect([...shown].sort()).toEqual(
      [expected.finding, ...(expected.implied ?? []).map((i) => i.finding)].sort(),
    )
    expect(shown.filter((f) => f.startsWith(`${rule} `))).toEqual([expected.finding])
    expect(findings.every((f) => f.location?.file === `${FIXTURES}/${rule}/after.yaml`)).toBe(true)
    const own = findings.find((f) => f.rule === rule)
    expect(own?.message).toContain(expected.message)
    expect(own?.fix.length).toBeGreaterThan(20)
  })
})
