/**
 * The `input` part of a batched statement (engine/stepBatch.ts, engine/startBatch.ts): one row per
 * request, numbered `n` in request order, its columns typed once — a lone request's row as values,
 * several as `unnest` of one array per column (storage/rowsSource.ts says why). Also the columns a
 * start row carries, shared by the folded starts of the step batch and the client's batched starts.
 */
import { sql, type RawBuilder } from "kysely"
import type { OwnerPlacement } from "../owners/routing.js"
import type { BatchedStartFields } from "./executionStore.js"
import { Slot } from "../storage/shapedStatement.js"
import {
  BIGINT,
  BYTEA,
  columnNamesSql,
  columnValues,
  INT,
  loneRowSql,
  TEXT,
  unnestArraysSql,
  type InputColumn,
} from "../storage/rowsSource.js"

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
): RawBuilder<unknown> => inputSql(columns, rows.length === 1, columnValues(columns, rows))

/**
 * `input AS (...)` of a shaped statement (storage/shapedStatement.ts): column `i`'s value (a lone
 * row's, or every row's as an array) is the call's value in the slot `firstSlot + i`, which
 * `columnValues` (storage/rowsSource.ts) gives.
 */
export const batchInputShapeSql = <Row>(
  columns: readonly InputColumn<Row>[],
  lone: boolean,
  firstSlot: number,
): RawBuilder<unknown> =>
  inputSql(
    columns,
    lone,
    columns.map((_, index) => new Slot(firstSlot + index)),
  )

const inputSql = <Row>(
  columns: readonly InputColumn<Row>[],
  lone: boolean,
  values: readonly unknown[],
): RawBuilder<unknown> => {
  if (lone) {
    return sql`input AS (
      SELECT ${loneRowSql(columns, values)},
        1::bigint AS n
    )`
  }
  return sql`input AS (
      SELECT * FROM unnest(${unnestArraysSql(columns, values)})
        WITH ORDINALITY AS i(${columnNamesSql(columns)}, n)
    )`
}

/** Whether a start records markers (a workflow may declare none). */
export const hasMarkers = (start: BatchedStartFields | undefined): start is BatchedStartFields =>
  start !== undefined && Object.keys(start.markers).length > 0

/** Whether any of the rows' starts carries markers (then `startColumns` has a `markers` column). */
export const startsMarking = <Row>(
  rows: readonly Row[],
  startOf: (row: Row) => BatchedStartFields | undefined,
): boolean => rows.some((row) => hasMarkers(startOf(row)))

/**
 * The columns of the rows that start an execution (`startOf` gives a row's start, undefined for
 * one that does not): the owner's bucket, the execution's columns beyond its owner and id, its
 * markers (a JSON object, only when `marking`: `startsMarking`), and each manifest's text once, on
 * the first row that starts under it (the others name it by hash).
 */
export const startColumns = <
  Row extends { readonly owner: { readonly bucket: number; readonly ownerType: string } },
>(
  rows: readonly Row[],
  startOf: (row: Row) => BatchedStartFields | undefined,
  marking: boolean,
): InputColumn<Row>[] => {
  const firstOfManifest = new Set<Row>()
  const seen = new Set<string>()
  for (const row of rows) {
    const start = startOf(row)
    if (start === undefined) continue
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
        const start = startOf(row)
        return hasMarkers(start) ? JSON.stringify(start.markers) : null
      },
    ])
  }
  return columns
}
