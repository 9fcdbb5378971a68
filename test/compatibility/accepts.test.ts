import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  accepts,
  acceptsDeclared,
  acceptsErrors,
  describeType,
  refusalUnder,
  renderTypePath,
} from "../../runtime/compatibility/accepts.js"
import type { FieldNode, TypeNode } from "../../runtime/model/typeModel.js"
import { arr, en, obj, oneOf, rec, t } from "./canonicalBuilders.js"

const samples = {
  string: t.string,
  number: t.number,
  integer: t.integer,
  boolean: t.boolean,
  null: t.null,
  json: t.json,
  enum: en("a", "b"),
  array: arr(t.string),
  object: obj({ a: t.string }),
  record: rec(t.string),
  oneOf: oneOf(t.string, t.integer),
} satisfies Record<string, TypeNode>

type Sample = keyof typeof samples
const columns = Object.keys(samples) as Sample[]

// Rows: the previous (recorded) type. Columns, in the order of `samples`: the next type.
// Y: every value of the row's type decodes under the column's type.
//                            str num int bool null json enum arr obj rec oneOf
const grid: Record<Sample, string> = {
  string: /*             */ " Y   .   .   .    .    Y    .    .   .   .   Y",
  number: /*             */ " .   Y   .   .    .    Y    .    .   .   .   .",
  integer: /*            */ " .   Y   Y   .    .    Y    .    .   .   .   Y",
  boolean: /*            */ " .   .   .   Y    .    Y    .    .   .   .   .",
  null: /*               */ " .   .   .   .    Y    Y    .    .   .   .   .",
  json: /*               */ " .   .   .   .    .    Y    .    .   .   .   .",
  enum: /*               */ " Y   .   .   .    .    Y    Y    .   .   .   Y",
  array: /*              */ " .   .   .   .    .    Y    .    Y   .   .   .",
  object: /*             */ " .   .   .   .    .    Y    .    .   Y   .   .",
  record: /*             */ " .   .   .   .    .    Y    .    .   .   Y   .",
  oneOf: /*              */ " .   .   .   .    .    Y    .    .   .   .   Y",
}

describe("accepts: every pair of constructs", () => {
  const cases = columns.flatMap((previous) => {
    const marks = grid[previous].trim().split(/\s+/)
    return columns.map((next, index) => ({ previous, next, accepted: marks[index] === "Y" }))
  })

  it("has one expectation per pair", () => {
    expect(cases).toHaveLength(columns.length * columns.length)
    for (const previous of columns) expect(grid[previous].trim().split(/\s+/)).toHaveLength(11)
  })

  it.each(cases)("$previous → $next accepted: $accepted", ({ previous, next, accepted }) => {
    const refusal = accepts(samples[next], samples[previous])
    if (accepted) expect(refusal).toBeNull()
    else expect(refusal).not.toBeNull()
  })

  it("names both kinds when a scalar changes", () => {
    expect(accepts(t.integer, t.number)).toEqual({
      path: "",
      reason: "recorded as number, read as integer",
      segments: [],
    })
    expect(accepts(t.string, t.null)?.reason).toBe("recorded as null, read as string")
    expect(accepts(t.null, t.string)?.reason).toBe("recorded as string, read as null")
    expect(accepts(obj({ a: t.string }), t.json)?.reason).toBe(
      "recorded as json (any value), read as object",
    )
    expect(accepts(arr(t.string), obj({}))?.reason).toBe("recorded as object, read as string[]")
    expect(accepts(obj({}), arr(t.string))?.reason).toBe("recorded as string[], read as object")
  })
})

describe("accepts: enums", () => {
  it("accepts a widened enum and a plain string", () => {
    expect(accepts(en("EUR", "GBP", "USD"), en("USD", "EUR"))).toBeNull()
    expect(accepts(t.string, en("USD", "EUR"))).toBeNull()
  })

  it("refuses a narrowed enum, naming the removed value", () => {
    expect(accepts(en("USD"), en("USD", "EUR"))?.reason).toBe(
      'recorded enum value "EUR" is not in the reading enum',
    )
  })

  it("refuses a string narrowed to an enum", () => {
    expect(accepts(en("USD"), t.string)?.reason).toBe("recorded as string, read as enum [USD]")
  })

  it("accepts an enum whose values the new union spreads over several variants", () => {
    expect(accepts(oneOf(en("a"), en("b")), en("a", "b"))).toBeNull()
    expect(accepts(oneOf(en("a"), t.integer), en("a", "b"))?.reason).toBe(
      'enum value "b" is accepted by no variant of the reading oneOf',
    )
  })
})

