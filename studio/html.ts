/**
 * HTML built by one tagged template that escapes every interpolated value: a page cannot hold a
 * database value unescaped unless code wraps it in `trustedHtml`, which only this folder's own
 * markup does. Payloads are user data; `<script>` in an input must show as text.
 */

/** Markup this module made (or a caller declared safe): interpolated as is. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
  "`": "&#96;",
}

/** Text safe in element content and in quoted attribute values. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!)

export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[]

const render = (value: HtmlValue): string => {
  if (value === null || value === undefined || value === false) return ""
  if (value instanceof Html) return value.text
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join("")
  return escapeHtml(String(value))
}

/** `html\`<td>${ownerId}</td>\``: every interpolation escaped, arrays joined, Html kept. */
export const html = (strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Html => {
  let text = strings[0] ?? ""
  values.forEach((value, index) => {
    text += render(value) + (strings[index + 1] ?? "")
  })
  return new Html(text)
}

/** Markup from this folder's own constant strings (the stylesheet, the script). */
export const trustedHtml = (text: string): Html => new Html(text)

/** A query string from parameters, leaving out empty ones. */
export const queryString = (params: Readonly<Record<string, string | undefined>>): string => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") search.set(name, value)
  }
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}
