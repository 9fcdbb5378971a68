/**
 * Turns a composed YAML document into plain JSON-like data for validation, following aliases under
 * a budget. A naive expansion of a "billion laughs" file (aliases of aliases of aliases) is
 * exponential; here each node is converted once, an alias reuses its anchor's value, and the size
 * the aliases would expand to is summed: past `ALIAS_EXPANSION_LIMIT` nodes the conversion stops
 * with a located error, so every later walk over the data stays bounded too. Duplicate keys are
 * found here as well, in linear time (the first entry is kept).
 */
import { isAlias, isMap, isPair, isScalar, isSeq, type Alias, type Node } from "yaml"

/** At most this many nodes may be reached through aliases in one file. */
export const ALIAS_EXPANSION_LIMIT = 10_000

export type PlainValue =
  null | boolean | number | string | PlainValue[] | { [key: string]: PlainValue }

export interface PlainProblem {
  readonly offset: number
  readonly rule: string
  readonly message: string
  readonly hint?: string
}

export interface PlainConversion {
  /** Undefined when the aliases exceeded their budget; the file is not checked further then. */
  readonly value: PlainValue | undefined
  readonly problems: readonly PlainProblem[]
  /** Where each alias points, for locating paths that run through one. */
  readonly aliasTargets: ReadonlyMap<Alias, Node>
}

/** Sets `record[key]` as an own entry, even for a key like `__proto__`. */
export const setEntry = <V>(record: Record<string, V>, key: string, value: V): void => {
  Object.defineProperty(record, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  })
}

class AliasBudgetExceeded extends Error {}

/**
 * The text of a mapping key as the author wrote it: `null:`, `true:` and `1.0:` are the keys
 * "null", "true" and "1.0", not the values the core schema would give them.
 */
export const keyText = (key: unknown): string | undefined => {
  if (isScalar(key)) {
    if (key.type === "PLAIN" && typeof key.source === "string") return key.source
    return String(key.value)
  }
  return undefined
}

/**
 * Converts the document's root node. The walk recurses per level, which is safe because
 * `parseManifestYaml` has already cut nesting at `YAML_NESTING_LIMIT`.
 *
 * @example
 * const { value, problems } = toPlainValue(document.contents)
 */
export const toPlainValue = (root: Node | null): PlainConversion => {
  const problems: PlainProblem[] = []
  const anchors = new Map<string, Node>()
  const converted = new Map<Node, { value: PlainValue; size: number }>()
  const inProgress = new Set<Node>()
  const aliasTargets = new Map<Alias, Node>()
  let expanded = 0

  const convert = (node: Node): { value: PlainValue; size: number } => {
    if (isAlias(node)) {
      const target = anchors.get(node.source)
      const offset = node.range?.[0] ?? 0
      if (target === undefined) {
        problems.push({
          offset,
          rule: "yaml-syntax",
          message: `alias *${node.source} names no anchor defined before it`,
          hint: `define &${node.source} on a node above this alias`,
        })
        return { value: null, size: 1 }
      }
      aliasTargets.set(node, target)
      const done = converted.get(target)
      if (done === undefined || inProgress.has(target)) {
        problems.push({
          offset,
          rule: "alias-limit",
          message: `alias *${node.source} refers to a node that contains it`,
          hint: "recursive data cannot be expressed in a manifest; write the structure out",
        })
        throw new AliasBudgetExceeded()
      }
      expanded += done.size
      if (expanded > ALIAS_EXPANSION_LIMIT) {
        problems.push({
          offset,
          rule: "alias-limit",
          message: `aliases in this file expand to more than ${ALIAS_EXPANSION_LIMIT} nodes`,
          hint: "a manifest is small; write the repeated part out or use a named type under types:",
        })
        throw new AliasBudgetExceeded()
      }
      return done
    }
    if (node.anchor !== undefined) anchors.set(node.anchor, node)
    inProgress.add(node)
    let result: { value: PlainValue; size: number }
    if (isMap(node)) {
      const value: { [key: string]: PlainValue } = {}
      let size = 1
      for (const pair of node.items) {
        if (!isPair(pair)) continue
        const key = pair.key as Node | null
        const text = key === null ? "" : keyText(key)
        if (key !== null && !isScalar(key)) {
          // Convert complex keys anyway so their anchors register, then refuse them.
          convert(key)
          problems.push({
            offset: key.range?.[0] ?? 0,
            rule: "wrong-type",
            message: "mapping keys must be plain names, not collections",
          })
        }
        if (text !== undefined && Object.hasOwn(value, text)) {
          problems.push({
            offset: key?.range?.[0] ?? node.range?.[0] ?? 0,
            rule: "duplicate-key",
            message: `key ${JSON.stringify(text)} appears twice in this mapping`,
            hint: "each key may appear once in a mapping; merge the two entries",
          })
        }
        const item = pair.value === null ? { value: null, size: 1 } : convert(pair.value as Node)
        size += item.size
        if (text !== undefined && !Object.hasOwn(value, text)) setEntry(value, text, item.value)
      }
      result = { value, size }
    } else if (isSeq(node)) {
      const value: PlainValue[] = []
      let size = 1
      for (const entry of node.items) {
        const item = entry === null ? { value: null, size: 1 } : convert(entry as Node)
        size += item.size
        value.push(item.value)
      }
      result = { value, size }
    } else if (isScalar(node)) {
      const raw = node.value
      const value: PlainValue =
        raw === null ||
        typeof raw === "string" ||
        typeof raw === "number" ||
        typeof raw === "boolean"
          ? raw
          : String(raw)
      result = { value, size: 1 }
    } else {
      result = { value: null, size: 1 }
    }
    inProgress.delete(node)
    converted.set(node, result)
    return result
  }

  if (root === null) return { value: null, problems, aliasTargets }
  try {
    return { value: convert(root).value, problems, aliasTargets }
  } catch (error) {
    if (error instanceof AliasBudgetExceeded) return { value: undefined, problems, aliasTargets }
    throw error
  }
}