describe("accepts: objects", () => {
  const before = obj({ a: t.string, "b?": t.integer })

  it("accepts adding an optional field", () => {
    expect(accepts(obj({ a: t.string, "b?": t.integer, "c?": t.boolean }), before)).toBeNull()
  })

  it("accepts removing a field, required or optional", () => {
    expect(accepts(obj({ "b?": t.integer }), before)).toBeNull()
    expect(accepts(obj({ a: t.string }), before)).toBeNull()
    expect(accepts(obj({}), before)).toBeNull()
  })

  it("accepts making a required field optional", () => {
    expect(accepts(obj({ "a?": t.string, "b?": t.integer }), before)).toBeNull()
  })

  it("refuses adding a required field", () => {
    expect(accepts(obj({ a: t.string, "b?": t.integer, c: t.boolean }), before)).toEqual({
      path: "c",
      reason: "required, but recorded values lack it",
      segments: [{ kind: "field", name: "c" }],
    })
  })

  it("refuses making an optional field required", () => {
    expect(accepts(obj({ a: t.string, b: t.integer }), before)).toMatchObject({
      path: "b",
      reason: "required, but optional in the recorded type",
    })
  })

  it("refuses changing a field's type, locating the nested field", () => {
    const total = (amount: TypeNode) => obj({ total: obj({ amount, currency: t.string }) })
    expect(accepts(total(t.string), total(t.integer))).toMatchObject({
      path: "total.amount",
      reason: "recorded as integer, read as string",
    })
    expect(accepts(total(t.number), total(t.integer))).toBeNull()
  })
})

describe("accepts: arrays and records", () => {
  it("compares array items", () => {
    expect(accepts(arr(t.number), arr(t.integer))).toBeNull()
    expect(accepts(obj({ skus: arr(t.integer) }), obj({ skus: arr(t.string) }))).toMatchObject({
      path: "skus[]",
      reason: "recorded as string, read as integer",
    })
    expect(accepts(arr(arr(t.integer)), arr(arr(t.number)))?.path).toBe("[][]")
  })

  it("compares record values", () => {
    expect(accepts(rec(t.number), rec(t.integer))).toBeNull()
    expect(accepts(obj({ prices: rec(t.integer) }), obj({ prices: rec(t.number) }))?.path).toBe(
      "prices{}",
    )
  })

  it("accepts a record read as an object of optional fields that accept its values", () => {
    expect(accepts(obj({}), rec(t.integer))).toBeNull()
    expect(accepts(obj({ "a?": t.number, "b?": t.integer }), rec(t.integer))).toBeNull()
  })

  it("refuses a record read as an object with a required field or a narrower field", () => {
    expect(accepts(obj({ a: t.integer }), rec(t.integer))).toMatchObject({
      path: "a",
      reason: "required field, but recorded record values may lack it",
    })
    expect(accepts(obj({ "a?": t.string }), rec(t.integer))).toMatchObject({
      path: "a",
      reason: "recorded as integer, read as string",
    })
  })

  it("refuses an object read as a record, even when every field would fit", () => {
    expect(accepts(rec(t.string), obj({ a: t.string }))?.reason).toBe(
      "recorded as object, read as record; a record would read keys the object never declared",
    )
  })
})

