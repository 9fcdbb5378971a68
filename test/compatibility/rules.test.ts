/**
 * The compatibility rules one by one, called directly: the exact places each finding may be located
 * at, in order of preference (the first the manifest has wins), and the exact refusals a step's
 * recorded results meet. compareManifests.test.ts and the fixtures check the same rules through a
 * whole comparison; here each path list is spelled out from the rule's definition.
 */
import { describe, expect, it } from "vitest"
import { accepts, refusalUnder, type TypeRefusal } from "../../runtime/compatibility/accepts.js"
import {
  compatibilityHashOf,
  eventProblem,
  eventsWaitedFor,
  markerProblem,
  outputProblem,
  RELEASED_TO_NEW,
  NEW_TO_RELEASED,
  startManifestMissing,
  stepResultChanged,
  stepResultIncompatible,
  stepResultRefusal,
  toFinding,
  workflowRemoved,
  type WorkflowComparison,
} from "../../runtime/compatibility/rules.js"
import { workflowHashes, type CanonicalWorkflow } from "../../runtime/model/canonicalManifest.js"
import {
  activity,
  fulfillV1,
  obj,
  race,
  sleep,
  start,
  t,
  wait,
  workflow,
} from "./canonicalBuilders.js"

const comparing = (
  writer: CanonicalWorkflow,
  reader: CanonicalWorkflow = writer,
  perspective = RELEASED_TO_NEW,
): WorkflowComparison => ({ owner: "Order", workflow: "fulfill", writer, reader, perspective })

const v1 = fulfillV1()
const c = comparing(v1)
const within = ["workflows", "fulfill", "steps", "reserve"]
const stepFallbacks = (step: string) => [
  ["workflows", "fulfill", "steps", step],
  ["workflows", "fulfill", "steps"],
  ["workflows", "fulfill"],
]
const field = (name: string) => ({ kind: "field" as const, name })
const refusal = (path: string, ...segments: TypeRefusal["segments"]): TypeRefusal => ({
  path,
  reason: "recorded as string, read as integer",
  segments,
})

