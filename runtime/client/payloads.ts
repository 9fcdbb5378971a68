/**
 * New input is validated strictly and measured before anything is written: a start or an emit
 * whose payload nests deeper than the depth limit, fails its schema or is over the size limit
 * writes nothing.
 */
import type { ZodType } from "zod"
import { InvalidPayload, PayloadTooLarge } from "../errors.js"
import { parseWithinDepth } from "../model/payloadDepth.js"
import { encodeJsonBytes, jsonBytes } from "../storage/codec.js"

export interface EncodedPayload {
  readonly value: unknown
  readonly stored: Buffer
}

/** Validates `value` with `schema` and encodes what the schema returns (defaults applied, never extra keys). */
export const encodePayload = (
  what: string,
  schema: ZodType,
  value: unknown,
  limitBytes: number,
): EncodedPayload | InvalidPayload | PayloadTooLarge => {
  const parsed = parseWithinDepth(schema, value)
  if (!parsed.success) return new InvalidPayload(what, parsed.issues)
  const json = jsonBytes(parsed.data)
  if (json.length > limitBytes) return new PayloadTooLarge(what, json.length, limitBytes)
  return { value: parsed.data, stored: encodeJsonBytes(json) }
}
