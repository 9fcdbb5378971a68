/**
 * Whether a SQL statement, as it was sent with its parameter values, reaches the rows of one owner
 * only: the question a Postgres sharded by `routing_key` (Citus, its owner tables distributed and
 * co-located on that column) asks to route a statement to one shard. The statement is parsed by
 * Postgres' own parser (libpg-query), and every reference to an owner table — in any CTE, subquery,
 * join, or as the target of an INSERT, UPDATE or DELETE — must have its `routing_key` pinned to one
 * value: by an equality with a parameter or a constant in its WHERE or JOIN conditions (top-level
 * AND terms only), by an equality with the `routing_key` of a reference already pinned, or by a CTE
 * or subquery column that is itself one pinned value; an INSERT's routing key is the value it
 * inserts. Then every pinned value must be the same, compared on the values actually sent: a
 * statement with `$1` and `$7` routes only if both carried the same key. Anything else — a set of
 * keys (`= ANY`, `unnest`), an OR, a column of a relation that spans owners, an expression the
 * audit does not follow — leaves the reference unpinned, so the audit errs towards refusing.
 *
 * A final cross-check counts the owner-table references a blind walk of the whole tree finds; a
 * statement in which the analysis saw fewer is reported as not understood rather than passed.
 */
import { loadModule, parseSync } from "libpg-query"

/** Tables whose rows belong to one owner each and lead with its routing key (migrations/0001). */
export const OWNER_TABLES: ReadonlySet<string> = new Set([
  "owners",
  "events",
  "executions",
  "steps",
  "outbox",
  "receipts",
])

// The parse tree is JSON (libpg-query's protobuf mapping); walked untyped.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Node = any

/** Where a value comes from: one parameter, one constant, or something that is not one value. */
type Source =
  | { readonly kind: "param"; readonly number: number }
  | { readonly kind: "const"; readonly value: string }
  | { readonly kind: "many"; readonly why: string }

const many = (why: string): Source => ({ kind: "many", why })
const isOne = (source: Source) => source.kind !== "many"
const sameSource = (a: Source, b: Source) =>
  (a.kind === "param" && b.kind === "param" && a.number === b.number) ||
  (a.kind === "const" && b.kind === "const" && a.value === b.value)

/** A relation a query reads: an owner table, a CTE, a subquery, a function, another table. */
interface Relation {
  readonly alias: string
  /** The owner table's name; undefined for anything else. */
  readonly ownerTable?: string | undefined
  /** Owner tables: the routing key's source once pinned. */
  source?: Source
  /** CTEs and subqueries: each output column's source. Functions: every column is many. */
  readonly columns?: ReadonlyMap<string, Source> | "all-many" | undefined
  /** Whether it has a column of this name (reference tables: no routing_key). */
  readonly hasColumn: (name: string) => boolean
}

interface Scope {
  readonly parent: Scope | undefined
  readonly relations: Relation[]
  readonly ctes: Map<string, ReadonlyMap<string, Source>>
}

/** One owner-table reference and the routing key it ended with. */
export interface OwnerReference {
  readonly table: string
  readonly alias: string
  readonly source: Source
}

export interface Verdict {
  /** The statement reaches one owner's rows, or no owner table at all. */
  readonly routable: boolean
  /** Owner-table references found, each with its routing key's source. */
  readonly references: readonly OwnerReference[]
  /** Why it is not routable (empty when it is). */
  readonly problems: readonly string[]
}

const ownerTableOf = (rangeVar: Node): string | undefined =>
  rangeVar.schemaname === "akter" && OWNER_TABLES.has(rangeVar.relname)
    ? (rangeVar.relname as string)
    : undefined

/** The strings of a ColumnRef, e.g. `["s", "routing_key"]`; undefined for `*`. */
const columnPath = (node: Node): string[] | undefined => {
  const fields: Node[] | undefined = node?.ColumnRef?.fields
  if (fields === undefined) return undefined
  const names = fields.map((f) => f.String?.sval as string | undefined)
  return names.every((n) => n !== undefined) ? (names as string[]) : undefined
}

