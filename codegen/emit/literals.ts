/**
 * How literals are written in generated code: strings, numbers and property keys exactly as
 * prettier prints them, so that the layout (`typeScriptLayout.ts`) and the doc examples agree with
 * what prettier makes of the same code.
 */
import { isPlainPropertyName } from "./names.js"

/**
 * A string literal as prettier prints it: double quotes unless the text holds more double quotes
 * than single ones, escapes kept as `JSON.stringify` wrote them.
 */
export const stringLiteral = (value: string): string => {
  const raw = JSON.stringify(value)
  const content = raw.slice(1, -1)
  let doubles = 0
  let singles = 0
  for (let index = 0; index < content.length; index++) {
    const code = content.charCodeAt(index)
    if (code === 34) doubles++
    else if (code === 39) singles++
  }
  if (doubles <= singles) return raw
  const requoted = content.replace(
    /\\(["'\\])|(["'])/g,
    (escape, escaped?: string, quote?: string) =>
      escaped === undefined ? (quote === "'" ? "\\'" : quote!) : escaped === '"' ? '"' : escape,
  )
  return `'${requoted}'`
}

/** A number as prettier prints it; large integers get `_` separators (`86_400_000`) so they read at a glance. */
export const numberLiteral = (value: number): string => {
  const text = String(value).replace("e+", "e")
  if (!Number.isInteger(value) || Math.abs(value) < 10_000 || text.includes("e")) return text
  return text.replace(/\B(?=(\d{3})+(?!\d))/g, "_")
}

/** A property key: bare when it is an identifier, quoted otherwise (`"charge-card"`). */
export const propertyKey = (name: string): string =>
  isPlainPropertyName(name) ? name : stringLiteral(name)
