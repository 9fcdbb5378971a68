/**
 * How a step's outcome and an execution's result are recorded. A declared error is recorded with
 * its tag and fields so a replay can rebuild the typed error; anything else is a `Die` with a
 * message, which replays as a defect.
 */
export type RecordedExit =
  | { readonly _tag: "Success"; readonly value: unknown }
  | { readonly _tag: "Failure"; readonly error: DeclaredErrorRecord }
  | { readonly _tag: "Die"; readonly message: string }

/** A declared error as stored: its tag and its fields. */
export interface DeclaredErrorRecord {
  readonly _tag: string
  readonly [field: string]: unknown
}

/** Why an execution was interrupted: a client's `interrupt()`, or the workflow's deadline. */
export type InterruptCause = "request" | "deadline"

/**
 * An interrupt as recorded: `cause` is written only for the deadline, so a requested interrupt is
 * stored as it was before deadlines existed.
 */
export interface RecordedInterrupt {
  readonly _tag: "Interrupt"
  readonly cause?: "deadline"
}

/** The cause of a recorded interrupt. */
export const interruptCauseOf = (interrupt: RecordedInterrupt): InterruptCause =>
  interrupt.cause ?? "request"

export type StoredResult = RecordedExit | RecordedInterrupt

/** What a wait records: the matching event's payload, or that its timeout came first. */
export type WaitOutcome = { readonly event: unknown } | { readonly timedOut: true }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Checks the shape of a decoded stored exit; a corrupt row is refused, not guessed at. */
export const isStoredResult = (value: unknown): value is StoredResult => {
  if (!isObject(value)) return false
  switch (value["_tag"]) {
    case "Success":
      return "value" in value
    case "Failure":
      return isObject(value["error"]) && typeof value["error"]["_tag"] === "string"
    case "Die":
      return typeof value["message"] === "string"
    case "Interrupt":
      return value["cause"] === undefined || value["cause"] === "deadline"
    default:
      return false
  }
}