const constantOf = (node: Node): string | undefined => {
  const c = node.A_Const
  if (c === undefined || c.isnull === true) return undefined
  const value = c.ival?.ival ?? c.fval?.fval ?? c.sval?.sval ?? c.ival
  return value === undefined ? undefined : JSON.stringify(value)
}

/** Every node of the tree, depth first, with no regard for scopes. */
const everyNode = function* (node: Node): Generator<Node> {
  if (node === null || typeof node !== "object") return
  yield node
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) for (const item of value) yield* everyNode(item)
    else yield* everyNode(value)
  }
}

const countOwnerReferences = (node: Node): number => {
  let count = 0
  for (const n of everyNode(node)) {
    if (n.RangeVar !== undefined && ownerTableOf(n.RangeVar) !== undefined) count += 1
    // INSERT/UPDATE/DELETE name their target as a bare RangeVar object under `relation`.
    for (const key of ["InsertStmt", "UpdateStmt", "DeleteStmt"]) {
      const target = n[key]?.relation
      if (target !== undefined && ownerTableOf(target) !== undefined) count += 1
    }
  }
  return count
}

/** The AND terms of a condition (an OR, a NOT or anything else is one opaque term). */
const conjuncts = (node: Node): Node[] =>
  node === undefined || node === null
    ? []
    : node.BoolExpr?.boolop === "AND_EXPR"
      ? (node.BoolExpr.args as Node[]).flatMap(conjuncts)
      : [node]

/** A condition's AND term, and the relations it may pin (undefined: any of its scope). */
interface Term {
  readonly node: Node
  readonly pins?: ReadonlySet<Relation> | undefined
}
const term = (node: Node): Term => ({ node })

/** A scope that shows a subquery its enclosing query's CTEs, and none of its relations. */
const ctesOnly = (scope: Scope): Scope => ({
  parent: scope.parent,
  relations: [],
  ctes: scope.ctes,
})

class Analysis {
  readonly references: { relation: Relation; table: string }[] = []
  private readonly walked = new WeakSet<object>()

  /** Analyses a SELECT, INSERT, UPDATE or DELETE; returns its output columns' sources. */
  statement(node: Node, parent: Scope | undefined): Map<string, Source> {
    if (node.SelectStmt !== undefined) return this.select(node.SelectStmt, parent)
    if (node.InsertStmt !== undefined) return this.insert(node.InsertStmt, parent)
    if (node.UpdateStmt !== undefined) return this.update(node.UpdateStmt, parent)
    if (node.DeleteStmt !== undefined) return this.delete(node.DeleteStmt, parent)
    return new Map()
  }

  private newScope(parent: Scope | undefined, withClause: Node): Scope {
    const scope: Scope = { parent, relations: [], ctes: new Map() }
    for (const cte of (withClause?.ctes ?? []) as Node[]) {
      const { ctename, ctequery, aliascolnames } = cte.CommonTableExpr
      const columns = this.statement(ctequery, scope)
      const renamed = (aliascolnames ?? []) as Node[]
      const named = new Map(columns)
      if (renamed.length > 0) {
        const sources = [...columns.values()]
        named.clear()
        renamed.forEach((n, i) => named.set(n.String.sval, sources[i] ?? many("no such column")))
      }
      scope.ctes.set(ctename, named)
    }
    return scope
  }

  private cteOf(scope: Scope | undefined, name: string): ReadonlyMap<string, Source> | undefined {
    for (let s = scope; s !== undefined; s = s.parent) {
      const found = s.ctes.get(name)
      if (found !== undefined) return found
    }
    return undefined
  }

