/**
 * Rows a statement reads as data: typed columns, each row's value picked from what the caller
 * holds, sent as one array per column and read back with `unnest` — or, for a lone row, as plain
 * values, which Postgres plans and runs for less than arrays of one (measured in shape c: 0.25
 * against 0.35 ms of its CPU per step). The batched statements' `input` (engine/batchInput.ts)
 * types its columns with these; the parts that write a pass's held rows of one kind together
 * (`RowsWrite`, `heldParts`) and its held settles read their rows with `rowsSource`.
 */
import { sql, type RawBuilder } from "kysely"
import type { OwnerPlacement } from "../owners/routing.js"
import type { DatabaseClock } from "./clock.js"
import type { StatementPart } from "./statementParts.js"

/** A column's SQL type: a lone row's value, or every row's as an array. */
export interface ColumnType {
  readonly one: (value: unknown) => RawBuilder<unknown>
  readonly many: (values: readonly unknown[]) => RawBuilder<unknown>
}

// Each written out: the cast is part of the SQL text, and the runtime builds no SQL from strings.
export const BIGINT: ColumnType = {
  one: (value) => sql`${value}::bigint`,
  many: (values) => sql`${values}::bigint[]`,
}
export const INT: ColumnType = {
  one: (value) => sql`${value}::int`,
  many: (values) => sql`${values}::int[]`,
}
export const TEXT: ColumnType = {
  one: (value) => sql`${value}::text`,
  many: (values) => sql`${values}::text[]`,
}
export const BYTEA: ColumnType = {
  one: (value) => sql`${value}::bytea`,
  many: (values) => sql`${values}::bytea[]`,
}
export const BOOLEAN: ColumnType = {
  one: (value) => sql`${value}::boolean`,
  many: (values) => sql`${values}::boolean[]`,
}

/** A named, typed column and how a row gives its value. */
export type InputColumn<Row> = readonly [string, ColumnType, (row: Row) => unknown]

/** The values of `columns` for `rows`, in order: a lone row's value of each, or each one's array. */
export const columnValues = <Row>(
  columns: readonly InputColumn<Row>[],
  rows: readonly Row[],
): unknown[] => columns.map(([, , pick]) => (rows.length === 1 ? pick(rows[0]!) : rows.map(pick)))

/** A lone row's select list, `v AS c, …`, from its `columnValues` (or slots standing for them). */
export const loneRowSql = <Row>(
  columns: readonly InputColumn<Row>[],
  values: readonly unknown[],
): RawBuilder<unknown> =>
  sql.join(columns.map(([name, type], index) => sql`${type.one(values[index])} AS ${sql.id(name)}`))

/** `unnest`'s arguments, one array per column, from `columnValues` (or slots standing for them). */
export const unnestArraysSql = <Row>(
  columns: readonly InputColumn<Row>[],
  values: readonly unknown[],
): RawBuilder<unknown> =>
  sql.join(columns.map(([, type], index) => type.many(values[index] as readonly unknown[])))

/** The columns' names, as `unnest`'s rows are named. */
export const columnNamesSql = <Row>(columns: readonly InputColumn<Row>[]): RawBuilder<unknown> =>
  sql.join(columns.map(([name]) => sql.id(name)))

/**
 * `rows` as a `FROM` item named `alias`: `(SELECT v AS c, …) AS alias` for a lone row, else
 * `unnest(a, …) AS alias(c, …)`; no row order is implied.
 */
export const rowsSource = <Row>(
  columns: readonly InputColumn<Row>[],
  rows: readonly Row[],
  alias: string,
): RawBuilder<unknown> => {
  // A part over no rows would write nothing, silently: its caller has nothing to write.
  if (rows.length === 0) throw new Error("a rows source needs at least one row")
  const values = columnValues(columns, rows)
  if (rows.length === 1) return sql`(SELECT ${loneRowSql(columns, values)}) AS ${sql.id(alias)}`
  return sql`unnest(${unnestArraysSql(columns, values)})
    AS ${sql.id(alias)}(${columnNamesSql(columns)})`
}

/** The execution whose pass held the rows, and its owner: every row is written under them. */
export interface RowsExecution {
  readonly owner: OwnerPlacement
  readonly executionId: string
}

/**
 * A write whose rows a pass's steps hold one by one (engine/passWriter.ts): the rows of one kind
 * that travel in one statement are written by one part — one CTE planned once, however many steps
 * of the pass held a row — rather than a part each. `part` is given every row (at least one); the
 * routing key it writes under is the execution's, one value, so the statement stays routable by it.
 */
export interface RowsWrite<Row> {
  readonly part: (
    clock: DatabaseClock,
    execution: RowsExecution,
    rows: readonly Row[],
  ) => StatementPart
}

/** One held row of a `RowsWrite` (`heldRow`). */
export interface HeldRow {
  readonly write: RowsWrite<unknown>
  readonly row: unknown
}

export const heldRow = <Row>(write: RowsWrite<Row>, row: Row): HeldRow => ({
  write: write as RowsWrite<unknown>,
  row,
})

/** What a pass holds for its next statement: parts as they are, and rows to write by kind. */
export type Held = StatementPart | HeldRow

const isHeldRow = (held: Held): held is HeldRow => "write" in held

/**
 * The parts of what is held, in the order held: a part as it is, and the rows of each kind as one
 * part, where its first row was held.
 */
export const heldParts = (
  clock: DatabaseClock,
  execution: RowsExecution,
  held: readonly Held[],
): StatementPart[] => {
  const rowsOf = new Map<RowsWrite<unknown>, unknown[]>()
  const order: (() => StatementPart)[] = []
  for (const item of held) {
    if (!isHeldRow(item)) {
      order.push(() => item)
      continue
    }
    const { write } = item
    const rows = rowsOf.get(write)
    if (rows === undefined) {
      const first = [item.row]
      rowsOf.set(write, first)
      order.push(() => write.part(clock, execution, first))
    } else rows.push(item.row)
  }
  return order.map((compose) => compose())
}
