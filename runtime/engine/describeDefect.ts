/**
 * The message a defect is recorded with: what a person reading `akter inspect` needs, and nothing
 * that changes between reruns of the same failure (no stack addresses).
 */
import * as Cause from "effect/Cause"

export const describeDefect = (defect: unknown): string => {
  if (defect instanceof Error) {
    const tag = (defect as { _tag?: unknown })._tag
    const name = typeof tag === "string" ? tag : defect.name
    return defect.message === "" ? name : `${name}: ${defect.message}`
  }
  if (typeof defect === "string") return defect
  try {
    return JSON.stringify(defect) ?? String(defect)
  } catch {
    return String(defect)
  }
}

export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const reasons = cause.reasons
  const parts = reasons.map((reason) =>
    Cause.isDieReason(reason)
      ? describeDefect(reason.defect)
      : Cause.isFailReason(reason)
        ? describeDefect(reason.error)
        : "interrupted",
  )
  return parts.length === 0 ? "unknown failure" : parts.join("; ")
}