  /** Adds the relations of a FROM item, and the terms of its JOIN conditions to `terms`. */
  private fromItem(item: Node, scope: Scope, terms: Term[]): void {
    if (item.RangeVar !== undefined) scope.relations.push(this.rangeVar(item.RangeVar, scope))
    else if (item.JoinExpr !== undefined) {
      const join = item.JoinExpr
      this.fromItem(join.larg, scope, terms)
      const before = scope.relations.length
      this.fromItem(join.rarg, scope, terms)
      // An inner join's condition filters both sides; a LEFT JOIN's filters only its right side
      // (every left row stays), so it may pin only relations of that side. Other joins pin none.
      if (join.jointype === "JOIN_INNER") terms.push(...conjuncts(join.quals).map(term))
      if (join.jointype === "JOIN_LEFT") {
        const right = new Set(scope.relations.slice(before))
        terms.push(...conjuncts(join.quals).map((t) => ({ node: t, pins: right })))
      }
      this.subLinks(join.quals, scope)
    } else if (item.RangeSubselect !== undefined) {
      const { subquery, alias, lateral } = item.RangeSubselect
      // Not LATERAL: it cannot see this FROM's relations, but it sees this query's CTEs.
      const columns = this.statement(subquery, lateral === true ? scope : ctesOnly(scope))
      scope.relations.push({
        alias: alias?.aliasname ?? "",
        columns,
        hasColumn: (name) => columns.has(name),
      })
    } else if (item.RangeFunction !== undefined) {
      const alias = item.RangeFunction.alias
      const names = ((alias?.colnames ?? []) as Node[]).map((n) => n.String.sval as string)
      for (const fn of item.RangeFunction.functions ?? []) this.subLinks(fn, scope)
      scope.relations.push({
        alias: alias?.aliasname ?? "",
        columns: "all-many",
        hasColumn: (name) => names.length === 0 || names.includes(name),
      })
    } else {
      scope.relations.push({ alias: "", columns: "all-many", hasColumn: () => true })
    }
  }

  private rangeVar(rangeVar: Node, scope: Scope): Relation {
    const alias: string = rangeVar.alias?.aliasname ?? rangeVar.relname
    const ownerTable = ownerTableOf(rangeVar)
    if (ownerTable !== undefined) {
      const relation: Relation = {
        alias,
        ownerTable,
        source: many("no routing_key = <one value> constrains it"),
        hasColumn: () => true,
      }
      this.references.push({ relation, table: ownerTable })
      return relation
    }
    const cte = rangeVar.schemaname === undefined ? this.cteOf(scope, rangeVar.relname) : undefined
    if (cte !== undefined) return { alias, columns: cte, hasColumn: (name) => cte.has(name) }
    // A reference table (manifests, runners, leases, schedules, migrations): no routing key.
    return { alias, hasColumn: (name) => name !== "routing_key" }
  }

  /** The relation a column reference names, searching outwards. */
  private relationOf(path: string[], scope: Scope): Relation | undefined {
    const column = path[path.length - 1]!
    const qualifier = path.length >= 2 ? path[path.length - 2] : undefined
    for (let s: Scope | undefined = scope; s !== undefined; s = s.parent) {
      const candidates = s.relations.filter((r) =>
        qualifier === undefined ? r.hasColumn(column) : r.alias === qualifier,
      )
      if (candidates.length === 1) return candidates[0]
      if (candidates.length > 1) return undefined
    }
    return undefined
  }

  /** The source of a value expression in a scope. */
  private sourceOf(expr: Node, scope: Scope): Source {
    if (expr === undefined || expr === null) return many("no value")
    if (expr.ParamRef !== undefined) return { kind: "param", number: expr.ParamRef.number }
    if (expr.TypeCast !== undefined) return this.sourceOf(expr.TypeCast.arg, scope)
    const constant = expr.A_Const === undefined ? undefined : constantOf(expr)
    if (constant !== undefined) return { kind: "const", value: constant }
    const path = columnPath(expr)
    if (path !== undefined) {
      const relation = this.relationOf(path, scope)
      if (relation === undefined) return many(`${path.join(".")} names no one relation`)
      const column = path[path.length - 1]!
      if (relation.ownerTable !== undefined) {
        return column === "routing_key" ? relation.source! : many(`${path.join(".")}`)
      }
      if (relation.columns === "all-many") return many(`${path.join(".")} is a set of rows`)
      return relation.columns?.get(column) ?? many(`${path.join(".")} is not one value`)
    }
    return many("an expression the audit does not follow")
  }

