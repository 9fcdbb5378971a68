/**
 * Decoded JSON for people: pretty, with every object and array a collapsible `<details>` (no
 * script needed), and every string that is an execution id a link to its page — which is how a
 * start step's child and a caller's parent become links. Every value is escaped by `html`.
 */
import { decodeExecutionId } from "../runtime/model/executionId.js"
import { InvalidExecutionId } from "../runtime/errors.js"
import { html, type Html } from "./html.js"

/** Folded by default below this depth, so a large payload opens at its top level. */
const OPEN_DEPTH = 2

export const isExecutionId = (value: string): boolean =>
  value.startsWith("ak1.") && !(decodeExecutionId(value) instanceof InvalidExecutionId)

export const executionHref = (base: string, executionId: string): string =>
  `${base}/executions/${encodeURIComponent(executionId)}`

const scalar = (base: string, value: unknown): Html => {
  if (typeof value === "string") {
    return isExecutionId(value)
      ? html`<a class="json-string" href="${executionHref(base, value)}"
          >${JSON.stringify(value)}</a
        >`
      : html`<span class="json-string">${JSON.stringify(value)}</span>`
  }
  if (typeof value === "number") return html`<span class="json-number">${String(value)}</span>`
  if (typeof value === "boolean") return html`<span class="json-boolean">${String(value)}</span>`
  if (value === null) return html`<span class="json-null">null</span>`
  return html`<span class="json-other">${String(value)}</span>`
}

const node = (base: string, value: unknown, depth: number): Html => {
  if (value === null || typeof value !== "object") return scalar(base, value)
  const entries: [string | undefined, unknown][] = Array.isArray(value)
    ? value.map((item: unknown) => [undefined, item])
    : Object.entries(value as Record<string, unknown>)
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"]
  if (entries.length === 0) return html`<span>${open}${close}</span>`
  const summary = Array.isArray(value) ? `${entries.length} items` : `${entries.length} fields`
  return html`<details class="json" ${depth < OPEN_DEPTH ? html`open` : ""}>
    <summary>${open} <span class="muted">${summary}</span></summary>
    <ul>
      ${entries.map(
        ([name, item]) =>
          html`<li>
            ${name === undefined ? "" : html`<span class="json-key">${JSON.stringify(name)}</span>: `}${node(base, item, depth + 1)}
          </li>`,
      )}
    </ul>
    ${close}
  </details>`
}

/** `value` as a collapsible tree; `base` is the studio's mount path, for execution links. */
export const jsonView = (base: string, value: unknown): Html =>
  html`<div class="json-view">${node(base, value, 0)}</div>`
