/**
 * Execution ids under hostile input: random strings, mutations of real ids and re-encodings of the
 * same parts never crash decoding, and decoding accepts a string only when encoding its parts gives
 * that very string back — so two different strings never name one execution.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { InvalidExecutionId, InvalidExecutionKey } from "../../runtime/errors.js"
import {
  checkExecutionKey,
  decodeExecutionId,
  encodeExecutionId,
  EXECUTION_ID_PREFIX,
  type ExecutionAddress,
} from "../../runtime/model/executionId.js"

const NAME = /^[A-Za-z][A-Za-z0-9]*$/

/** Strings of any UTF-16 code units: lone surrogates, NUL, controls, astral characters. */
const anyText = (maxLength: number) => fc.string({ unit: "binary", maxLength })

const manifestName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,15}$/)

/** Parts akter issues ids for: storable text within the documented bounds. */
const storable = (maxChars: number) =>
  fc
    .string({ unit: "grapheme", minLength: 1, maxLength: maxChars })
    .filter((text) => !text.includes("\0"))

const address: fc.Arbitrary<ExecutionAddress> = fc.record({
  tenant: storable(30),
  ownerType: manifestName,
  ownerId: storable(60),
  workflow: manifestName,
  key: storable(60),
})

/** The property every decode must keep, whatever it is given. */
const decodesOnlyCanonical = (input: unknown) => {
  const decoded = decodeExecutionId(input)
  if (decoded instanceof InvalidExecutionId) {
    expect(decoded.message).toMatch(/^invalid execution id ".*": .+/s)
    return false
  }
  expect(encodeExecutionId(decoded)).toBe(input)
  expect(NAME.test(decoded.ownerType) && NAME.test(decoded.workflow)).toBe(true)
  return true
}

const base64url = (text: string) => Buffer.from(text, "utf8").toString("base64url")

