/**
 * Between an Effect exit and a recorded exit. Recording keeps a success value only as its declared
 * type (extra keys dropped), a failure only if it is one of the step's declared errors with valid
 * fields, and everything else as a `Die` with a message. Replaying decodes tolerantly with the
 * current declared types and rebuilds declared errors as their generated classes.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { AppliedMigration } from "../compatibility/executionVerdict.js"
import { isStoredResult, type RecordedExit } from "../model/exit.js"
import type { WorkflowRegistration } from "../model/registration.js"
import { parseWithinDepth } from "../model/payloadDepth.js"
import { schemaOf } from "../model/schemaOf.js"
import type { TypeNode } from "../model/typeModel.js"
import { CorruptStoredValue, decodeJson, encodeJson, jsonBytes } from "../storage/codec.js"
import { describeCause, describeDefect } from "./describeDefect.js"
import { RecordedDefect } from "./signals.js"

export const encodeExit = (exit: RecordedExit): Buffer => encodeJson(exit)

/**
 * Reads a recorded step exit; bytes that are not one (corruption, a hand edit) are refused naming
 * the step, and the body dies of it — a defect of this one execution.
 */
export const decodeExit = (stored: Buffer, step: string): RecordedExit => {
  const exit = decodeJson(stored)
  if (!isStoredResult(exit) || exit._tag === "Interrupt") {
    throw new CorruptStoredValue(`step ${step}: not a recorded exit`)
  }
  return exit
}

export interface ResultTypes {
  /** The success type; `null`: no value (void). */
  readonly output: TypeNode | null
  /** Declared errors this step or workflow may record. */
  readonly errors: Readonly<Record<string, TypeNode>>
}

/** Decodes a value of a declared type for recording: extra keys dropped, or an explanation. */
const recordableValue = (
  types: ResultTypes,
  value: unknown,
): { readonly value: unknown } | { readonly problem: string } => {
  if (types.output === null) return { value: null }
  const parsed = parseWithinDepth(schemaOf(types.output, "tolerant"), value)
  if (parsed.success) return { value: parsed.data }
  const issue = parsed.issues[0]
  const at = issue === undefined || issue.path === "" ? "" : ` at ${issue.path}`
  return { problem: `does not match its declared output type${at}: ${issue?.message ?? "invalid"}` }
}

const declaredError = (types: ResultTypes, error: unknown): RecordedExit | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const tag = (error as { _tag?: unknown })._tag
  if (typeof tag !== "string" || !Object.hasOwn(types.errors, tag)) return undefined
  const fields: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(error)) if (key !== "_tag") fields[key] = value
  const parsed = parseWithinDepth(schemaOf(types.errors[tag]!, "tolerant"), fields)
  if (!parsed.success) return undefined
  return { _tag: "Failure", error: { ...(parsed.data as object), _tag: tag } }
}

/**
 * The exit to record for a finished attempt (or body), or `undefined` when it was interrupted and
 * nothing may be recorded.
 */
export const recordableExit = (
  what: string,
  types: ResultTypes,
  exit: Exit.Exit<unknown, unknown>,
  maxBytes: number,
): RecordedExit | undefined => {
  if (Exit.isSuccess(exit)) {
    const decoded = recordableValue(types, exit.value)
    if ("problem" in decoded)
      return { _tag: "Die", message: `${what} returned a value that ${decoded.problem}` }
    const bytes = jsonBytes(decoded.value).length
    if (bytes > maxBytes) {
      return {
        _tag: "Die",
        message: `${what} returned ${bytes} bytes of JSON, over the limit of ${maxBytes}`,
      }
    }
    return { _tag: "Success", value: decoded.value }
  }
  const cause = exit.cause
  if (Cause.hasInterruptsOnly(cause)) return undefined
  const failure = cause.reasons.find(Cause.isFailReason)
  if (failure !== undefined && !Cause.hasDies(cause)) {
    return (
      declaredError(types, failure.error) ?? {
        _tag: "Die",
        message: `${what} failed with an undeclared error: ${describeDefect(failure.error)}`,
      }
    )
  }
  return { _tag: "Die", message: describeCause(cause) }
}

/** Classifies a thrown value or rejection of a Promise activity like an Effect failure. */
export const recordableRejection = (
  what: string,
  types: ResultTypes,
  error: unknown,
): RecordedExit =>
  declaredError(types, error) ?? {
    _tag: "Die",
    message: `${what} failed: ${describeDefect(error)}`,
  }

