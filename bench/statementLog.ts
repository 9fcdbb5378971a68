/**
 * Counts, classifies and times every SQL statement a process sends through node-postgres, by
 * wrapping `Client.prototype.query` before any connection exists. Both sides of the comparison use
 * it the same way (each passes its own copy of `pg`), so akter and its peer are counted by one rule:
 * a statement is one round trip; a commit is a `COMMIT` or a statement run outside a transaction;
 * a write commit is one whose transaction inserted, updated, deleted, locked a row or notified.
 * akter's own `storage.counters` apply the same commit rule, and the akter trial checks the two
 * agree.
 */

export interface KindTally {
  count: number
  /** Summed round-trip time (wall clock, so concurrent statements overlap). */
  ms: number
}

export interface StatementTally {
  statements: number
  commits: number
  writeCommits: number
  /** Summed round-trip time of every statement. */
  ms: number
  readonly byKind: Map<string, KindTally>
}

/** One statement of a trace: when it was sent (ms since the trace began), what, how long. */
export interface TracedStatement {
  readonly at: number
  readonly kind: string
  ms: number
}

export interface StatementLog {
  /** Everything counted since the process started (or since the last `reset`). */
  readonly tally: StatementTally
  /** Records every statement from now on, with its send time, until `stopTrace`. */
  startTrace(): void
  stopTrace(): TracedStatement[]
  /** A copy of the tally now, to subtract later. */
  snapshot(): StatementTally
  reset(): void
}

interface QueryableClass {
  prototype: { query: (...args: unknown[]) => unknown }
}

const emptyTally = (): StatementTally => ({
  statements: 0,
  commits: 0,
  writeCommits: 0,
  ms: 0,
  byKind: new Map(),
})

const copyTally = (tally: StatementTally): StatementTally => ({
  ...tally,
  byKind: new Map([...tally.byKind].map(([kind, { count, ms }]) => [kind, { count, ms }])),
})

/** What `later` counted beyond `earlier`. */
export const tallySince = (later: StatementTally, earlier: StatementTally): StatementTally => {
  const byKind = new Map<string, KindTally>()
  for (const [kind, now] of later.byKind) {
    const before = earlier.byKind.get(kind) ?? { count: 0, ms: 0 }
    if (now.count > before.count) {
      byKind.set(kind, { count: now.count - before.count, ms: now.ms - before.ms })
    }
  }
  return {
    statements: later.statements - earlier.statements,
    commits: later.commits - earlier.commits,
    writeCommits: later.writeCommits - earlier.writeCommits,
    ms: later.ms - earlier.ms,
    byKind,
  }
}

const identifier = String.raw`("?[a-z_][a-z0-9_]*"?(?:\."?[a-z_][a-z0-9_]*"?)?)`

/**
 * A short name for a statement: its verb and main table, e.g. `INSERT akter.steps`,
 * `UPDATE akter.steps SET exit`, `SELECT akter.owners FOR UPDATE`, `WITH→INSERT akter.steps`.
 */
export const statementKind = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim().toLowerCase()
  const bare = (name: string) => name.replaceAll('"', "")
  const verb = flat.split(" ", 1)[0] ?? ""
  if (verb === "begin" || verb === "commit" || verb === "rollback" || verb === "listen") {
    return verb.toUpperCase()
  }
  const locks = /\bfor (no key )?update\b/.test(flat) ? " FOR UPDATE" : ""
  const dml = (from: string): string | undefined => {
    const insert = new RegExp(String.raw`^insert into ${identifier}`).exec(from)
    if (insert !== null) return `INSERT ${bare(insert[1]!)}`
    const update = new RegExp(String.raw`^update ${identifier}(?: as \w+| \w+)? set "?(\w+)`).exec(
      from,
    )
    if (update !== null) return `UPDATE ${bare(update[1]!)} SET ${update[2]}`
    const remove = new RegExp(String.raw`^delete from ${identifier}`).exec(from)
    if (remove !== null) return `DELETE ${bare(remove[1]!)}`
    return undefined
  }
  if (verb === "with") {
    const inner = /\(\s*(insert into .*|update .*|delete from .*)/.exec(flat)?.[1]
    const main = /\)\s*(insert into .*|update .*|delete from .*)$/.exec(flat)?.[1]
    const found = (main !== undefined ? dml(main) : undefined) ?? (inner ? dml(inner) : undefined)
    if (found !== undefined) return `WITH→${found}${locks}`
  }
  const direct = dml(flat)
  if (direct !== undefined) return direct + (verb === "update" ? "" : locks)
  if (verb === "select" || verb === "with") {
    const fn = /^select (?:\* from )?"?([a-z_]+\.)?(pg_notify|[a-z_]+)\(/.exec(flat)
    const from = new RegExp(String.raw`\bfrom ${identifier}`).exec(flat)
    if (from !== null) return `SELECT ${bare(from[1]!)}${locks}`
    if (fn !== null) return `SELECT ${fn[1] ?? ""}${fn[2]}()`
    return "SELECT (no table)"
  }
  return verb.toUpperCase()
}

