import { readdirSync, readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { errorsUnder, REPO, typeCheck } from "./typeCheck.js"

const FIXTURES = `${REPO}test/fixtures/compile/`
const fixtures = readdirSync(FIXTURES)
  .filter((name) => name.endsWith(".ts"))
  .map((name) => `${FIXTURES}${name}`)

/** `// @ts-expect-error rule: fragment of the expected message`, with the line it guards. */
interface ExpectedError {
  readonly file: string
  /** The line after the directive, 1-based: where the error must be reported. */
  readonly line: number
  readonly rule: string
  readonly fragment: string
}

const expectedErrors = (file: string): ExpectedError[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .flatMap((text, index) => {
      const match = /^\s*\/\/ @ts-expect-error ([a-z-]+): (.+)$/.exec(text)
      return match === null
        ? []
        : [{ file, line: index + 2, rule: match[1]!, fragment: match[2]!.trim() }]
    })

// Type-checking effect's types takes a while on a busy machine.
describe("the generated code of the example manifests", { timeout: 240_000 }, () => {
  it("compiles under the repository's strict options, compile-time fixtures included", () => {
    const errors = typeCheck([`${REPO}generated/index.ts`, ...fixtures])
    expect(errorsUnder(errors, `${REPO}generated/`, FIXTURES)).toEqual([])
  })

  it("turns a missing activity, a wrong input and an unknown event into the expected type errors", () => {
    const expected = fixtures.flatMap(expectedErrors)
    expect(expected.map((e) => e.rule)).toEqual(
      expect.arrayContaining(["missing-activity", "wrong-start-input", "unknown-event"]),
    )
    // Without its directive, each guarded line must fail with the message the directive names.
    const withoutDirectives = new Map(
      fixtures.map((file) => [
        file,
        readFileSync(file, "utf8").replace(/\/\/ @ts-expect-error [^\n]*/g, "//"),
      ]),
    )
    const errors = typeCheck(fixtures, withoutDirectives)
    for (const error of expected) {
      const onLine = errors.filter((e) => e.file === error.file && e.line === error.line)
      expect(
        onLine.map((e) => e.message).join("\n"),
        `${error.file}:${error.line} (${error.rule})`,
      ).toContain(error.fragment)
    }
    const guarded = new Set(expected.map((e) => `${e.file}:${e.line}`))
    const unguarded = errors.filter((e) => !guarded.has(`${e.file}:${e.line}`))
    expect(errorsUnder(unguarded, `${REPO}generated/`, FIXTURES)).toEqual([])
  })
})
