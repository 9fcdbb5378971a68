/**
 * The identifiers a client passes besides payloads — owner ids (an order id, an account id), command
 * ids, and the caller's tenant — are part of execution ids and primary keys: each must be non-empty,
 * bounded, well-formed UTF-8 and free of NUL (Postgres text cannot hold it), and is refused before
 * anything is written otherwise.
 */
import { InvalidPayload, MAX_KEY_BYTES } from "../errors.js"
import { isStorableText, MAX_OWNER_ID_BYTES, MAX_TENANT_BYTES } from "./executionId.js"

const identifierProblem = (value: unknown, maxBytes: number): string | undefined =>
  typeof value !== "string"
    ? "must be a string"
    : value.length === 0
      ? "must not be empty"
      : Buffer.byteLength(value, "utf8") > maxBytes
        ? `must be at most ${maxBytes} UTF-8 bytes`
        : !isStorableText(value)
          ? "must be well-formed Unicode without NUL characters"
          : undefined

const refusal = (what: string, problem: string | undefined) =>
  problem === undefined ? undefined : new InvalidPayload(what, [{ path: "", message: problem }])

export const checkOwnerId = (ownerId: unknown): InvalidPayload | undefined =>
  refusal("owner id", identifierProblem(ownerId, MAX_OWNER_ID_BYTES))

/** A command id names a start, emit or interrupt for retries; it is a key of `akter.receipts`. */
export const checkCommandId = (commandId: unknown): InvalidPayload | undefined =>
  refusal("command id", identifierProblem(commandId, MAX_KEY_BYTES))

/** The tenant is part of every id of its executions: checked once, when a client is made. */
export const checkTenant = (tenant: unknown): InvalidPayload | undefined =>
  refusal("caller tenant", identifierProblem(tenant, MAX_TENANT_BYTES))
