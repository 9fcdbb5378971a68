/**
 * The `input` part of a batched statement (engine/stepBatch.ts, engine/startBatch.ts): one row per
 * request, numbered `n` in request order, its columns typed once — a lone request's row as values,
 * which Postgres plans and runs for less than arrays of one (measured in shape c: 0.25 against 0.35
 * ms of its CPU per step), several as `unnest` of one array per column. Also the columns a start
 * row carries, shared by the folded starts of the step batch and the client's batched starts.
 */
import { sql, type RawBuilder } from "kysely"
import type { OwnerPlacement } from "../owners/routing.js"
import type { BatchedStartFields } from "./executionStore.js"

/** A column of the batch's input: a lone request's value, or every request's as an array. */
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

/** A named, typed column and how a request gives its value. */
export type InputColumn<Row> = readonly [string, ColumnType, (row: Row) => unknown]

/** The columns naming a row's owner, first in every batch's input. */
export const ownerColumns = <
  Row extends { readonly owner: OwnerPlacement },
>(): InputColumn<Row>[] => [
  ["routing_key", BIGINT, (row) => row.owner.routingKey],
  ["tenant", TEXT, (row) => row.owner.tenant],
  ["owner_type", TEXT, (row) => row.owner.ownerType],
  ["owner_id", TEXT, (row) => row.owner.ownerId],
]

/** `input AS (...)`: the rows, in order, numbered `n` from 1. */
export const batchInputSql = <Row>(
  columns: readonly InputColumn<Row>[],
  rows: readonly Row[],
): RawBuilder<unknown> => {
  if (rows.length === 1) {
    const lone = rows[0]!
    return sql`input AS (
      SELECT ${sql.join(columns.map(([name, type, pick]) => sql`${type.one(pick(lone))} AS ${sql.id(name)}`))},
        1::bigint AS n
    )`
  }
  return sql`input AS (
      SELECT * FROM unnest(${sql.join(columns.map(([, type, pick]) => type.many(rows.map(pick))))})
        WITH ORDINALITY AS i(${sql.join(columns.map(([name]) => sql.id(name)))}, n)
    )`
}

/**
 * The columns of the rows that start an execution (`startOf` gives a row's start, undefined for
 * one that does not): the owner's bucket, the execution's columns beyond its owner and id, its
 * markers (a JSON object, only when some row has markers: `markers`), and each manifest's text
 * once, on the first row that starts under it (the others name it by hash).
 */
export const startColumns = <
  Row extends { readonly owner: { readonly bucket: number; readonly ownerType: string } },
>(
  rows: readonly Row[],
  startOf: (row: Row) => BatchedStartFields | undefined,
): { readonly columns: InputColumn<Row>[]; readonly marking: boolean } => {
  const firstOfManifest = new Set<Row>()
  const seen = new Set<string>()
  let marking = false
  for (const row of rows) {
    const start = startOf(row)
    if (start === undefined) continue
    if (Object.keys(start.markers).length > 0) marking = true
    const which = `${row.owner.ownerType}/${start.workflow}/${start.manifestHash}`
    if (seen.has(which)) continue
    seen.add(which)
    firstOfManifest.add(row)
  }
  const columns: InputColumn<Row>[] = [
    ["bucket", INT, (row) => row.owner.bucket],
    ["workflow", TEXT, (row) => startOf(row)?.workflow ?? null],
    ["execution_key", TEXT, (row) => startOf(row)?.key ?? null],
    ["manifest_hash", TEXT, (row) => startOf(row)?.manifestHash ?? null],
    ["manifest", TEXT, (row) => (firstOfManifest.has(row) ? startOf(row)!.manifest : null)],
    ["start_input", BYTEA, (row) => startOf(row)?.input ?? null],
    ["caller", TEXT, (row) => startOf(row)?.caller ?? null],
    ["deadline_ms", BIGINT, (row) => startOf(row)?.deadlineMs ?? null],
  ]
  if (marking) {
    columns.push([
      "markers",
      TEXT,
      (row) => {
        const markers = startOf(row)?.markers
        return markers === undefined || Object.keys(markers).length === 0
          ? null
          : JSON.stringify(markers)
      },
    ])
  }
  return { columns, marking }
}
