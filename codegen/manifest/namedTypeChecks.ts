/**
 * Checks over the named types of one manifest as a whole: refs must not form cycles, and no type
 * may nest deeper than `MAX_TYPE_DEPTH` once its refs are followed. Both are decided on the graph of
 * ref uses with loops and memo tables, never by a recursive walk, so a hostile manifest cannot
 * exhaust the stack here either.
 */
import { MAX_TYPE_DEPTH, type NamedTypes, type TypeNode } from "../../runtime/model/typeModel.js"
import type { ManifestReport } from "./manifestReport.js"
import type { RefUse } from "./typeExpressions.js"

/** The named type whose body contains `use`, when it is inside `types:`. */
const ownerOf = (use: RefUse): string | undefined =>
  use.path[0] === "types" && typeof use.path[1] === "string" ? use.path[1] : undefined

/**
 * Reports cycles among named types (`recursive-type`, once per cycle, at its first ref in document
 * order) and types too deep once resolved (`type-too-deep`, at the ref that makes them so).
 * `localDepths` holds each parsed named type's own depth. Returns whether all types are sound,
 * that is whether every ref can be resolved without looping.
 */
export const checkNamedTypes = (
  localDepths: ReadonlyMap<string, number>,
  refUses: readonly RefUse[],
  report: ManifestReport,
): boolean => {
  const edges = new Map<string, string[]>()
  for (const use of refUses) {
    const from = ownerOf(use)
    if (from === undefined) continue
    const targets = edges.get(from) ?? []
    targets.push(use.name)
    edges.set(from, targets)
  }
  const reachable = (from: string): Set<string> => {
    const seen = new Set<string>()
    const queue = [...(edges.get(from) ?? [])]
    while (queue.length > 0) {
      const next = queue.pop()!
      if (seen.has(next)) continue
      seen.add(next)
      queue.push(...(edges.get(next) ?? []))
    }
    return seen
  }
  const reach = new Map<string, Set<string>>()
  for (const name of localDepths.keys()) reach.set(name, reachable(name))
  const inCycle = (name: string) => reach.get(name)?.has(name) === true

  const reportedCycles = new Set<string>()
  for (const use of refUses) {
    const from = ownerOf(use)
    if (from === undefined || !inCycle(from) || !(reach.get(use.name)?.has(from) ?? false)) continue
    const members = [...localDepths.keys()].filter(
      (name) => reach.get(from)!.has(name) && reach.get(name)!.has(from),
    )
    const cycleId = members.sort().join(",")
    if (reportedCycles.has(cycleId)) continue
    reportedCycles.add(cycleId)
    report.error(
      use.path,
      "recursive-type",
      `type "${from}" refers to itself through ${cycleText(from, use.name, edges)}`,
      { hint: "recursive types are not supported; break the cycle, for example with json" },
    )
  }
  if (reportedCycles.size > 0) return false

  // Resolved depth: a type's own depth, or the depth at a ref plus the depth of what it names.
  const resolved = new Map(localDepths)
  for (let pass = 0; pass <= localDepths.size; pass++) {
    let changed = false
    for (const use of refUses) {
      const from = ownerOf(use)
      if (from === undefined) continue
      const through = use.depth + (resolved.get(use.name) ?? 1)
      if (through > (resolved.get(from) ?? 0)) {
        resolved.set(from, through)
        changed = true
      }
    }
    if (!changed) break
  }
  let sound = true
  for (const use of refUses) {
    const target = resolved.get(use.name) ?? 1
    if (target > MAX_TYPE_DEPTH) continue // reported inside the target itself
    if (use.depth + target > MAX_TYPE_DEPTH) {
      report.error(
        use.path,
        "type-too-deep",
        `with "${use.name}" written out, this type nests ${use.depth + target} levels deep, more than ${MAX_TYPE_DEPTH}`,
        { hint: "flatten the types involved; every ref to a named type counts one level" },
      )
      sound = false
    }
  }
  return sound
}

/** `B → A`: one path from `start` back to `from` along ref edges, for the cycle message. */
const cycleText = (from: string, start: string, edges: ReadonlyMap<string, string[]>): string => {
  const previous = new Map<string, string>()
  const queue = [start]
  const seen = new Set([start])
  while (queue.length > 0) {
    const current = queue.shift()!
    if (current === from) break
    for (const next of edges.get(current) ?? []) {
      if (seen.has(next)) continue
      seen.add(next)
      previous.set(next, current)
      queue.push(next)
    }
  }
  const chain = [from]
  for (let at = previous.get(from); at !== undefined; at = previous.get(at)) chain.unshift(at)
  if (chain[0] !== start) chain.unshift(start)
  return chain.join(" → ")
}

/** Follows refs until a structure; undefined for an unknown name or a loop. */
export const resolveNamedType = (type: TypeNode, named: NamedTypes): TypeNode | undefined => {
  const seen = new Set<string>()
  let current: TypeNode | undefined = type
  while (current?.kind === "ref") {
    if (seen.has(current.name)) return undefined
    seen.add(current.name)
    current = named[current.name]
  }
  return current
}