/**
 * Reads a value recorded in an earlier shape through its migration: decoded tolerantly as that
 * shape, migrated, and the migration's result checked against the current type. Throws a
 * `RecordedDefect` naming what went wrong: the value dies as a defect of this one execution.
 */
export const migrateRecorded = (
  what: string,
  value: unknown,
  applied: AppliedMigration,
  migrate: ((old: never) => unknown) | undefined,
  current: TypeNode | null,
): unknown => {
  const name = applied.migration
  if (migrate === undefined) {
    throw new RecordedDefect(
      `${what} was recorded in earlier shape ${name}, whose migration is not implemented`,
    )
  }
  const old = parseWithinDepth(schemaOf(applied.shape, "tolerant"), value)
  if (!old.success) {
    throw new RecordedDefect(
      `${what} does not match its earlier shape ${name} (${old.issues[0]?.message ?? "invalid"})`,
    )
  }
  let migrated: unknown
  try {
    migrated = migrate(old.data as never)
  } catch (error) {
    throw new RecordedDefect(`migration ${name} of ${what} failed: ${describeDefect(error)}`)
  }
  if (current === null) return undefined
  const checked = parseWithinDepth(schemaOf(current, "tolerant"), migrated)
  if (!checked.success) {
    const issue = checked.issues[0]
    const at = issue === undefined || issue.path === "" ? "" : ` at ${issue.path}`
    throw new RecordedDefect(
      `migration ${name} of ${what} returned a value that does not match the current type${at}: ${issue?.message ?? "invalid"}`,
    )
  }
  return checked.data
}

/**
 * How a step's recorded failures of an earlier shape are read: the migration each declared error's
 * payload is read through, and the implementation's migrations of each error, by name.
 */
export interface ErrorMigrations {
  readonly applied: Readonly<Record<string, AppliedMigration>> | undefined
  readonly implemented:
    Readonly<Record<string, Readonly<Record<string, (old: never) => unknown>>>> | undefined
}

/**
 * A migration of an error's payload returns the error as the body sees it now; its fields (all but
 * `_tag`) are what is checked against the current payload type.
 */
const returningFields =
  (tag: string, migrate: (old: never) => unknown) =>
  (old: never): unknown => {
    const error = migrate(old)
    if (typeof error !== "object" || error === null) return error
    const returned = (error as { _tag?: unknown })._tag
    if (returned !== undefined && returned !== tag) {
      throw new Error(`it returned error ${String(returned)}, not ${tag}`)
    }
    const fields: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(error)) if (key !== "_tag") fields[key] = value
    return fields
  }

/** Replays a recorded exit as the Effect the body sees. */
export const replayExit = (
  what: string,
  registration: WorkflowRegistration,
  types: ResultTypes,
  exit: RecordedExit,
  errorMigrations?: ErrorMigrations,
): Effect.Effect<unknown, unknown> => {
  switch (exit._tag) {
    case "Success": {
      if (types.output === null) return Effect.succeed(undefined)
      const parsed = schemaOf(types.output, "tolerant").safeParse(exit.value)
      return parsed.success
        ? Effect.succeed(parsed.data)
        : Effect.die(
            new RecordedDefect(
              `the recorded result of ${what} no longer matches its declared type (${parsed.error.issues[0]?.message ?? "invalid"}); run akter check before deploying type changes`,
            ),
          )
    }
    case "Failure": {
      const { _tag: tag, ...fields } = exit.error
      const make = registration.errors[tag]
      if (make === undefined) {
        return Effect.die(
          new RecordedDefect(`${what} recorded error ${tag}, which is no longer declared`),
        )
      }
      const applied = errorMigrations?.applied?.[tag]
      if (applied === undefined) return Effect.fail(new make(fields as never))
      const migrate = errorMigrations?.implemented?.[tag]?.[applied.migration]
      return Effect.try({
        try: () =>
          migrateRecorded(
            `the recorded error ${tag} of ${what}`,
            fields,
            applied,
            migrate === undefined ? undefined : returningFields(tag, migrate),
            types.errors[tag] ?? null,
          ),
        catch: (error) => error,
      }).pipe(
        Effect.orDie,
        Effect.flatMap((migrated) => Effect.fail(new make(migrated as never))),
      )
    }
    case "Die":
      return Effect.die(new RecordedDefect(exit.message))
  }
}
