/**
 * How format violations are reported: the rule id and expectation registered on a schema of the
 * manifest format, which the format check reads back when a value fails that schema.
 */
import { z } from "zod"

/** How a format violation at a schema is reported: its rule id and what was expected there. */
export interface FormatRule {
  readonly rule: string
  /** Completes "… must be ___": `an integer from 1 to 1000`. */
  readonly expected: string
  readonly hint?: string
  /** Locate the problem at the entry's key rather than its value (an empty section). */
  readonly at?: "key"
}

/** Rules of the schemas that are not reported as plain `wrong-type`. */
export const formatRules = z.registry<FormatRule>()

/** Registers `rule` as how a violation of `schema` is reported, and returns the schema. */
export const ruled = <T extends z.ZodType>(schema: T, rule: FormatRule): T => {
  formatRules.add(schema, rule)
  return schema
}