const isWrite = (kind: string) =>
  /^(WITH→)?(INSERT|UPDATE|DELETE)/.test(kind) ||
  kind.endsWith("FOR UPDATE") ||
  kind.includes("pg_notify")

/**
 * Wraps `Client.prototype.query` of the given node-postgres module. Call once, before the first
 * connection is made.
 *
 * @example
 * const log = logStatements(pg.Client)
 * // … run work …
 * console.log(log.tally.statements, log.tally.commits)
 */
export const logStatements = (client: QueryableClass): StatementLog => {
  let tally = emptyTally()
  let trace: { readonly startedAt: number; readonly entries: TracedStatement[] } | undefined
  const transactions = new WeakMap<object, { open: boolean; wrote: boolean }>()
  // Statement texts repeat (query builders emit the same text each time): classify each once.
  const kinds = new Map<string, string>()
  const original = client.prototype.query
  client.prototype.query = function (this: object, ...args: unknown[]) {
    const first = args[0]
    const text = typeof first === "string" ? first : (first as { text?: unknown } | null)?.text
    if (typeof text !== "string") return original.apply(this, args)
    let kind = kinds.get(text)
    if (kind === undefined) {
      kind = statementKind(text)
      if (kinds.size < 10_000) kinds.set(text, kind)
    }
    let state = transactions.get(this)
    if (state === undefined) {
      state = { open: false, wrote: false }
      transactions.set(this, state)
    }
    const counted = tally
    counted.statements += 1
    if (kind === "BEGIN") {
      state.open = true
      state.wrote = false
    } else if (kind === "COMMIT") {
      counted.commits += 1
      if (state.wrote) counted.writeCommits += 1
      state.open = false
    } else if (kind === "ROLLBACK") {
      state.open = false
    } else if (state.open) {
      if (isWrite(kind)) state.wrote = true
    } else {
      counted.commits += 1
      if (isWrite(kind)) counted.writeCommits += 1
    }
    const startedAt = performance.now()
    const traced: TracedStatement | undefined =
      trace === undefined ? undefined : { at: startedAt - trace.startedAt, kind, ms: Number.NaN }
    if (traced !== undefined) trace!.entries.push(traced)
    const record = () => {
      const ms = performance.now() - startedAt
      if (traced !== undefined) traced.ms = ms
      counted.ms += ms
      const byKind = counted.byKind.get(kind)
      if (byKind === undefined) counted.byKind.set(kind, { count: 1, ms })
      else {
        byKind.count += 1
        byKind.ms += ms
      }
    }
    const last = args.at(-1)
    if (typeof last === "function") {
      args[args.length - 1] = (...results: unknown[]) => {
        record()
        return (last as (...results: unknown[]) => unknown)(...results)
      }
      return original.apply(this, args)
    }
    const returned = original.apply(this, args)
    if (returned instanceof Promise) returned.then(record, record)
    else record()
    return returned
  }
  return {
    get tally() {
      return tally
    },
    snapshot: () => copyTally(tally),
    startTrace: () => {
      trace = { startedAt: performance.now(), entries: [] }
    },
    stopTrace: () => {
      const entries = trace?.entries ?? []
      trace = undefined
      return entries
    },
    reset: () => {
      tally = emptyTally()
    },
  }
}

/** A tally as plain JSON (kinds sorted by count), for a trial's result. */
export interface StatementSummary {
  readonly statements: number
  readonly commits: number
  readonly writeCommits: number
  readonly ms: number
  readonly byKind: ReadonlyArray<{
    readonly kind: string
    readonly count: number
    readonly ms: number
  }>
}

export const summarize = (tally: StatementTally): StatementSummary => ({
  statements: tally.statements,
  commits: tally.commits,
  writeCommits: tally.writeCommits,
  ms: tally.ms,
  byKind: [...tally.byKind]
    .map(([kind, { count, ms }]) => ({ kind, count, ms }))
    .sort((a, b) => b.count - a.count || a.kind.localeCompare(b.kind)),
})