describe("execution ids", () => {
  it("decoding a random string never throws, and accepts only the canonical encoding of its parts", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          anyText(200),
          anyText(20).map((s) => EXECUTION_ID_PREFIX + s),
        ),
        (s) => {
          decodesOnlyCanonical(s)
        },
      ),
      { numRuns: 2000 },
    )
  })

  it("decodes every issued id back to its parts", () => {
    fc.assert(
      fc.property(address, (parts) => {
        const id = encodeExecutionId(parts)
        expect(decodeExecutionId(id)).toEqual(parts)
      }),
      { numRuns: 500 },
    )
  })

  it("refuses every single-character mutation of an issued id that is not itself canonical", () => {
    const mutation = fc.record({
      parts: address,
      at: fc.nat(),
      cut: fc.integer({ min: 0, max: 3 }),
      insert: anyText(3),
    })
    let accepted = 0
    fc.assert(
      fc.property(mutation, ({ parts, at, cut, insert }) => {
        const id = encodeExecutionId(parts)
        const where = at % (id.length + 1)
        const mutated = id.slice(0, where) + insert + id.slice(where + cut)
        if (mutated !== id && decodesOnlyCanonical(mutated)) accepted += 1
      }),
      { numRuns: 2000 },
    )
    // A mutation may land on another canonical id (it then names that execution); most do not.
    expect(accepted).toBeLessThan(200)
  })

  it("refuses other encodings of the same parts: spaced JSON, escapes, padding, stray bits, case", () => {
    const parts = ["acme", "Order", "o-1", "fulfill", "k-1"]
    const canonical = encodeExecutionId({
      tenant: "acme",
      ownerType: "Order",
      ownerId: "o-1",
      workflow: "fulfill",
      key: "k-1",
    })
    const body = canonical.slice(EXECUTION_ID_PREFIX.length)
    const lastIndex = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".indexOf(
      body.at(-1)!,
    )
    // base64 of n bytes with n % 3 != 0 leaves spare low bits in its last character; setting one
    // still decodes to the same bytes.
    const strayBit =
      EXECUTION_ID_PREFIX +
      body.slice(0, -1) +
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[lastIndex | 1]
    expect(Buffer.from(body, "base64url").length % 3).not.toBe(0)
    const variants = {
      spaced: EXECUTION_ID_PREFIX + base64url(JSON.stringify(parts, null, 1)),
      escaped: EXECUTION_ID_PREFIX + base64url(JSON.stringify(parts).replace("acme", "\\u0061cme")),
      padded: `${canonical}==`,
      base64: EXECUTION_ID_PREFIX + Buffer.from(JSON.stringify(parts)).toString("base64"),
      strayBit,
      upperPrefix: `AK1.${body}`,
      trailingSpace: `${canonical} `,
      object: EXECUTION_ID_PREFIX + base64url(JSON.stringify({ ...parts })),
      sixParts: EXECUTION_ID_PREFIX + base64url(JSON.stringify([...parts, "x"])),
      numberPart: EXECUTION_ID_PREFIX + base64url('["acme","Order",1,"fulfill","k-1"]'),
      emptyPart: EXECUTION_ID_PREFIX + base64url('["acme","Order","","fulfill","k-1"]'),
      // Invalid UTF-8 decodes to U+FFFD, whose encoding is other bytes.
      badUtf8:
        EXECUTION_ID_PREFIX +
        Buffer.concat([
          Buffer.from('["acme","Order","o'),
          Buffer.of(0xff),
          Buffer.from('","fulfill","k-1"]'),
        ]).toString("base64url"),
    }
    expect(strayBit).not.toBe(canonical)
    expect(decodeExecutionId(canonical)).not.toBeInstanceOf(InvalidExecutionId)
    const reasons = Object.fromEntries(
      Object.entries(variants).map(([name, id]) => {
        const decoded = decodeExecutionId(id)
        return [name, decoded instanceof InvalidExecutionId ? decoded.reason : "accepted"]
      }),
    )
    expect(reasons).toEqual({
      spaced: "not canonical",
      escaped: "not canonical",
      padded: "not base64url",
      base64: "not base64url",
      strayBit: "not canonical",
      upperPrefix: 'does not start with "ak1."',
      trailingSpace: "not base64url",
      object: "does not hold five non-empty strings",
      sixParts: "does not hold five non-empty strings",
      numberPart: "does not hold five non-empty strings",
      emptyPart: "does not hold five non-empty strings",
      badUtf8: "not canonical",
    })
  })

  it("refuses ids whose parts akter never issues: lone surrogates, NUL, non-manifest names, oversized parts", () => {
    const issued: ExecutionAddress = {
      tenant: "acme",
      ownerType: "Order",
      ownerId: "o-1",
      workflow: "fulfill",
      key: "k",
    }
    const reasonFor = (parts: Partial<ExecutionAddress>) => {
      const decoded = decodeExecutionId(encodeExecutionId({ ...issued, ...parts }))
      return decoded instanceof InvalidExecutionId ? decoded.reason : "accepted"
    }
    expect(reasonFor({ ownerId: "o\ud800" })).toBe("holds a lone surrogate or a NUL character")
    expect(reasonFor({ tenant: "ac\0me" })).toBe("holds a lone surrogate or a NUL character")
    expect(reasonFor({ ownerType: "Or der" })).toBe("owner type or workflow is not a manifest name")
    expect(reasonFor({ workflow: "$internal" })).toBe(
      "owner type or workflow is not a manifest name",
    )
    expect(reasonFor({ tenant: "t".repeat(129) })).toBe("tenant too long")
    expect(reasonFor({ ownerId: "é".repeat(129) })).toBe("owner id too long")
    expect(reasonFor({ key: "k".repeat(257) })).toBe("key out of bounds")
    expect(reasonFor({ key: "k".repeat(256), ownerId: "é".repeat(128) })).toBe("accepted")
  })

  it("holds every bound exactly: an empty key, a tenant one byte over, an id one character over", () => {
    const issued: ExecutionAddress = {
      tenant: "acme",
      ownerType: "Order",
      ownerId: "o-1",
      workflow: "fulfill",
      key: "k",
    }
    const reasonOf = (id: string) => {
      const decoded = decodeExecutionId(id)
      return decoded instanceof InvalidExecutionId ? decoded.reason : "accepted"
    }
    expect(checkExecutionKey("")).toBeInstanceOf(InvalidExecutionKey)
    expect(checkExecutionKey("k")).toBeUndefined()
    expect(reasonOf(encodeExecutionId({ ...issued, tenant: "t".repeat(128) }))).toBe("accepted")
    expect(reasonOf(encodeExecutionId({ ...issued, tenant: "t".repeat(129) }))).toBe(
      "tenant too long",
    )
    // 1400 characters is within bounds (this one is no JSON); 1401 is not even decoded.
    expect(reasonOf(EXECUTION_ID_PREFIX + "A".repeat(1400 - EXECUTION_ID_PREFIX.length))).toBe(
      "does not decode to JSON",
    )
    expect(reasonOf(EXECUTION_ID_PREFIX + "A".repeat(1401 - EXECUTION_ID_PREFIX.length))).toBe(
      "longer than 1400 characters",
    )
    const of = (parts: unknown) =>
      EXECUTION_ID_PREFIX + Buffer.from(JSON.stringify(parts), "utf8").toString("base64url")
    expect(reasonOf(of(["acme", ["x"], "o-1", "fulfill", "k"]))).toBe(
      "does not hold five non-empty strings",
    )
    expect(reasonOf(of(["acme", "Order", "", "fulfill", "k"]))).toBe(
      "does not hold five non-empty strings",
    )
  })

  it("refuses non-strings and oversized strings without converting them", () => {
    const hostile: unknown[] = [
      undefined,
      null,
      42,
      12n,
      Symbol("id"),
      Object.create(null),
      {
        toString() {
          throw new Error("toString must not be called")
        },
      },
      ["ak1."],
    ]
    expect(
      hostile.map((value) => {
        const decoded = decodeExecutionId(value)
        return decoded instanceof InvalidExecutionId ? decoded.message : "accepted"
      }),
    ).toEqual([
      'invalid execution id "(undefined)": not a string',
      'invalid execution id "(object)": not a string',
      'invalid execution id "(number)": not a string',
      'invalid execution id "(bigint)": not a string',
      'invalid execution id "(symbol)": not a string',
      'invalid execution id "(object)": not a string',
      'invalid execution id "(object)": not a string',
      'invalid execution id "(object)": not a string',
    ])
    // A 10 MB string is refused by its length before anything reads its characters: its body is
    // valid base64url, so had the checks after the length run, the reason would be the JSON
    // decode's. No wall-clock bound: on a loaded machine one took 191 ms against a 50 ms bound.
    const huge = EXECUTION_ID_PREFIX + "A".repeat(10_000_000)
    const decoded = decodeExecutionId(huge)
    expect((decoded as InvalidExecutionId).reason).toBe("longer than 1400 characters")
    expect((decoded as InvalidExecutionId).message.length).toBeLessThan(200)
  })
})
