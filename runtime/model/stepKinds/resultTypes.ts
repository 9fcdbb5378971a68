/**
 * The result rule of the kinds that record a declared value or a declared error (activity, race):
 * what the reader declares must accept every output and every error the writer could record.
 */
import {
  acceptsDeclared,
  acceptsErrors,
  refusalUnder,
  type TypeRefusal,
} from "../../compatibility/accepts.js"
import type { CanonicalStepOf } from "./stepKindModel.js"

export const declaredResultRefusal = <K extends string>(
  reader: CanonicalStepOf<K>,
  writer: CanonicalStepOf<K>,
): TypeRefusal | null => {
  const output = acceptsDeclared(reader.output ?? null, writer.output ?? null)
  if (output !== null) return refusalUnder("output", output)
  const errors = acceptsErrors(reader.errors ?? {}, writer.errors ?? {})
  return errors === null ? null : refusalUnder("errors", errors)
}
