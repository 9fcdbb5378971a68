/**
 * One round trip per write. A write is composed of parts — data-modifying CTEs — joined into a
 * single statement, so the fence, the settles held back from earlier steps and the write itself
 * commit together in one autocommitted statement: one round trip and one commit.
 *
 * Every part of a fenced statement is conditioned on the CTE named `fence` (the owner row locked
 * `FOR UPDATE` at the held generation): when the fence finds no row, no part writes anything.
 */
import { sql, type RawBuilder } from "kysely"

export interface StatementPart {
  /** The CTE's name; other parts of the statement may refer to it. */
  readonly name: string
  readonly sql: RawBuilder<unknown>
}

let counter = 0

/** A name no other part of any statement uses (parts refer to each other by these). */
export const partName = (prefix: string): string => `${prefix}_${(counter = (counter + 1) % 1e9)}`

export const part = (
  prefix: string,
  body: (name: string) => RawBuilder<unknown>,
): StatementPart => {
  const name = partName(prefix)
  return { name, sql: body(name) }
}

/**
 * Joins parts into `WITH a AS (...), b AS (...) SELECT <select>`. Data-modifying parts always run;
 * a plain `SELECT` part runs only if the final select refers to it.
 */
export const composeStatement = (
  parts: readonly StatementPart[],
  select: RawBuilder<unknown>,
): RawBuilder<Record<string, unknown>> => {
  if (parts.length === 0) return sql<Record<string, unknown>>`SELECT ${select}`
  const ctes = sql.join(
    parts.map((p) => sql`${sql.id(p.name)} AS (${p.sql})`),
    sql`, `,
  )
  return sql<Record<string, unknown>>`WITH ${ctes} SELECT ${select}`
}

/** `(SELECT count(*) FROM name)::int`, for a final select that reports how many rows a part touched. */
export const countOf = (name: string): RawBuilder<number> =>
  sql<number>`(SELECT count(*) FROM ${sql.id(name)})::int`

/** `EXISTS (SELECT 1 FROM name)`, to condition one part on another. */
export const existsIn = (name: string): RawBuilder<boolean> =>
  sql<boolean>`EXISTS (SELECT 1 FROM ${sql.id(name)})`