  /** Pins owner references through equality terms until nothing changes. */
  private pin(terms: Term[], scope: Scope): void {
    const pairs: [Node, Node, Term["pins"]][] = []
    for (const { node, pins } of terms) {
      const op = node.A_Expr
      if (op?.kind === "AEXPR_OP" && op.name?.length === 1 && op.name[0].String?.sval === "=") {
        const [l, r] = [op.lexpr, op.rexpr]
        if (l.RowExpr !== undefined && r.RowExpr !== undefined) {
          ;(l.RowExpr.args as Node[]).forEach((a, i) => pairs.push([a, r.RowExpr.args[i], pins]))
        } else pairs.push([l, r, pins])
      }
    }
    for (let changed = true; changed;) {
      changed = false
      for (const [l, r, pins] of pairs) {
        for (const [column, value] of [
          [l, r],
          [r, l],
        ] as const) {
          const path = columnPath(column)
          if (path === undefined || path[path.length - 1] !== "routing_key") continue
          const relation = this.relationOf(path, scope)
          if (relation?.ownerTable === undefined || isOne(relation.source!)) continue
          if (pins !== undefined && !pins.has(relation)) continue
          const source = this.sourceOf(value, scope)
          if (isOne(source)) {
            relation.source = source
            changed = true
          }
        }
      }
    }
  }

  /** Analyses the subqueries (EXISTS, IN, scalar) inside an expression, as child scopes. */
  private subLinks(expr: Node, scope: Scope): void {
    if (expr === undefined || expr === null || typeof expr !== "object") return
    if (this.walked.has(expr)) return
    this.walked.add(expr)
    if (expr.SubLink !== undefined) {
      this.subLinks(expr.SubLink.testexpr, scope)
      this.statement(expr.SubLink.subselect, scope)
      return
    }
    for (const value of Object.values(expr)) {
      if (Array.isArray(value)) for (const item of value) this.subLinks(item, scope)
      else this.subLinks(value, scope)
    }
  }

  /** Output columns of a target list: each named column's source. */
  private outputs(targetList: Node[] | undefined, scope: Scope): Map<string, Source> {
    const columns = new Map<string, Source>()
    ;(targetList ?? []).forEach((target, i) => {
      const { name, val } = target.ResTarget
      const path = columnPath(val)
      // An unnamed output keeps its position (an INSERT … SELECT reads columns by position).
      const output = name ?? path?.[path.length - 1] ?? `?column${i + 1}?`
      columns.set(columns.has(output) ? `?column${i + 1}?` : output, this.sourceOf(val, scope))
    })
    return columns
  }

  private select(select: Node, parent: Scope | undefined): Map<string, Source> {
    if (select.op !== undefined && select.op !== "SETOP_NONE") {
      const scope = this.newScope(parent, select.withClause)
      const left = this.select(select.larg, scope)
      const right = this.select(select.rarg, scope)
      const names = [...left.keys()]
      const rightSources = [...right.values()]
      return new Map(
        names.map((name, i) => {
          const a = left.get(name)!
          const b = rightSources[i] ?? many("no such column")
          return [name, isOne(a) && sameSource(a, b) ? a : many("arms of a set operation differ")]
        }),
      )
    }
    const scope = this.newScope(parent, select.withClause)
    if (select.valuesLists !== undefined) {
      const rows = (select.valuesLists as Node[]).map((row) =>
        (row.List.items as Node[]).map((v) => this.sourceOf(v, scope)),
      )
      for (const row of select.valuesLists) this.subLinks(row, scope)
      const width = rows[0]?.length ?? 0
      return new Map(
        Array.from({ length: width }, (_, i) => {
          const first = rows[0]![i]!
          const same = rows.every((row) => sameSource(row[i]!, first))
          return [`column${i + 1}`, same ? first : many("rows of a VALUES list differ")]
        }),
      )
    }
    const terms: Term[] = []
    for (const item of select.fromClause ?? []) this.fromItem(item, scope, terms)
    terms.push(...conjuncts(select.whereClause).map(term))
    this.pin(terms, scope)
    this.subLinks(select.whereClause, scope)
    this.subLinks(select.targetList, scope)
    this.subLinks(select.havingClause, scope)
    this.subLinks(select.sortClause, scope)
    return this.outputs(select.targetList, scope)
  }