describe("where findings are located", () => {
  it("takes the first path the manifest has, and carries the open executions it was given", () => {
    const draft = workflowRemoved("Order", "fulfill", RELEASED_TO_NEW, false)
    expect(draft.at).toEqual([["workflows", "fulfill"], ["workflows"], []])
    const asked: unknown[] = []
    const at = { file: "manifests/order.yaml", line: 3, column: 1 }
    const located = toFinding(
      draft,
      (path) => {
        asked.push(path)
        return path.length === 1 ? at : undefined
      },
      { count: 2, oldestStartedAtMs: 7 },
    )
    expect(asked).toEqual([["workflows", "fulfill"], ["workflows"]])
    expect(located).toMatchObject({ location: at, open: { count: 2, oldestStartedAtMs: 7 } })
    const bare = toFinding(draft, undefined)
    expect(bare).not.toHaveProperty("location")
    expect(bare).not.toHaveProperty("open")
    expect(startManifestMissing("Order", "fulfill", "akter1:sha256:00").at).toEqual([
      ["workflows", "fulfill"],
    ])
  })

  it("locates a refused error payload at the workflow's declared error, field by field, then the step", () => {
    const draft = stepResultIncompatible(
      c,
      "reserve",
      refusal("errors.OutOfStock.sku", field("errors"), field("OutOfStock"), field("sku")),
    )
    expect(draft.at).toEqual([
      ["workflows", "fulfill", "errors", "OutOfStock", "sku"],
      ["workflows", "fulfill", "errors", "OutOfStock", "sku?"],
      ["workflows", "fulfill", "errors", "OutOfStock"],
      [...within, "errors"],
      ...stepFallbacks("reserve"),
    ])
    expect(draft.message).toBe(
      'results of step "reserve" of Order.fulfill recorded under the previous manifest do not decode under this manifest: errors.OutOfStock.sku: recorded as string, read as integer',
    )
    expect(stepResultIncompatible(c, "reserve", refusal("errors", field("errors"))).at).toEqual([
      [...within, "errors"],
      ...stepFallbacks("reserve"),
    ])
  })

  it("locates a refused wait payload in the reader's event, then at the step's event", () => {
    const paid = stepResultIncompatible(
      c,
      "paid",
      refusal("payload.amount", field("payload"), field("amount"), { kind: "items" }),
    )
    expect(paid.at).toEqual([
      ["events", "PaymentConfirmed", "amount"],
      ["events", "PaymentConfirmed", "amount?"],
      ["events", "PaymentConfirmed"],
      ["workflows", "fulfill", "steps", "paid", "event"],
      ...stepFallbacks("paid"),
    ])
    // A step the reader does not declare has no event to point into.
    const gone = stepResultIncompatible(c, "vanished", refusal("payload", field("payload")))
    expect(gone.at).toEqual([
      ["workflows", "fulfill", "steps", "vanished", "event"],
      ...stepFallbacks("vanished"),
    ])
  })

  it("locates a refused output inside the step's output, and a changed event or target at the step's own key", () => {
    expect(
      stepResultIncompatible(c, "reserve", refusal("output.id", field("output"), field("id"))).at,
    ).toEqual([
      [...within, "output", "id"],
      [...within, "output", "id?"],
      [...within, "output"],
      ...stepFallbacks("reserve"),
    ])
    for (const name of ["event", "workflow"]) {
      expect(stepResultIncompatible(c, "paid", refusal(name, field(name))).at).toEqual([
        ["workflows", "fulfill", "steps", "paid", name],
        ...stepFallbacks("paid"),
      ])
    }
    expect(stepResultIncompatible(c, "paid", refusal("", field("other"))).at).toEqual(
      stepFallbacks("paid"),
    )
    expect(stepResultIncompatible(c, "paid", refusal("")).message).toMatch(
      /this manifest: recorded as string, read as integer$/,
    )
  })

  it("locates a compatible result change at the step's output, an incompatible one where it refuses", () => {
    const compatible = stepResultChanged(c, "screen", null)
    expect(compatible.at).toEqual([
      ["workflows", "fulfill", "steps", "screen", "output"],
      ...stepFallbacks("screen"),
    ])
    expect(compatible.message).toBe(
      'the result type of step "screen" of Order.fulfill changed compatibly: results recorded under the previous manifest still decode under this manifest',
    )
    const refused = stepResultChanged(c, "screen", refusal("output", field("output")))
    expect(refused.message).toBe(
      'the result type of step "screen" of Order.fulfill changed (output: recorded as string, read as integer), but no execution concerned has settled it; runners of this manifest adopt them onto their manifest',
    )
    expect(refused.at).toEqual([
      ["workflows", "fulfill", "steps", "screen", "output"],
      ...stepFallbacks("screen"),
    ])
    expect(
      stepResultChanged(c, "screen", refusal("output.score", field("output"), field("score"))).at,
    ).toEqual([
      ["workflows", "fulfill", "steps", "screen", "output", "score"],
      ["workflows", "fulfill", "steps", "screen", "output", "score?"],
      ["workflows", "fulfill", "steps", "screen", "output"],
      ...stepFallbacks("screen"),
    ])
  })

  it("reports a workflow result both ways, joined, and locates a refused error at the workflow's errors", () => {
    const writer = workflow("Order", "fulfill", { output: obj({ a: t.string }) })
    const reader = workflow("Order", "fulfill", { output: obj({ a: t.integer }) })
    const both = outputProblem(comparing(writer, reader))!
    expect(both.message).toBe(
      "results of Order.fulfill written under this manifest do not decode in clients built from the previous manifest, which may be awaiting them: output.a: recorded as integer, read as string; and results recorded under the previous manifest do not decode under this manifest: output.a: recorded as string, read as integer",
    )
    expect(both.at).toEqual([
      ["workflows", "fulfill", "output", "a"],
      ["workflows", "fulfill", "output", "a?"],
      ["workflows", "fulfill", "output"],
      ["workflows", "fulfill"],
    ])
    const errors = outputProblem(
      comparing(
        workflow("Order", "fulfill", { errors: { Late: obj({ by: t.integer }) } }),
        workflow("Order", "fulfill", { errors: { Late: obj({ by: t.string }) } }),
      ),
    )!
    expect(errors.at).toEqual([
      ["workflows", "fulfill", "errors", "Late", "by"],
      ["workflows", "fulfill", "errors", "Late", "by?"],
      ["workflows", "fulfill", "errors", "Late"],
      ["workflows", "fulfill", "errors", "Late?"],
      ["workflows", "fulfill", "errors"],
      ["workflows", "fulfill"],
    ])
  })

  it("locates a marker at the bound it breaks, then the marker, the markers and the workflow", () => {
    const marker = ["workflows", "fulfill", "versions", "fraudCheck"]
    const fallbacks = [marker, ["workflows", "fulfill", "versions"], ["workflows", "fulfill"]]
    const below = markerProblem(c, "fraudCheck", { low: -1, high: 0 })!
    expect(below.at).toEqual([[...marker, "min"], ...fallbacks])
    const above = markerProblem(c, "fraudCheck", { low: 1, high: 2 })!
    expect(above.at).toEqual([[...marker, "current"], ...fallbacks])
    expect(above.message).toBe(
      'marker "fraudCheck" of Order.fulfill is 0..1 in this manifest, but executions started under the previous manifest recorded values 1..2',
    )
    expect(markerProblem(c, "fraudCheck", { low: 0, high: 1 })).toBeUndefined()
    // At the lower bound, above the upper: the current is what breaks.
    expect(markerProblem(c, "fraudCheck", { low: 0, high: 2 })!.at[0]).toEqual([
      ...marker,
      "current",
    ])
    const removed = markerProblem(comparing(v1, fulfillV1({ versions: {} })), "fraudCheck", {
      low: 1,
      high: 1,
    })!
    expect(removed.at).toEqual(fallbacks)
  })

  it("locates an event at its declaration, a payload field by field; a removed event no workflow waited for is a warning, and no rollback concern", () => {
    const event = { owner: "Order", event: "Paid", writer: obj({ id: t.string }) }
    const removed = eventProblem({
      ...event,
      reader: undefined,
      waitedFor: false,
      perspective: RELEASED_TO_NEW,
    })!
    expect(removed).toMatchObject({ rule: "event-removed", severity: "warning" })
    expect(removed.message).toBe(
      'event "Paid" of Order is not declared by this manifest; clients of the previous manifest may still emit it',
    )
    expect(removed.at).toEqual([["events", "Paid"], ["events"], []])
    expect(
      eventProblem({ ...event, reader: undefined, waitedFor: true, perspective: NEW_TO_RELEASED }),
    ).toBeUndefined()
    const changed = eventProblem({
      ...event,
      reader: obj({ id: t.integer }),
      waitedFor: true,
      perspective: RELEASED_TO_NEW,
    })!
    expect(changed.at).toEqual([
      ["events", "Paid", "id"],
      ["events", "Paid", "id?"],
      ["events", "Paid"],
      ["events"],
      [],
    ])
  })
})

