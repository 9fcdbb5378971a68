/**
 * Lays JSON data out exactly as prettier's `json` parser would print it with akter's style, without
 * parsing and printing through prettier: a generated JSON file is data, and prettier's round trip
 * cost more than everything else in generation put together. The output stays as the repository's
 * own prettier formats it, so `prettier --write .` never makes `generated/` stale; a property test
 * compares the two on random documents.
 *
 * The rules, as prettier's printer applies them to JSON that arrives on one line:
 * - an object or an array is printed on one line when it fits in the remaining width (counting the
 *   comma that follows it), otherwise one member per line;
 * - an array of more than one element whose elements are all objects with more than one key, or all
 *   arrays with more than one element, always gets one element per line;
 * - an array of numbers fills its lines, as many numbers per line as fit.
 */
/** The width of a line, as prettier's `printWidth`. */
const WIDTH = 100

const INDENT = "  "

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json }

const isArray = (value: Json): value is readonly Json[] => Array.isArray(value)

const isObject = (value: Json): value is { readonly [key: string]: Json } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Own enumerable keys whose value is not `undefined`, as `JSON.stringify` keeps them. */
const keysOf = (value: { readonly [key: string]: Json }): string[] =>
  Object.keys(value).filter((key) => value[key] !== undefined)

/** Always one element per line: prettier's rule for a list of records or of tuples. */
const breaksAlways = (items: readonly Json[]): boolean => {
  if (items.length < 2) return false
  const first = items[0]!
  if (isArray(first)) return items.every((item) => isArray(item) && item.length > 1)
  if (isObject(first)) return items.every((item) => isObject(item) && keysOf(item).length > 1)
  return false
}

const isNumberList = (items: readonly Json[]): items is readonly number[] =>
  items.length > 0 && items.every((item) => typeof item === "number")

/** `JSON.stringify` of a scalar, with numbers as prettier prints them: `1e21`, not `1e+21`. */
const scalar = (value: null | boolean | number | string): string =>
  typeof value === "number" ? JSON.stringify(value).replace("e+", "e") : JSON.stringify(value)

/** A text's width in columns, as prettier measures lines: wide characters count two. */
type Measure = (text: string) => number

/** Whether a key or a string of `value` holds a character outside printable ASCII. */
const holdsNonAscii = (value: Json): boolean => {
  if (typeof value === "string") return /[^\x20-\x7e]/.test(value)
  if (isArray(value)) return value.some(holdsNonAscii)
  if (isObject(value)) {
    return keysOf(value).some((key) => /[^\x20-\x7e]/.test(key) || holdsNonAscii(value[key]!))
  }
  return false
}

/** A one-line form and its width. */
interface Flat {
  readonly text: string
  readonly width: number
}

const EMPTY_ARRAY: Flat = { text: "[]", width: 2 }
const EMPTY_OBJECT: Flat = { text: "{}", width: 2 }

/**
 * The one-line form when it is at most `budget` columns wide; undefined when it is wider or must
 * break whatever the width. Stopping at the budget keeps layout linear in the document's size.
 */
const flat = (value: Json, budget: number, widthOf: Measure): Flat | undefined => {
  if (isArray(value)) {
    if (value.length === 0) return EMPTY_ARRAY
    if (breaksAlways(value)) return undefined
    let text = "["
    let width = 2 + 2 * (value.length - 1)
    for (let index = 0; index < value.length; index++) {
      if (width > budget) return undefined
      const part = flat(value[index]!, budget - width, widthOf)
      if (part === undefined) return undefined
      width += part.width
      text += index === 0 ? part.text : `, ${part.text}`
    }
    return width > budget ? undefined : { text: `${text}]`, width }
  }
  if (isObject(value)) {
    const keys = keysOf(value)
    if (keys.length === 0) return EMPTY_OBJECT
    let text = "{ "
    let width = 4 + 2 * (keys.length - 1)
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index]!
      const prefix = `${JSON.stringify(key)}: `
      width += widthOf(prefix)
      if (width > budget) return undefined
      const part = flat(value[key]!, budget - width, widthOf)
      if (part === undefined) return undefined
      width += part.width
      text += `${index === 0 ? "" : ", "}${prefix}${part.text}`
    }
    return width > budget ? undefined : { text: `${text} }`, width }
  }
  const text = scalar(value)
  const width = widthOf(text)
  return width > budget ? undefined : { text, width }
}

/**
 * Prints `value` starting at `column` of a line indented by `indent`, followed on the same line by
 * `trailing` characters (a comma) before the next line break.
 */
const layout = (
  value: Json,
  indent: string,
  column: number,
  trailing: number,
  widthOf: Measure,
): string => {
  const oneLine = flat(value, WIDTH - column - trailing, widthOf)
  if (oneLine !== undefined) return oneLine.text
  const inner = indent + INDENT
  if (isArray(value)) {
    if (isNumberList(value)) return fillNumbers(value, indent)
    const items = value.map(
      (item, index) =>
        `${inner}${layout(item, inner, inner.length, index < value.length - 1 ? 1 : 0, widthOf)}`,
    )
    return `[\n${items.join(",\n")}\n${indent}]`
  }
  if (isObject(value)) {
    const keys = keysOf(value)
    const lines = keys.map((key, index) => {
      const prefix = `${inner}${JSON.stringify(key)}: `
      const last = index === keys.length - 1
      return `${prefix}${layout(value[key]!, inner, widthOf(prefix), last ? 0 : 1, widthOf)}`
    })
    return `{\n${lines.join(",\n")}\n${indent}}`
  }
  // a scalar wider than the line stays on it: there is nowhere to break
  return scalar(value)
}

/** Numbers, as many to a line as fit: prettier's `fill`, each number with its comma. */
const fillNumbers = (numbers: readonly number[], indent: string): string => {
  const inner = indent + INDENT
  const items = numbers.map((number, index) =>
    index < numbers.length - 1 ? `${scalar(number)},` : scalar(number),
  )
  const lines: string[] = []
  let line = items[0]!
  for (const item of items.slice(1)) {
    if (inner.length + line.length + 1 + item.length <= WIDTH) line = `${line} ${item}`
    else {
      lines.push(line)
      line = item
    }
  }
  lines.push(line)
  return `[\n${lines.map((text) => `${inner}${text}`).join("\n")}\n${indent}]`
}

/**
 * @example
 * await jsonText({ $comment: "Generated by akter …", required: ["id", "amount"] })
 * // '{ "$comment": "Generated by akter …", "required": ["id", "amount"] }\n'
 */
export const jsonText = async (value: unknown): Promise<string> => {
  const json = value as Json
  // printable ASCII is as wide as it is long; only other text needs prettier's measure, whose
  // module costs more to load than laying out every document of the benchmark's 20 owners
  const widthOf: Measure = holdsNonAscii(json)
    ? (await import("prettier")).util.getStringWidth
    : (text) => text.length
  return `${layout(json, "", 0, 0, widthOf)}\n`
}