  private insert(insert: Node, parent: Scope | undefined): Map<string, Source> {
    const scope = this.newScope(parent, insert.withClause)
    const columns = ((insert.cols ?? []) as Node[]).map((c) => c.ResTarget.name as string)
    const rows =
      insert.selectStmt === undefined ? new Map() : this.statement(insert.selectStmt, scope)
    const target = this.rangeVar(insert.relation, scope)
    const index = columns.indexOf("routing_key")
    if (target.ownerTable !== undefined) {
      const inserted = index < 0 ? undefined : [...rows.values()][index]
      target.source = inserted ?? many("the insert names no routing_key column")
    }
    scope.relations.push(target)
    // ON CONFLICT … DO UPDATE and RETURNING read the target row (and EXCLUDED, the same row).
    this.subLinks(insert.onConflictClause, scope)
    this.subLinks(insert.returningList, scope)
    return this.outputs(insert.returningList, scope)
  }

  private update(update: Node, parent: Scope | undefined): Map<string, Source> {
    const scope = this.newScope(parent, update.withClause)
    scope.relations.push(this.rangeVar(update.relation, scope))
    const terms: Term[] = []
    for (const item of update.fromClause ?? []) this.fromItem(item, scope, terms)
    terms.push(...conjuncts(update.whereClause).map(term))
    this.pin(terms, scope)
    this.subLinks(update.whereClause, scope)
    this.subLinks(update.targetList, scope)
    this.subLinks(update.returningList, scope)
    return this.outputs(update.returningList, scope)
  }

  private delete(del: Node, parent: Scope | undefined): Map<string, Source> {
    const scope = this.newScope(parent, del.withClause)
    scope.relations.push(this.rangeVar(del.relation, scope))
    const terms: Term[] = []
    for (const item of del.usingClause ?? []) this.fromItem(item, scope, terms)
    terms.push(...conjuncts(del.whereClause).map(term))
    this.pin(terms, scope)
    this.subLinks(del.whereClause, scope)
    this.subLinks(del.returningList, scope)
    return this.outputs(del.returningList, scope)
  }
}

/** Loads the parser (WebAssembly); call once before `auditStatement`. */
export const loadSqlParser = (): Promise<void> => loadModule()

const DATA_STATEMENTS = new Set(["SelectStmt", "InsertStmt", "UpdateStmt", "DeleteStmt"])

/** A routing key as sent (a decimal string, a number or a bigint), compared as an integer. */
const keyOf = (value: unknown): string => {
  try {
    return BigInt(value as string).toString()
  } catch {
    return JSON.stringify(value)
  }
}

/**
 * Judges one statement as sent: its text and its parameter values (`$1` is `values[0]`). DDL and
 * utility statements (migrations' CREATE and ALTER, GRANT, BEGIN) are not judged; the data
 * statements of a multi-statement text each are.
 */
export const auditStatement = (text: string, values: readonly unknown[] = []): Verdict => {
  const parsed = parseSync(text)
  const references: OwnerReference[] = []
  const problems: string[] = []
  for (const { stmt } of parsed.stmts as Node[]) {
    const kind = Object.keys(stmt)[0]!
    if (!DATA_STATEMENTS.has(kind)) continue
    const analysis = new Analysis()
    analysis.statement(stmt, undefined)
    const found = countOwnerReferences(stmt)
    if (analysis.references.length !== found) {
      problems.push(
        `the audit followed ${analysis.references.length} of ${found} owner-table references`,
      )
    }
    for (const { relation, table } of analysis.references) {
      references.push({ table, alias: relation.alias, source: relation.source! })
    }
  }
  for (const r of references) {
    if (r.source.kind === "many") problems.push(`akter.${r.table} ${r.alias}: ${r.source.why}`)
  }
  const keys = new Set(
    references.flatMap(({ source }) =>
      source.kind === "param"
        ? [keyOf(values[source.number - 1])]
        : source.kind === "const"
          ? [keyOf(JSON.parse(source.value))]
          : [],
    ),
  )
  if (keys.size > 1) problems.push(`routing keys differ: ${[...keys].join(", ")}`)
  return { routable: problems.length === 0, references, problems }
}