describe("what a step's recorded results meet", () => {
  it("refuses a wait for another event, and compares payloads (none declared: any value)", () => {
    expect(stepResultRefusal(wait("B", t.string), wait("A", t.string))).toEqual({
      path: "event",
      reason: 'waits for "B" instead of "A"; recorded matches are "A" events',
      segments: [field("event")],
    })
    const bare = { kind: "wait" as const, event: "A" }
    expect(stepResultRefusal(bare, bare)).toBeNull()
    expect(stepResultRefusal(bare, wait("A", t.string))).toBeNull()
    // Recorded without a payload type: any value may have been recorded.
    expect(stepResultRefusal(wait("A", t.string), bare)?.path).toBe("payload")
    expect(stepResultRefusal(wait("A", t.integer), wait("A", t.string))).toEqual(
      refusalUnder("payload", accepts(t.integer, t.string)!),
    )
  })

  it("refuses a start of another workflow, naming both, and never a sleep", () => {
    expect(stepResultRefusal(start("Order", "b"), start("Order", "a"))).toEqual({
      path: "workflow",
      reason: "starts Order.b instead of Order.a; recorded execution ids name the old one",
      segments: [field("workflow")],
    })
    expect(stepResultRefusal(start("Order", "a"), start("Order", "a"))).toBeNull()
    const targetless = { kind: "start" as const }
    expect(stepResultRefusal(targetless, start("Order", "a"))?.reason).toBe(
      "starts nothing instead of Order.a; recorded execution ids name the old one",
    )
    expect(stepResultRefusal(sleep(), sleep())).toBeNull()
  })

  it("compares a race's output and errors like an activity's", () => {
    expect(stepResultRefusal(race(t.integer), race(t.string))?.path).toBe("output")
    expect(stepResultRefusal(race(t.string), race(t.string))).toBeNull()
    expect(stepResultRefusal(activity(null, {}), activity(null, { E: t.string }))?.path).toBe(
      "errors.E",
    )
  })

  it("knows the events a workflow waits for, and only those", () => {
    const waiting = workflow("Order", "w", {
      steps: {
        one: wait("A", t.string),
        two: wait("A", t.string),
        three: wait("B", t.string),
        work: { ...activity(), event: "C" } as never,
        nap: sleep(),
        unnamed: { kind: "wait" } as never,
      },
    })
    expect([...eventsWaitedFor(waiting)].sort()).toEqual(["A", "B"])
  })

  it("computes a workflow's compatibility hash, the same each time it is asked", () => {
    expect(compatibilityHashOf(v1)).toBe(workflowHashes(v1).compatibility)
    expect(compatibilityHashOf(v1)).toBe(workflowHashes(v1).compatibility)
  })
})