describe("accepts: unions on both sides", () => {
  it("accepts a type read as a union with an accepting variant", () => {
    expect(accepts(oneOf(t.number, t.string), t.integer)).toBeNull()
  })

  it("accepts a union read as a type that accepts every variant", () => {
    expect(accepts(t.number, oneOf(t.integer, t.number))).toBeNull()
    expect(accepts(t.string, oneOf(en("a"), t.string))).toBeNull()
  })

  it("accepts a widened union and refuses a narrowed one, naming the old variant", () => {
    const before = oneOf(t.boolean, t.integer, t.string)
    expect(accepts(oneOf(t.boolean, t.integer, t.string, t.null), before)).toBeNull()
    expect(accepts(oneOf(t.integer, t.string), before)).toMatchObject({
      path: "oneOf[0]",
      reason: "no variant of the reading oneOf accepts boolean",
    })
  })

  it("reports the refusal of the new variant of the same construct", () => {
    expect(accepts(oneOf(obj({ a: t.string }), t.string), obj({ a: t.integer }))).toMatchObject({
      path: "a",
      reason: "recorded as integer, read as string",
    })
  })

  it("accepts tagged object variants each matched by a variant of the new union", () => {
    const renewed = (invoice: TypeNode) => obj({ outcome: en("renewed"), invoiceId: invoice })
    const lapsed = obj({ outcome: en("lapsed") })
    expect(
      accepts(
        oneOf(renewed(t.string), lapsed, obj({ outcome: en("ended") })),
        oneOf(renewed(t.string), lapsed),
      ),
    ).toBeNull()
    expect(
      accepts(oneOf(renewed(t.integer), lapsed), oneOf(renewed(t.string), lapsed)),
    ).toMatchObject({
      // canonical order: the variant with `invoiceId` sorts before the one with only `outcome`
      path: "oneOf[0].invoiceId",
      reason: "recorded as string, read as integer",
    })
  })
})

describe("acceptsDeclared: absent types", () => {
  it("accepts anything read as nothing, and nothing read as nothing", () => {
    expect(acceptsDeclared(null, obj({ a: t.string }))).toBeNull()
    expect(acceptsDeclared(null, null)).toBeNull()
  })

  it("accepts nothing read as a type that accepts null", () => {
    expect(acceptsDeclared(oneOf(t.null, t.string), null)).toBeNull()
    expect(acceptsDeclared(t.json, null)).toBeNull()
  })

  it("refuses nothing read as a value", () => {
    expect(acceptsDeclared(obj({}), null)).toEqual({
      path: "",
      reason: "recorded without a value, read as object",
      segments: [],
    })
  })
})

describe("naming types and places", () => {
  it("names a type briefly: scalars, enums with their values, arrays of scalars by item, others by kind", () => {
    expect(
      [
        t.integer,
        t.json,
        en("a", "b"),
        arr(t.string),
        arr(arr(t.string)),
        arr(obj({ a: t.string })),
        arr(rec(t.string)),
        arr(oneOf(t.string, t.integer)),
        arr(en("a")),
        obj({}),
        { kind: "ref", name: "Money" } as TypeNode,
      ].map(describeType),
    ).toEqual([
      "integer",
      "json (any value)",
      "enum [a, b]",
      "string[]",
      "array",
      "array",
      "array",
      "array",
      "array",
      "object",
      "Money",
    ])
  })

  it("renders variants nested under fields and under variants", () => {
    expect(renderTypePath([{ kind: "variant", index: 0 }])).toBe("oneOf[0]")
    expect(
      renderTypePath([
        { kind: "field", name: "a" },
        { kind: "variant", index: 1 },
        { kind: "variant", index: 2 },
      ]),
    ).toBe("a.oneOf[1].oneOf[2]")
  })

  it("places a refusal under a field one level up", () => {
    const inner = accepts(obj({ amount: t.integer }), obj({ amount: t.number }))!
    expect(refusalUnder("total", inner)).toEqual({
      path: "total.amount",
      reason: "recorded as number, read as integer",
      segments: [
        { kind: "field", name: "total" },
        { kind: "field", name: "amount" },
      ],
    })
  })

  it("refuses to compare types whose references are not resolved, on either side", () => {
    const ref = { kind: "ref", name: "Money" } as TypeNode
    expect(() => accepts(ref, t.string)).toThrow("compare canonical types")
    expect(() => accepts(t.string, ref)).toThrow("compare canonical types")
  })

  it("compares declared types as accepts does when both are present", () => {
    expect(acceptsDeclared(t.integer, t.string)).toEqual(accepts(t.integer, t.string))
    expect(acceptsDeclared(t.integer, t.string)?.reason).toBe("recorded as string, read as integer")
  })
})

