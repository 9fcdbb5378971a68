/**
 * Canonical JSON: object keys sorted by code unit, no insignificant whitespace, `undefined` object
 * members dropped. Two values that are equal as JSON data always print to the same string, which is
 * what every hash in akter is computed over.
 */

/** Where a value sits in the one being printed, as segments: `["a", 1]` is `$.a[1]`. */
type JsonPath = (string | number)[]

/** A path as an error message names it. Built only when there is an error to report. */
const pathText = (path: JsonPath): string =>
  `$${path.map((segment) => (typeof segment === "number" ? `[${segment}]` : `.${segment}`)).join("")}`

const canonicalText = (node: unknown, path: JsonPath): string => {
  if (node === null) return "null"
  switch (typeof node) {
    case "string":
      return JSON.stringify(node)
    case "boolean":
      return node ? "true" : "false"
    case "number":
      if (!Number.isFinite(node)) {
        throw new TypeError(`canonicalJson: ${pathText(path)} is not a finite number`)
      }
      return JSON.stringify(node)
    case "object": {
      if (Array.isArray(node)) {
        let text = "["
        for (let index = 0; index < node.length; index++) {
          path.push(index)
          text += `${index > 0 ? "," : ""}${canonicalText(node[index], path)}`
          path.pop()
        }
        return `${text}]`
      }
      const record = node as Record<string, unknown>
      let text = "{"
      // the default sort orders strings by code unit
      for (const key of Object.keys(record).sort()) {
        const item = record[key]
        if (item === undefined) continue
        path.push(key)
        text += `${text === "{" ? "" : ","}${JSON.stringify(key)}:${canonicalText(item, path)}`
        path.pop()
      }
      return `${text}}`
    }
    default:
      throw new TypeError(
        `canonicalJson: ${pathText(path)} is a ${typeof node}, which JSON cannot hold`,
      )
  }
}

export const canonicalJson = (value: unknown): string => canonicalText(value, [])
