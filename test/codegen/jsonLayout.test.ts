import fc from "fast-check"
import * as prettier from "prettier/standalone"
import * as babel from "prettier/plugins/babel"
import * as estree from "prettier/plugins/estree"
import { describe, expect, it } from "vitest"
import { jsonText } from "../../codegen/emit/jsonLayout.js"
import { GENERATED_STYLE } from "../../codegen/emit/generatedStyle.js"

/** What prettier makes of `text` as a JSON file in the generated style: the reference layout. */
const prettierJson = (text: string) =>
  prettier.format(text, { ...GENERATED_STYLE, parser: "json", plugins: [babel, estree] })

/**
 * Strings of every width, mostly short so that the groups around them land near the line width,
 * where the layout decides: ASCII, wide (CJK), combining marks, emoji, escapes, and one longer than
 * any line.
 */
const text = fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 14 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 14 }) },
  { weight: 1, arbitrary: fc.string({ minLength: 20, maxLength: 70 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "漢字漢字",
      "e\u0301",
      "👩‍👩‍👧",
      '"q" \\ \n\t',
      "\u007f",
      "x".repeat(120),
    ),
  },
)

const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    fc.integer({ min: -2_000_000, max: 2_000_000 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 10 }),
    fc.array(fc.dictionary(text, tie("value"), { minKeys: 1, maxKeys: 3 }), { maxLength: 4 }),
    fc.array(fc.integer({ min: -99_999, max: 99_999 }), { maxLength: 40 }),
    fc.dictionary(text, tie("value"), { maxKeys: 6 }),
  ),
})).value

describe("JSON laid out for generated files", () => {
  it("is exactly what prettier prints for the same data, on random documents", async () => {
    await fc.assert(
      fc.asyncProperty(json, async (value) => {
        expect(await jsonText(value)).toBe(await prettierJson(JSON.stringify(value)))
      }),
      { numRuns: 1000 },
    )
  })

  it("is left as it is by prettier, so formatting the repository never makes it stale", async () => {
    await fc.assert(
      fc.asyncProperty(json, async (value) => {
        const laidOut = await jsonText(value)
        expect(await prettierJson(laidOut)).toBe(laidOut)
      }),
      { numRuns: 300 },
    )
  })

  it("fills number lists to the same lines as prettier, at every length", async () => {
    for (const step of [1, 7, 13, 999, 12_345, -77_777]) {
      for (let length = 1; length <= 60; length++) {
        const numbers = Array.from({ length }, (_, index) => index * step)
        for (const value of [numbers, { key: numbers }, { outer: { inner: numbers } }]) {
          expect(await jsonText(value)).toBe(await prettierJson(JSON.stringify(value)))
        }
      }
    }
  })

  it("keeps what fits on one line, breaks what does not, and fills number lists", async () => {
    const enumValues = Array.from({ length: 30 }, (_, index) => `value${index}`)
    expect(await jsonText({ required: ["id", "amount"], empty: {}, none: [] })).toBe(
      '{ "required": ["id", "amount"], "empty": {}, "none": [] }\n',
    )
    expect((await jsonText({ enum: enumValues })).split("\n").slice(0, 3)).toEqual([
      "{",
      '  "enum": [',
      '    "value0",',
    ])
    expect(
      await jsonText({
        pairs: [
          { a: 1, b: 2 },
          { a: 3, b: 4 },
        ],
      }),
    ).toBe('{\n  "pairs": [\n    { "a": 1, "b": 2 },\n    { "a": 3, "b": 4 }\n  ]\n}\n')
    const numbers = Array.from({ length: 30 }, (_, index) => index * 1000)
    expect((await jsonText({ numbers })).split("\n")[2]).toBe(
      "    0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000, 12000, 13000, 14000,",
    )
  })
})
