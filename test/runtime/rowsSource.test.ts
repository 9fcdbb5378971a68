/**
 * Rows as a statement's source (storage/rowsSource.ts), on PGlite and on Postgres: a lone row and
 * many rows read back alike, nulls and bytes included; a pass's held rows of one kind become one
 * part where the first was held, its plain parts keeping their order around it; and a source of no
 * rows is refused rather than written as a part that silently writes nothing.
 */
import { randomUUID } from "node:crypto"
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { placeOwner } from "../../runtime/owners/routing.js"
import { composeStatement, part } from "../../runtime/storage/statementParts.js"
import {
  BYTEA,
  heldParts,
  heldRow,
  INT,
  rowsSource,
  TEXT,
  type InputColumn,
  type RowsWrite,
} from "../../runtime/storage/rowsSource.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"

interface Noted {
  readonly label: string
  readonly n: number | null
  readonly bytes: Buffer | null
}

const NOTED_COLUMNS: readonly InputColumn<Noted>[] = [
  ["label", TEXT, (row) => row.label],
  ["n", INT, (row) => row.n],
  ["bytes", BYTEA, (row) => row.bytes],
]

describeEachBackend("rows as a statement's source", (backend) => {
  let akter: TestAkter

  beforeAll(async () => {
    akter = await openTestAkter(backend)
    await sql`CREATE TABLE IF NOT EXISTS rows_noted (
      batch text NOT NULL, label text NOT NULL, n int, bytes bytea, seq serial)`.execute(db())
  })

  afterAll(() => akter?.close())

  const db = () => internalsOf(akter).storage.db
  const clock = () => internalsOf(akter).clock
  const execution = {
    owner: placeOwner({ tenant: "default", ownerType: "Rows", ownerId: "r-1" }),
    executionId: "e-1",
  }

  /** Inserts its rows into `rows_noted` under the execution's id, by one part. */
  const noted: RowsWrite<Noted> = {
    part: (_clock, { executionId }, rows) =>
      part(
        "noted",
        () => sql`INSERT INTO rows_noted (batch, label, n, bytes)
          SELECT ${executionId}::text || ':' || r.label, r.label, r.n, r.bytes
          FROM ${rowsSource(NOTED_COLUMNS, rows, "r")} RETURNING label`,
      ),
  }

  const read = (prefix: string) =>
    sql<{ label: string; n: number | null; bytes: Buffer | null }>`
      SELECT label, n, bytes FROM rows_noted WHERE label LIKE ${`${prefix}%`} ORDER BY seq`.execute(
      db(),
    )

  it("reads a lone row and many rows alike, nulls and bytes included", async () => {
    const tag = randomUUID().slice(0, 8)
    const lone: Noted = { label: `${tag}-lone`, n: 7, bytes: Buffer.from([0, 255]) }
    const many: Noted[] = [
      { label: `${tag}-m1`, n: null, bytes: Buffer.from("x") },
      { label: `${tag}-m2`, n: 2, bytes: null },
    ]
    for (const rows of [[lone], many]) {
      await composeStatement([noted.part(clock(), execution, rows)], sql`true AS done`).execute(
        db(),
      )
    }
    const { rows } = await read(tag)
    expect(rows.map((row) => ({ ...row, bytes: row.bytes && Buffer.from(row.bytes) }))).toEqual(
      [lone, ...many].map(({ label, n, bytes }) => ({ label, n, bytes })),
    )
  })

  it("writes a pass's held rows of one kind as one part, where the first was held", async () => {
    const tag = randomUUID().slice(0, 8)
    const plain = (label: string) =>
      part(
        "plain",
        () => sql`INSERT INTO rows_noted (batch, label) VALUES ('plain', ${label}) RETURNING label`,
      )
    const before = plain(`${tag}-before`)
    const between = plain(`${tag}-between`)
    const parts = heldParts(clock(), execution, [
      before,
      heldRow(noted, { label: `${tag}-r1`, n: 1, bytes: null }),
      between,
      heldRow(noted, { label: `${tag}-r2`, n: 2, bytes: null }),
    ])
    expect(parts.map((p) => p.name.replace(/_\d+$/, ""))).toEqual(["plain", "noted", "plain"])
    expect(parts[0]).toBe(before)
    expect(parts[2]).toBe(between)
    await composeStatement(parts, sql`true AS done`).execute(db())
    const { rows } = await sql<{ batch: string; label: string }>`
      SELECT batch, label FROM rows_noted WHERE label LIKE ${`${tag}%`} ORDER BY label`.execute(
      db(),
    )
    expect(rows).toEqual([
      { batch: "plain", label: `${tag}-before` },
      { batch: "plain", label: `${tag}-between` },
      { batch: `e-1:${tag}-r1`, label: `${tag}-r1` },
      { batch: `e-1:${tag}-r2`, label: `${tag}-r2` },
    ])
  })

  it("refuses a source of no rows", () => {
    expect(() => rowsSource(NOTED_COLUMNS, [], "r")).toThrow(/at least one row/)
  })
})
