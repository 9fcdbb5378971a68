/**
 * Finds where a node of a manifest is written, by its path inside the manifest. Paths may run
 * through aliases: the position is then the one of the anchored node the alias stands for.
 */
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  type Alias,
  type LineCounter,
  type Node,
  type Pair,
  type YAMLMap,
} from "yaml"
import { keyText } from "./plainValue.js"

export interface Position {
  readonly line: number
  readonly column: number
}

export type ManifestPath = readonly (string | number)[]

/** Finds the source position of a node by its path inside the manifest. */
export interface SourcePositions {
  /**
   * Where the entry at `path` is written: for a mapping entry its key, for a list item the item.
   * `["workflows", "fulfill", "steps", "reserve"]` → the `reserve:` key. Undefined if absent.
   */
  locate(path: ManifestPath): Position | undefined
  /** Where the value at `path` starts (for a mapping entry, its value rather than its key). */
  locateValue(path: ManifestPath): Position | undefined
  /** Where the file's root node starts (1:1 for an empty file). */
  readonly start: Position
}

interface Found {
  readonly key: Node | null
  readonly value: Node | null
}

/**
 * Positions for one composed YAML document.
 *
 * @example
 * const positions = yamlSourcePositions(document.contents, lineCounter, aliasTargets)
 * positions.locate(["events", "PaymentConfirmed"]) // { line: 14, column: 3 }
 */
export const yamlSourcePositions = (
  root: Node | null,
  lineCounter: LineCounter,
  aliasTargets: ReadonlyMap<Alias, Node>,
): SourcePositions => {
  const at = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset)
    return { line, column: col }
  }
  const deref = (node: Node | null): Node | null =>
    node !== null && isAlias(node) ? (aliasTargets.get(node) ?? node) : node

  // Each mapping's entries by key text, built on first use: a lookup per path segment stays
  // constant-time however many workflows or steps a mapping holds. The first entry of a key wins.
  const entries = new WeakMap<YAMLMap, Map<string, Pair>>()
  const entriesOf = (map: YAMLMap): Map<string, Pair> => {
    let byKey = entries.get(map)
    if (byKey === undefined) {
      byKey = new Map()
      for (const pair of map.items) {
        const text = isPair(pair) ? keyText(pair.key) : undefined
        if (text !== undefined && !byKey.has(text)) byKey.set(text, pair)
      }
      entries.set(map, byKey)
    }
    return byKey
  }

  const find = (path: ManifestPath): Found | undefined => {
    let found: Found = { key: null, value: root }
    for (const segment of path) {
      const node = deref(found.value)
      if (node === null) return undefined
      if (isMap(node)) {
        const pair = entriesOf(node).get(String(segment))
        if (pair === undefined) return undefined
        found = { key: pair.key as Node | null, value: pair.value as Node | null }
      } else if (isSeq(node) && typeof segment === "number") {
        const item = node.items[segment] as Node | null | undefined
        if (item === undefined) return undefined
        found = { key: null, value: item }
      } else {
        return undefined
      }
    }
    return found
  }
  const offsetOf = (node: Node | null): number | undefined => node?.range?.[0]

  const start = at(offsetOf(root) ?? 0)
  return {
    start,
    locate(path) {
      const found = find(path)
      if (found === undefined) return undefined
      const offset = offsetOf(found.key) ?? offsetOf(found.value)
      return offset === undefined ? start : at(offset)
    },
    locateValue(path) {
      const found = find(path)
      if (found === undefined) return undefined
      // An empty value (`key:` and nothing) is best shown at its key.
      const empty = isScalar(found.value) && found.value.range?.[0] === found.value.range?.[1]
      const offset = (empty ? undefined : offsetOf(found.value)) ?? offsetOf(found.key)
      return offset === undefined ? start : at(offset)
    },
  }
}
