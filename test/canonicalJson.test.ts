import { describe, expect, it } from "vitest"
import { canonicalJson } from "../runtime/model/canonicalJson.js"
import { hashOf, isHash } from "../runtime/model/hash.js"

describe("canonicalJson", () => {
  it("sorts object keys and drops insignificant whitespace", () => {
    expect(canonicalJson({ b: 1, a: [true, null, "x"], c: { z: 0, y: -1.5 } })).toBe(
      '{"a":[true,null,"x"],"b":1,"c":{"y":-1.5,"z":0}}',
    )
  })

  it("drops undefined members but keeps nulls", () => {
    expect(canonicalJson({ a: undefined, b: null })).toBe('{"b":null}')
  })

  it("refuses values JSON cannot hold, naming where they are", () => {
    expect(() => canonicalJson({ a: [1, Number.NaN] })).toThrow("$.a[1] is not a finite number")
    expect(() => canonicalJson({ f: () => 1 })).toThrow("$.f is a function")
  })
})

describe("hashOf", () => {
  it("gives equal hashes for equal data in any key order, with the format prefix", () => {
    const one = hashOf({ x: 1, y: [1, 2] })
    expect(one).toBe(hashOf({ y: [1, 2], x: 1 }))
    expect(isHash(one)).toBe(true)
    expect(one.startsWith("akter1:sha256:")).toBe(true)
    expect(hashOf({ x: 1, y: [2, 1] })).not.toBe(one)
  })
})
