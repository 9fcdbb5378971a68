/**
 * Statements composed and compiled once per shape. A hot statement (the runner's step batch) has
 * a few shapes — which parts it carries — and its text depends only on the shape; composing it
 * from Kysely's `sql` templates and compiling that on every call cost the runner more Node CPU
 * than the statement's own round trip. Here a shape is composed once with a `Slot` in place of
 * every value a call brings, compiled, and each call runs that text with its own values in the
 * slots' places.
 *
 * The other parameters of a shape are kept as compiled: the constants of its parts' SQL (a
 * channel's name, a size limit). A part therefore takes nothing per call but through a slot —
 * the clock's offset included (`slotClock`) — and compiling refuses a parameter that is neither a
 * slot nor a string, number, boolean or null, so a row's buffer or array cannot be captured.
 */
import { CompiledQuery, type QueryResult, type RawBuilder } from "kysely"
import type { DatabaseClock } from "./clock.js"
import type { Queryable } from "./database.js"

/** Where a call's value goes: `values[index]` of `ShapedStatements.execute`. */
export class Slot {
  constructor(readonly index: number) {}
}

/** A parameter of a compiled shape: the call's value of a slot, or a constant of the text. */
type Parameter = { readonly slot: number } | { readonly constant: unknown }

interface CompiledShape {
  readonly text: string
  readonly parameters: readonly Parameter[]
}

const isConstant = (value: unknown) =>
  value === null || ["string", "number", "boolean"].includes(typeof value)

/**
 * A clock for composing: its offset is the slot `index`, so a shape's statements read the
 * database's clock with the offset of each call's clock (tests move it), not the first call's.
 */
export const slotClock = (index: number): DatabaseClock => ({
  // Kysely takes any value as a parameter: the slot stands where the offset's number goes.
  offsetMs: new Slot(index) as unknown as number,
  skewMs: 0,
  skewErrorMs: 0,
})

/**
 * A statement's shapes, by key. `compose` gets the key alone and puts `new Slot(i)` where the
 * call's `values[i]` goes; the key must name everything else the text depends on.
 */
export class ShapedStatements<Key extends string | number, Row> {
  private readonly shapes = new Map<Key, CompiledShape>()

  constructor(
    private readonly name: string,
    private readonly compose: (key: Key) => RawBuilder<Row>,
  ) {}

  private compiled(db: Queryable, key: Key): CompiledShape {
    const known = this.shapes.get(key)
    if (known !== undefined) return known
    const query = this.compose(key).compile(db)
    const parameters = query.parameters.map((parameter, position): Parameter => {
      if (parameter instanceof Slot) return { slot: parameter.index }
      if (isConstant(parameter)) return { constant: parameter }
      throw new Error(
        `${this.name} (shape ${String(key)}): parameter $${position + 1} is a value captured while composing, not a slot`,
      )
    })
    const shape = { text: query.sql, parameters }
    this.shapes.set(key, shape)
    return shape
  }

  /** Runs the shape of `key` with `values` in its slots. */
  async execute(db: Queryable, key: Key, values: readonly unknown[]): Promise<QueryResult<Row>> {
    const { text, parameters } = this.compiled(db, key)
    const bound = parameters.map((parameter) =>
      "slot" in parameter ? values[parameter.slot] : parameter.constant,
    )
    return db.executeQuery(CompiledQuery.raw(text, bound) as CompiledQuery<Row>)
  }
}
