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
// the width prettier measures lines in: wide characters count two columns
import { util } from "prettier"

/** The width of a line, as prettier's `printWidth`. */
const WIDTH = 100

const INDENT = "  "

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json }

const isArray = (value: Json): value is readonly Json[] => Array.isArray(value)

const isObject = (value: Json): value is { readonly [key: string]: Json } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Own enumerable members whose value is not `undefined`, as `JSON.stringify` keeps them. */
const membersOf = (value: { readonly [key: string]: Json }): (readonly [string, Json])[] =>
  Object.entries(value).filter(([, member]) => member !== undefined)

/** Always one element per line: prettier's rule for a list of records or of tuples. */
const breaksAlways = (items: readonly Json[]): boolean => {
  if (items.length < 2) return false
  const first = items[0]!
  if (isArray(first)) return items.every((item) => isArray(item) && item.length > 1)
  if (isObject(first)) return items.every((item) => isObject(item) && membersOf(item).length > 1)
  return false
}

const isNumberList = (items: readonly Json[]): items is readonly number[] =>
  items.length > 0 && items.every((item) => typeof item === "number")

/** `JSON.stringify` of a scalar, with numbers as prettier prints them: `1e21`, not `1e+21`. */
const scalar = (value: null | boolean | number | string): string =>
  typeof value === "number" ? JSON.stringify(value).replace("e+", "e") : JSON.stringify(value)

/** prettier's width of a text: its length, unless some character is wide or combining. */
const widthOf = (text: string): number => util.getStringWidth(text)

/**
 * The one-line form when it is at most `budget` columns wide; undefined when it is wider or must
 * break whatever the width. Stopping at the budget keeps layout linear in the document's size.
 */
const flat = (value: Json, budget: number): { text: string; width: number } | undefined => {
  if (isArray(value) || isObject(value)) {
    const entries: readonly (readonly [string | undefined, Json])[] = isArray(value)
      ? value.map((item) => [undefined, item] as const)
      : membersOf(value)
    if (entries.length === 0)
      return isArray(value) ? { text: "[]", width: 2 } : { text: "{}", width: 2 }
    if (isArray(value) && breaksAlways(value)) return undefined
    const [open, close] = isArray(value) ? ["[", "]"] : ["{ ", " }"]
    const parts: string[] = []
    let width = open.length + close.length + 2 * (entries.length - 1)
    for (const [key, member] of entries) {
      const prefix = key === undefined ? "" : `${JSON.stringify(key)}: `
      width += widthOf(prefix)
      if (width > budget) return undefined
      const part = flat(member, budget - width)
      if (part === undefined) return undefined
      width += part.width
      parts.push(`${prefix}${part.text}`)
    }
    return width > budget ? undefined : { text: `${open}${parts.join(", ")}${close}`, width }
  }
  const text = scalar(value)
  const width = widthOf(text)
  return width > budget ? undefined : { text, width }
}

/**
 * Prints `value` starting at `column` of a line indented by `indent`, followed on the same line by
 * `trailing` characters (a comma) before the next line break.
 */
const layout = (value: Json, indent: string, column: number, trailing: number): string => {
  const oneLine = flat(value, WIDTH - column - trailing)
  if (oneLine !== undefined) return oneLine.text
  const inner = indent + INDENT
  if (isArray(value)) {
    if (isNumberList(value)) return fillNumbers(value, indent)
    const items = value.map(
      (item, index) =>
        `${inner}${layout(item, inner, inner.length, index < value.length - 1 ? 1 : 0)}`,
    )
    return `[\n${items.join(",\n")}\n${indent}]`
  }
  if (isObject(value)) {
    const members = membersOf(value)
    const lines = members.map(([key, member], index) => {
      const prefix = `${inner}${JSON.stringify(key)}: `
      const last = index === members.length - 1
      return `${prefix}${layout(member, inner, widthOf(prefix), last ? 0 : 1)}`
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
 * jsonText({ $comment: "Generated by akter …", required: ["id", "amount"] })
 * // '{ "$comment": "Generated by akter …", "required": ["id", "amount"] }\n'
 */
export const jsonText = (value: unknown): string => `${layout(value as Json, "", 0, 0)}\n`
