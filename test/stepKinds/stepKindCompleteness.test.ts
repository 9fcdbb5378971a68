/**
 * A step kind is one module per layer, and the compiler holds the layers together: a kind the model
 * lists but another layer does not handle, or a kind's module without one of its layer's parts, is a
 * type error. Checked with the repository's compiler options, so the suite fails where tsc would.
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { REPO, typeCheck } from "../codegen/typeCheck.js"

const MODEL_KINDS = `${REPO}runtime/model/stepKinds/stepKinds.ts`
const ENGINE_KINDS = `${REPO}runtime/engine/stepKinds/stepKinds.ts`
const CODEGEN_KINDS = `${REPO}codegen/stepKinds/stepKinds.ts`
const PARTS_REQUIRED = `${REPO}test/stepKinds/partsRequired.ts`

const NOOP_MODEL = `const noopModel: StepKindModel<{ readonly kind: "noop" }> = {
  kind: "noop",
  canonical: () => ({ kind: "noop" }),
  resultRefusal: () => null,
  eventWaitedFor: () => undefined,
  declaredTypes: () => ({ input: null, output: null }),
}
`

/** The model's list with a `noop` kind added, complete in its own layer. */
const modelWithNoop = (): string => {
  const source = readFileSync(MODEL_KINDS, "utf8")
  const listed = source
    .replace("const models = {", `${NOOP_MODEL}\nconst models = {`)
    .replace("  start: startModel,\n", "  start: startModel,\n  noop: noopModel,\n")
  expect(listed.match(/noopModel/g)).toHaveLength(2)
  return listed
}

// Each case builds a program of most of the repository; under load that takes minutes.
describe("step kinds", { timeout: 240_000 }, () => {
  it("a kind added to the model fails to compile until the engine and codegen each handle it", () => {
    const errors = typeCheck(
      [ENGINE_KINDS, CODEGEN_KINDS],
      new Map([[MODEL_KINDS, modelWithNoop()]]),
    )
    const failing = errors
      .map((error) => [error.file.slice(REPO.length), error.message])
      .sort(([a], [b]) => (a! < b! ? -1 : 1))
    expect(failing).toEqual([
      ["codegen/stepKinds/stepKinds.ts", expect.stringContaining("Property 'noop' is missing")],
      [
        "runtime/engine/stepKinds/stepKinds.ts",
        expect.stringContaining("Property 'noop' is missing"),
      ],
    ])
  })

  it("every list of kinds needs every kind, and every kind's module every part of its layer", () => {
    const errors = typeCheck([PARTS_REQUIRED]).filter((error) => error.file === PARTS_REQUIRED)
    expect(errors.map((error) => `${error.line}: ${error.message}`)).toEqual([])
  })
})
