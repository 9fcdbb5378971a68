/**
 * Canonical JSON: object keys sorted by code unit, no insignificant whitespace, `undefined` object
 * members dropped. Two values that are equal as JSON data always print to the same string, which is
 * what every hash in akter is computed over.
 */
export const canonicalJson = (value: unknown): string => {
  const parts: string[] = []
  const write = (node: unknown, path: string): void => {
    if (node === null) {
      parts.push("null")
      return
    }
    switch (typeof node) {
      case "string":
        parts.push(JSON.stringify(node))
        return
      case "boolean":
        parts.push(node ? "true" : "false")
        return
      case "number":
        if (!Number.isFinite(node))
          throw new TypeError(`canonicalJson: ${path} is not a finite number`)
        parts.push(JSON.stringify(node))
        return
      case "object": {
        if (Array.isArray(node)) {
          parts.push("[")
          node.forEach((item, index) => {
            if (index > 0) parts.push(",")
            write(item, `${path}[${index}]`)
          })
          parts.push("]")
          return
        }
        const entries = Object.entries(node as Record<string, unknown>)
          .filter(([, v]) => v !== undefined)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        parts.push("{")
        entries.forEach(([key, item], index) => {
          if (index > 0) parts.push(",")
          parts.push(JSON.stringify(key), ":")
          write(item, `${path}.${key}`)
        })
        parts.push("}")
        return
      }
      default:
        throw new TypeError(`canonicalJson: ${path} is a ${typeof node}, which JSON cannot hold`)
    }
  }
  write(value, "$")
  return parts.join("")
}
