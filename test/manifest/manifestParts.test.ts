import { describe, expect, it } from "vitest"
import { closestName, didYouMean } from "../../codegen/manifest/didYouMean.js"
import { MAX_DURATION_MS, parseDuration } from "../../codegen/manifest/durations.js"
import { renderPath } from "../../codegen/manifest/manifestReport.js"
import { generatedTypeNames, pascalCase } from "../../codegen/manifest/names.js"

describe("durations", () => {
  it.each([
    ["10ms", 10],
    ["1s", 1_000],
    ["5m", 300_000],
    ["2h", 7_200_000],
    ["1d", 86_400_000],
    ["3650d", 3650 * 86_400_000],
    ["007s", 7_000],
  ])("%s is %d ms", (text, ms) => {
    expect(parseDuration(text)).toEqual({ ms })
  })

  it.each([
    ["0s", "a duration must be longer than zero"],
    ["3651d", '"3651d" is longer than 3650d'],
    ["1.5s", '"1.5s" is not a duration'],
    ["10 minutes", '"10 minutes" is not a duration'],
    ["5", '"5" is not a duration'],
    ["-1s", '"-1s" is not a duration'],
    ["1w", '"1w" is not a duration'],
    ["", '"" is not a duration'],
  ])("%s is refused: %s", (text, problem) => {
    expect(parseDuration(text)).toEqual({ problem })
  })

  it("the longest duration is ten years of days", () => {
    expect(MAX_DURATION_MS).toBe(3650 * 24 * 60 * 60 * 1000)
  })
})

describe("generated names", () => {
  it.each([
    ["fulfill", "Fulfill"],
    ["fraud-check.v2", "FraudCheckV2"],
    ["send_receipt", "SendReceipt"],
    ["a..b--c__d", "ABCD"],
    ["Order", "Order"],
  ])("pascalCase(%s) is %s", (name, expected) => {
    expect(pascalCase(name)).toBe(expected)
  })

  it("derives workflow, step and owner names from the PascalCase of manifest names", () => {
    expect(generatedTypeNames.workflowInput("signUp")).toBe("SignUpInput")
    expect(generatedTypeNames.stepOutput("fulfill", "check.v2")).toBe("FulfillCheckV2Output")
    expect(generatedTypeNames.eventPayload("paymentConfirmed")).toBe("PaymentConfirmed")
    expect(generatedTypeNames.ownerEffectClient("Order")).toBe("OrderEffectClient")
  })
})

describe("did you mean", () => {
  it("suggests the closest candidate within a few edits, ignoring case", () => {
    expect(closestName("ouput", ["input", "output"])).toBe("output")
    expect(closestName("Output", ["input", "output"])).toBe("output")
    expect(closestName("Payed", ["Paid", "Cancelled"])).toBe("Paid")
    expect(didYouMean("kynd", ["kind", "input"])).toBe('did you mean "kind"?')
  })

  it("suggests nothing for unrelated names or names equal to a candidate", () => {
    expect(closestName("zzz", ["input", "output"])).toBeUndefined()
    expect(closestName("key", ["kind"])).toBeUndefined()
    expect(closestName("input", ["input"])).toBeUndefined()
  })
})

describe("manifest paths", () => {
  it("dot plain names, bracket indexes and names with dots", () => {
    expect(renderPath(["workflows", "fulfill", "steps", "reserve", "kind"])).toBe(
      "workflows.fulfill.steps.reserve.kind",
    )
    expect(renderPath(["workflows", "w", "steps", "check.v2", "errors", 0])).toBe(
      'workflows.w.steps["check.v2"].errors[0]',
    )
    expect(renderPath(["types", "Box", "note?"])).toBe("types.Box.note?")
    expect(renderPath([])).toBe("")
  })
})
