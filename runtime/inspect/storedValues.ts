/**
 * Reading stored payloads and exits for people: every value is decoded without trusting it, and a
 * value akter cannot read back becomes a described defect of its execution instead of an exception,
 * so one corrupt row never hides the rest.
 */
import { isStoredResult, type StoredResult } from "../model/exit.js"
import { decodeJson } from "../storage/codec.js"

/** A stored exit as inspect shows it: what the engine recorded, or why it cannot be read. */
export type InspectedExit = StoredResult | { readonly _tag: "Unreadable"; readonly defect: string }

export type InspectedValue =
  | { readonly readable: true; readonly value: unknown }
  | { readonly readable: false; readonly defect: string }

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Decodes a stored payload (an input, an event); an unreadable one says why. */
export const inspectValue = (stored: Uint8Array): InspectedValue => {
  try {
    return { readable: true, value: decodeJson(stored) }
  } catch (error) {
    return { readable: false, defect: errorText(error) }
  }
}

/** Decodes a stored step exit or execution result, checking its shape. */
export const inspectExit = (stored: Uint8Array): InspectedExit => {
  const decoded = inspectValue(stored)
  if (!decoded.readable) return { _tag: "Unreadable", defect: decoded.defect }
  return isStoredResult(decoded.value)
    ? decoded.value
    : {
        _tag: "Unreadable",
        defect: "stored exit has no known shape (Success, Failure, Die, Interrupt)",
      }
}

/** How an execution ended, in one word, from its inspected result. */
export type Outcome = "succeeded" | "failed" | "interrupted" | "defect"

export const outcomeOf = (exit: InspectedExit): Outcome => {
  switch (exit._tag) {
    case "Success":
      return "succeeded"
    case "Failure":
      return "failed"
    case "Interrupt":
      return "interrupted"
    default:
      return "defect"
  }
}

/** A one-line description of an exit: `Success {"reservationId":"r-1"}`, `Failure OutOfStock {…}`. */
export const describeExit = (exit: InspectedExit): string => {
  switch (exit._tag) {
    case "Success":
      return `Success ${JSON.stringify(exit.value)}`
    case "Failure": {
      const { _tag: tag, ...fields } = exit.error
      return `Failure ${tag} ${JSON.stringify(fields)}`
    }
    case "Die":
      return `Die ${exit.message}`
    case "Interrupt":
      return exit.cause === "deadline" ? "Interrupt by deadline" : "Interrupt"
    case "Unreadable":
      return `DEFECT unreadable exit: ${exit.defect}`
  }
}
