/**
 * How deeply a payload may nest. Validation and encoding walk a value recursively (zod's `json`
 * type overflows the stack at about 2,000 levels, as a bare `RangeError`), so every value akter
 * records — inputs, event payloads, activity and workflow results — is measured first, by a walk
 * that itself never goes deeper than the limit, and a deeper one is refused naming where it goes
 * too deep. A cyclic value is refused the same way: it has no finite depth.
 */
import type { ZodType } from "zod"
import { formatIssuePath, issuesOf, type PayloadIssue } from "./schemaOf.js"

/** Levels of objects and arrays a payload may nest, counting the payload itself as level 1. */
export const MAX_PAYLOAD_DEPTH = 64

/** What a payload over the limit is told, after the path of its first too-deep value. */
export const tooDeepMessage = (limit: number = MAX_PAYLOAD_DEPTH) =>
  `nested deeper than ${limit} levels of objects and arrays (flatten it, or store it as a string)`

const isContainer = (value: unknown): value is object => typeof value === "object" && value !== null

/**
 * The path of the first object or array at level `limit + 1` (`entry.extra.a.a…`), or undefined
 * when `value` nests at most `limit` levels. Recursion is bounded by `limit`, so a value of any
 * depth — or a cycle — is measured without exhausting the stack.
 */
export const pathDeeperThan = (
  value: unknown,
  limit: number = MAX_PAYLOAD_DEPTH,
): string | undefined => {
  const path: PropertyKey[] = []
  const deeper = (node: unknown, level: number): boolean => {
    if (!isContainer(node)) return false
    if (level > limit) return true
    if (Array.isArray(node)) {
      for (let index = 0; index < node.length; index++) {
        path.push(index)
        if (deeper(node[index], level + 1)) return true
        path.pop()
      }
      return false
    }
    for (const key of Object.keys(node)) {
      path.push(key)
      if (deeper((node as Record<string, unknown>)[key], level + 1)) return true
      path.pop()
    }
    return false
  }
  return deeper(value, 1) ? formatIssuePath(path) : undefined
}

/**
 * `schema.safeParse(value)` for a value of any depth: one too deep is refused with the path of its
 * first too-deep value before the schema walks it. Issues are located like zod's own.
 */
export const parseWithinDepth = (
  schema: ZodType,
  value: unknown,
):
  | { readonly success: true; readonly data: unknown }
  | { readonly success: false; readonly issues: readonly PayloadIssue[] } => {
  const tooDeep = pathDeeperThan(value)
  if (tooDeep !== undefined) {
    return { success: false, issues: [{ path: tooDeep, message: tooDeepMessage() }] }
  }
  const parsed = schema.safeParse(value)
  return parsed.success
    ? { success: true, data: parsed.data }
    : { success: false, issues: issuesOf(parsed.error) }
}
