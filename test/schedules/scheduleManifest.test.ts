/**
 * Schedules in the manifest: a valid declaration becomes the model and canonical form with its
 * defaults filled in, and each mistake is refused with its rule at the line and column of the
 * offending value (counted by hand from the text below), including an input that does not fit the
 * workflow's input type, located at the field.
 */
import { describe, expect, it } from "vitest"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { canonicalOwner } from "../../runtime/model/canonicalManifest.js"

/** Line 1 is `akter: 1`; `schedules:` is line 16, the first schedule's name line 17. */
const manifest = (schedules: string) => `akter: 1
owner: Report
workflows:
  stamp:
    input: { region: string, retries?: integer }
    steps:
      record: { kind: activity }
  bare:
    steps:
      nap: { kind: sleep, duration: 1m }
  keyed:
    input: { id: string }
    key: id
    steps:
      nap: { kind: sleep, duration: 1m }
schedules:
${schedules}`

const load = (schedules: string) =>
  loadManifestSources([{ file: "manifests/report.yaml", text: manifest(schedules) }])

const problems = (schedules: string) =>
  load(schedules).diagnostics.map((d) => [d.rule, d.line, d.column, d.message] as const)

describe("schedules in manifests", () => {
  it("a cron schedule and an interval schedule take their defaults and join the canonical form", () => {
    const { manifests, diagnostics } = load(`  nightly:
    description: Every night in Berlin.
    workflow: stamp
    cron: "30 2 * * *"
    timeZone: Europe/Berlin
    ownerId: reports
    input: { region: eu }
    overlap: queue
    catchUp: all
  often:
    workflow: bare
    every: 15m
    ownerId: reports
`)
    expect(diagnostics).toEqual([])
    const canonical = canonicalOwner(manifests[0]!.manifest)
    expect(canonical.schedules).toEqual({
      nightly: {
        workflow: "stamp",
        cron: "30 2 * * *",
        timeZone: "Europe/Berlin",
        everyMs: null,
        ownerId: "reports",
        input: { region: "eu" },
        overlap: "queue",
        catchUp: "all",
      },
      often: {
        workflow: "bare",
        cron: null,
        timeZone: "UTC",
        everyMs: 900_000,
        ownerId: "reports",
        input: null,
        overlap: "skip",
        catchUp: "latest",
      },
    })
  })

  it("a manifest without schedules has no schedules in its canonical form (its hash did not move)", () => {
    const { manifests } = loadManifestSources([
      { file: "manifests/report.yaml", text: manifest("").replace("schedules:\n", "") },
    ])
    expect(Object.keys(canonicalOwner(manifests[0]!.manifest))).toEqual([
      "format",
      "owner",
      "events",
      "workflows",
    ])
  })

  it("refuses a cron expression that does not parse, at its value", () => {
    expect(
      problems(`  nightly:
    workflow: stamp
    cron: "61 2 * * *"
    ownerId: reports
    input: { region: eu }
`),
    ).toEqual([
      [
        "invalid-cron",
        19,
        11,
        `"61 2 * * *" is not a cron expression: Invalid value for minute: 61`,
      ],
    ])
  })

  it("refuses a six-field cron expression and an unknown time zone", () => {
    expect(
      problems(`  seconds:
    workflow: stamp
    cron: "0 30 2 * * *"
    ownerId: reports
    input: { region: eu }
  mars:
    workflow: stamp
    cron: "30 2 * * *"
    timeZone: Mars/Olympus
    ownerId: reports
    input: { region: eu }
`).map(([rule, line, column]) => [rule, line, column]),
    ).toEqual([
      ["invalid-cron", 19, 11],
      ["invalid-time-zone", 25, 15],
    ])
  })

  it("refuses both cron and every, neither, a time zone on an interval, and an interval under a second", () => {
    expect(
      problems(`  both:
    workflow: bare
    cron: "* * * * *"
    every: 1m
    ownerId: reports
  neither:
    workflow: bare
    ownerId: reports
  zoned:
    workflow: bare
    every: 1h
    timeZone: UTC
    ownerId: reports
  fast:
    workflow: bare
    every: 500ms
    ownerId: reports
`).map(([rule, line, column]) => [rule, line, column]),
    ).toEqual([
      ["schedule-timing", 20, 5],
      ["schedule-timing", 22, 3],
      ["schedule-timing", 28, 15],
      ["schedule-timing", 32, 12],
    ])
  })

  it("refuses an unknown workflow with a suggestion, and a workflow that takes its key from its input", () => {
    const found = load(`  typo:
    workflow: stammp
    every: 1h
    ownerId: reports
  keyed:
    workflow: keyed
    every: 1h
    ownerId: reports
    input: { id: a }
`).diagnostics
    expect(found.map((d) => [d.rule, d.line, d.column, d.hint])).toEqual([
      ["unknown-workflow", 18, 15, 'did you mean "stamp"?'],
      [
        "schedule-keyed-workflow",
        22,
        15,
        'remove key: from workflow "keyed" (a tick\'s key is derived from the schedule and the tick time), or schedule a workflow without one',
      ],
    ])
  })

  it("refuses an input that does not fit the workflow's input type, at the field, and a missing or surplus input", () => {
    expect(
      problems(`  wrongField:
    workflow: stamp
    every: 1h
    ownerId: reports
    input: { region: eu, retries: many }
  missing:
    workflow: stamp
    every: 1h
    ownerId: reports
  surplus:
    workflow: bare
    every: 1h
    ownerId: reports
    input: { region: eu }
`).map(([rule, line, column]) => [rule, line, column]),
    ).toEqual([
      ["schedule-input", 21, 35],
      ["schedule-input", 22, 3],
      ["schedule-input", 30, 12],
    ])
  })

  it("refuses an unknown overlap policy and an empty owner id", () => {
    expect(
      problems(`  nightly:
    workflow: bare
    every: 1h
    ownerId: ""
    overlap: sometimes
`).map(([rule, line, column]) => [rule, line, column]),
    ).toEqual([
      ["invalid-owner-id", 20, 14],
      ["invalid-policy", 21, 14],
    ])
  })
})
