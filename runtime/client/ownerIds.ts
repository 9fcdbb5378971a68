/**
 * Owner ids name the entity an execution belongs to (an order id, an account id): non-empty,
 * well-formed UTF-8, at most 256 bytes — they are part of every execution id.
 */
import { InvalidPayload } from "../errors.js"
import { MAX_OWNER_ID_BYTES } from "../model/executionId.js"

export const checkOwnerId = (ownerId: unknown): InvalidPayload | undefined => {
  const problem =
    typeof ownerId !== "string"
      ? "must be a string"
      : ownerId.length === 0
        ? "must not be empty"
        : Buffer.byteLength(ownerId, "utf8") > MAX_OWNER_ID_BYTES
          ? `must be at most ${MAX_OWNER_ID_BYTES} UTF-8 bytes`
          : Buffer.from(ownerId, "utf8").toString("utf8") !== ownerId
            ? "must be well-formed Unicode"
            : undefined
  return problem === undefined
    ? undefined
    : new InvalidPayload("owner id", [{ path: "", message: problem }])
}