describe("acceptsErrors", () => {
  it("looks at every recorded error, not only the first", () => {
    expect(
      acceptsErrors(
        { A: obj({ x: t.string }), B: obj({ y: t.integer }) },
        { A: obj({ x: t.string }), B: obj({ y: t.string }) },
      )?.path,
    ).toBe("B.y")
  })

  const before = { OutOfStock: obj({ sku: t.string }) }

  it("accepts an added error and refuses a removed one", () => {
    expect(acceptsErrors({ ...before, Fraud: obj({}) }, before)).toBeNull()
    expect(acceptsErrors({}, before)).toMatchObject({
      path: "OutOfStock",
      reason: "error is not declared by the reading manifest",
    })
  })

  it("locates a payload change inside the error", () => {
    expect(acceptsErrors({ OutOfStock: obj({ sku: t.integer }) }, before)?.path).toBe(
      "OutOfStock.sku",
    )
  })
})

describe("renderTypePath", () => {
  it("joins fields with dots and marks items, values and variants", () => {
    expect(
      renderTypePath([
        { kind: "variant", index: 1 },
        { kind: "field", name: "lines" },
        { kind: "items" },
        { kind: "field", name: "prices" },
        { kind: "values" },
      ]),
    ).toBe("oneOf[1].lines[].prices{}")
  })
})

// A reference decoder, written from the language's definition rather than from `accepts`: recorded
// values are decoded tolerantly, so objects ignore keys they do not declare.
const decodes = (type: TypeNode, value: unknown): boolean => {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v)
  switch (type.kind) {
    case "string":
      return typeof value === "string"
    case "number":
      return typeof value === "number" && Number.isFinite(value)
    case "integer":
      return Number.isInteger(value)
    case "boolean":
      return typeof value === "boolean"
    case "null":
      return value === null
    case "json":
      return true
    case "enum":
      return typeof value === "string" && type.values.includes(value)
    case "array":
      return Array.isArray(value) && value.every((item) => decodes(type.items, item))
    case "record":
      return isObject(value) && Object.values(value).every((item) => decodes(type.values, item))
    case "object":
      return (
        isObject(value) &&
        Object.entries(type.fields).every(([name, field]) =>
          value[name] === undefined ? field.optional : decodes(field.type, value[name]),
        )
      )
    case "oneOf":
      return type.variants.some((variant) => decodes(variant, value))
    case "ref":
      throw new Error("refs are resolved in these tests")
  }
}

const FIELD_NAMES = ["a", "b", "c"]
const ENUM_VALUES = ["x", "y", "z"]

const typeArbitrary: fc.Arbitrary<TypeNode> = fc.letrec<{ type: TypeNode }>((tie) => ({
  type: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom<TypeNode>(t.string, t.number, t.integer, t.boolean, t.null, t.json),
    fc.subarray(ENUM_VALUES, { minLength: 1 }).map((values) => en(...values)),
    tie("type").map((items) => arr(items)),
    tie("type").map((values) => rec(values)),
    fc
      .dictionary(
        fc.constantFrom(...FIELD_NAMES, ...FIELD_NAMES.map((n) => `${n}?`)),
        tie("type"),
        {
          maxKeys: 3,
        },
      )
      .map((fields) => {
        const unique: Record<string, TypeNode> = {}
        for (const [key, type] of Object.entries(fields)) {
          if (
            unique[key.replace("?", "")] === undefined &&
            unique[`${key.replace("?", "")}?`] === undefined
          ) {
            unique[key] = type
          }
        }
        return obj(unique)
      }),
    fc.array(tie("type"), { minLength: 2, maxLength: 3 }).map((variants) => oneOf(...variants)),
  ),
})).type

const jsonValue: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 2 })

const valueOf = (type: TypeNode): fc.Arbitrary<unknown> => {
  switch (type.kind) {
    case "string":
      return fc.string({ maxLength: 3 })
    case "number":
      return fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))
    case "integer":
      return fc.integer()
    case "boolean":
      return fc.boolean()
    case "null":
      return fc.constant(null)
    case "json":
      return jsonValue
    case "enum":
      return fc.constantFrom(...type.values)
    case "array":
      return fc.array(valueOf(type.items), { maxLength: 3 })
    case "record":
      return fc.dictionary(fc.string({ maxLength: 2 }), valueOf(type.values), { maxKeys: 3 })
    case "object": {
      const entries = Object.entries(type.fields).map(([name, field]) =>
        field.optional
          ? fc.option(valueOf(field.type), { nil: undefined }).map((v) => [name, v] as const)
          : valueOf(field.type).map((v) => [name, v] as const),
      )
      return fc
        .tuple(...entries)
        .map((pairs) => Object.fromEntries(pairs.filter(([, v]) => v !== undefined)))
    }
    case "oneOf":
      return fc.oneof(...type.variants.map(valueOf))
    case "ref":
      throw new Error("refs are resolved in these tests")
  }
}

/**
 * A type one edit away from `type`, at any depth: a field added (required or optional), removed,
 * made optional or required, or its type edited; items, values or a variant edited; an enum value
 * added or removed; a scalar replaced. Independent random pairs seldom differ in one place, where
 * an acceptance is most often wrong; these always do.
 */
const editOf = (type: TypeNode): fc.Arbitrary<TypeNode> => {
  switch (type.kind) {
    case "object": {
      const fields = type.fields
      const names = Object.keys(fields)
      const free = FIELD_NAMES.filter((name) => fields[name] === undefined)
      const withField = (name: string, field: FieldNode | undefined): TypeNode => {
        const next = { ...fields }
        if (field === undefined) delete next[name]
        else next[name] = field
        return { kind: "object", fields: next }
      }
      const edits: fc.Arbitrary<TypeNode>[] = []
      if (free.length > 0) {
        edits.push(
          fc
            .tuple(fc.constantFrom(...free), typeArbitrary, fc.boolean())
            .map(([name, added, optional]) => withField(name, { type: added, optional })),
        )
      }
      if (names.length > 0) {
        const name = fc.constantFrom(...names)
        edits.push(
          name.map((n) => withField(n, { ...fields[n]!, optional: !fields[n]!.optional })),
          name.map((n) => withField(n, undefined)),
          name.chain((n) =>
            editOf(fields[n]!.type).map((edited) => withField(n, { ...fields[n]!, type: edited })),
          ),
        )
      }
      return fc.oneof(...edits)
    }
    case "array":
      return editOf(type.items).map((items) => arr(items))
    case "record":
      return editOf(type.values).map((values) => rec(values))
    case "oneOf":
      return fc
        .nat({ max: type.variants.length - 1 })
        .chain((index) =>
          editOf(type.variants[index]!).map((edited) =>
            oneOf(...type.variants.map((variant, at) => (at === index ? edited : variant))),
          ),
        )
    case "enum": {
      const absent = ENUM_VALUES.filter((value) => !type.values.includes(value))
      const edits: fc.Arbitrary<TypeNode>[] = []
      if (absent.length > 0)
        edits.push(fc.constantFrom(...absent).map((v) => en(...type.values, v)))
      if (type.values.length > 1) {
        edits.push(
          fc.constantFrom(...type.values).map((v) => en(...type.values.filter((w) => w !== v))),
        )
      }
      return edits.length === 0 ? typeArbitrary : fc.oneof(...edits)
    }
    default:
      return typeArbitrary
  }
}

describe("accepts is sound", () => {
  it("every value of an accepted type decodes under the accepting type, for types one edit apart either way", () => {
    fc.assert(
      fc.property(
        typeArbitrary.chain((type) => fc.tuple(fc.constant(type), editOf(type))),
        fc.boolean(),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        ([type, edited], forward, seed) => {
          const [previous, next] = forward ? [type, edited] : [edited, type]
          if (accepts(next, previous) !== null) return
          for (const value of fc.sample(valueOf(previous), { numRuns: 20, seed })) {
            expect(decodes(previous, value)).toBe(true)
            expect(decodes(next, value), JSON.stringify({ previous, next, value })).toBe(true)
          }
        },
      ),
      { numRuns: 2000 },
    )
  })

  it("every value of an accepted type decodes under the accepting type", () => {
    fc.assert(
      fc.property(
        typeArbitrary,
        typeArbitrary,
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (previous, next, seed) => {
          if (accepts(next, previous) !== null) return
          for (const value of fc.sample(valueOf(previous), { numRuns: 20, seed })) {
            expect(decodes(previous, value)).toBe(true)
            expect(decodes(next, value), JSON.stringify({ previous, next, value })).toBe(true)
          }
        },
      ),
      { numRuns: 3000 },
    )
  })

  it("accepts every type as itself and under json", () => {
    fc.assert(
      fc.property(typeArbitrary, (type) => {
        expect(accepts(type, type)).toBeNull()
        expect(accepts(t.json, type)).toBeNull()
      }),
    )
  })
})
