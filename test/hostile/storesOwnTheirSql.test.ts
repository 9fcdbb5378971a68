/**
 * Each store owns every statement of its table, and the engine's guarantees are each written once.
 * The scan parses every source file with the TypeScript compiler and reads its SQL — `sql` tagged
 * templates (with their substitutions) and kysely's `selectFrom`/`insertInto`/`updateTable`/
 * `deleteFrom` calls — and fails when:
 *
 * - the fence predicate (a reference to the statement's `fence` part) is written anywhere but
 *   owners/fence.ts, or built there more than once;
 * - `pg_notify` is written more than once (outbox/notifications.ts);
 * - the settle statement (`UPDATE akter.steps … SET exit = …`) is written more than once;
 * - a module outside a table's store writes that table, or reads it without being listed below as
 *   a reader with its reason;
 * - a schema statement (DDL: `ALTER`, `CREATE`, `DROP`, `GRANT`, `REVOKE`) names a table outside
 *   the schema's modules, or a schema module issues a row statement against a table.
 *
 * A table's rows belong to its store; its shape and access rules belong to the schema: the
 * migrations (SQL files the migrator applies) and tenant isolation's policies and grants, which
 * must stay one transaction over every table (no moment where a role holds a grant on a table whose
 * policy is not yet in place), so they are not split among the stores.
 *
 * Every listed reader must still match real code, so a stale entry fails too.
 */
import { readdirSync, readFileSync, existsSync } from "node:fs"
import { join, relative } from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const REPO = new URL("../../", import.meta.url).pathname

/** The one module that writes each table. */
const STORES: Readonly<Record<string, string>> = {
  owners: "runtime/owners/fence.ts",
  events: "runtime/events/eventLog.ts",
  executions: "runtime/engine/executionStore.ts",
  steps: "runtime/engine/stepStore.ts",
  outbox: "runtime/outbox/outboxStore.ts",
  manifests: "runtime/storage/manifestStore.ts",
  receipts: "runtime/client/receiptStore.ts",
  runners: "runtime/runner/leaseStore.ts",
  leases: "runtime/runner/leaseStore.ts",
  schedules: "runtime/schedules/scheduleStore.ts",
  migrations: "runtime/storage/migrator.ts",
}

/** The schema's modules: the only ones that issue DDL naming akter's tables, and no row statement. */
const SCHEMA_MODULES: readonly { file: string; reason: string }[] = [
  { file: "runtime/storage/migrator.ts", reason: "creates the schema and its migrations table" },
  {
    file: "runtime/storage/tenantIsolation.ts",
    reason: "row-level-security policies and grants on every tenant table, in one transaction",
  },
]

/** Modules that read tables they do not own, with why. */
const READERS: readonly { file: string; reason: string }[] = [
  {
    file: "runtime/engine/executionStore.ts",
    reason:
      "a pass's snapshot reads the execution with its timer's pokes (outbox) in one snapshot, and its steps through stepStore",
  },
  {
    file: "runtime/engine/stepStore.ts",
    reason:
      "a suspend's check for unseen events (events) and an emit's search for open waits (executions) are parts of the steps' statements",
  },
  {
    file: "runtime/events/eventLog.ts",
    reason:
      "retention keeps the events an open execution (executions) or a pending wait (steps) may still read",
  },
  {
    file: "runtime/storage/manifestStore.ts",
    reason: "retention keeps the manifests an open execution (executions) started under",
  },
  {
    file: "runtime/inspect/executionQueries.ts",
    reason: "the inspection read model: read-only joins across the execution's tables",
  },
  {
    file: "runtime/runner/startupCheck.ts",
    reason: "the startup compatibility check reads open executions, their steps and manifests",
  },
  {
    file: "runtime/testing/index.ts",
    reason: "the test helper's idle probe reads whether anything is due or running",
  },
  { file: "studio/studioQueries.ts", reason: "the studio's read model (read-only)" },
  { file: "studio/studioHandler.ts", reason: "the studio reads a stored manifest to show it" },
  {
    file: "cli/studio.ts",
    reason: "the studio command checks that migrations were applied before serving",
  },
]

interface Sql {
  readonly file: string
  readonly line: number
  /** The template's text with each substitution's source in `${…}`. */
  readonly text: string
  /** Tables whose rows it writes (INSERT/UPDATE/DELETE/LOCK) and reads. */
  readonly writes: readonly string[]
  readonly reads: readonly string[]
  /** Tables a schema statement (DDL) names: their shape or access rules, not their rows. */
  readonly schema: readonly string[]
}

const TABLE = String.raw`akter\.(owners|events|executions|steps|outbox|manifests|receipts|runners|leases|migrations)\b`
const WRITE = new RegExp(
  String.raw`(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|LOCK\s+TABLE)\s+${TABLE}`,
  "g",
)
const ANY = new RegExp(TABLE, "g")
const DDL = /^\s*(ALTER|CREATE|DROP|GRANT|REVOKE|COMMENT)\b/i

const tablesIn = (text: string) => {
  const named = [...new Set([...text.matchAll(ANY)].map((m) => m[1]!))]
  // A schema statement may hold a query (a policy's USING clause): it names tables, and touches
  // no row when it runs.
  if (DDL.test(text)) return { writes: [], reads: [], schema: named }
  const writes = new Set([...text.matchAll(WRITE)].map((m) => m[1]!))
  return { writes: [...writes], reads: named.filter((t) => !writes.has(t)), schema: [] }
}

const KYSELY_WRITES = /^(insertInto|updateTable|deleteFrom)$/

/** Every statement text a file holds. */
export const sqlIn = (file: string, source: string): Sql[] => {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true)
  const found: Sql[] = []
  const lineOf = (node: ts.Node) => tree.getLineAndCharacterOfPosition(node.getStart()).line + 1
  const visit = (node: ts.Node) => {
    if (ts.isTaggedTemplateExpression(node) && /^sql(<.*>)?$/s.test(node.tag.getText())) {
      const template = node.template
      const text = ts.isNoSubstitutionTemplateLiteral(template)
        ? template.text
        : [
            template.head.text,
            ...template.templateSpans.map(
              (span) => `\${${span.expression.getText()}}${span.literal.text}`,
            ),
          ].join("")
      found.push({ file, line: lineOf(node), text, ...tablesIn(text) })
    }
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      /^(selectFrom|insertInto|updateTable|deleteFrom)$/.test(node.expression.name.text)
    ) {
      const first = node.arguments[0]
      const table =
        first !== undefined && ts.isStringLiteral(first) && first.text.startsWith("akter.")
          ? first.text.slice("akter.".length)
          : undefined
      if (table !== undefined) {
        const write = KYSELY_WRITES.test(node.expression.name.text)
        found.push({
          file,
          line: lineOf(node),
          text: node.getText(),
          writes: write ? [table] : [],
          reads: write ? [] : [table],
          schema: [],
        })
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(tree)
  return found
}

const sourceFiles = (folder: string): string[] =>
  existsSync(join(REPO, folder))
    ? readdirSync(join(REPO, folder), { withFileTypes: true, recursive: true })
        .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
        .map((entry) => relative(REPO, join(entry.parentPath, entry.name)))
    : []

const files = ["runtime", "codegen", "cli", "studio"].flatMap(sourceFiles).sort()
const statements = files.flatMap((file) => sqlIn(file, readFileSync(join(REPO, file), "utf8")))
const where = (s: Sql) => `${s.file}:${s.line}`

describe("stores own their SQL", () => {
  it("reads the SQL of the stores", () => {
    expect(statements.length).toBeGreaterThan(100)
    expect(statements.filter((s) => s.writes.includes("steps")).length).toBeGreaterThan(5)
  })

  it("writes the fence predicate once, in owners/fence.ts", () => {
    const fenceReferences = statements.filter(
      (s) => /\bfence\b/.test(s.text) || /\bFENCE\b/.test(s.text),
    )
    expect(fenceReferences.filter((s) => s.file !== STORES["owners"]).map(where)).toEqual([])
    const fence = readFileSync(join(REPO, STORES["owners"]!), "utf8")
    expect(fence.match(/existsIn\(FENCE\)/g)?.length).toBe(1)
    // Nothing else names the fence part: every fenced part carries `fenceHeld`.
    const named = files.filter(
      (file) => file !== STORES.owners && /\bFENCE\b/.test(readFileSync(join(REPO, file), "utf8")),
    )
    expect(named).toEqual([])
  })

  it("writes pg_notify once, in outbox/notifications.ts", () => {
    const notifying = statements.filter((s) => s.text.includes("pg_notify("))
    expect(notifying.map(where)).toEqual([
      expect.stringMatching(/^runtime\/outbox\/notifications\.ts:/),
    ])
    // Any other pg_notify in a source text — a string, not a template — is the listed probe.
    const elsewhere = files.filter(
      (file) =>
        file !== "runtime/outbox/notifications.ts" &&
        readFileSync(join(REPO, file), "utf8").includes("pg_notify("),
    )
    expect(elsewhere).toEqual([
      // The listen session's self-addressed probe goes through a bare pg client of its own, the
      // way writers' notifications go; kysely is not on that connection.
      "runtime/storage/openStorage.ts",
    ])
  })

  it("writes the settle statement once, in stepStore.ts", () => {
    const settles = statements.filter((s) =>
      /UPDATE\s+akter\.steps\b[\s\S]*\bSET\s+exit\s*=/.test(s.text),
    )
    expect(settles.map((s) => s.file)).toEqual([STORES["steps"]])
  })

  it("lets only a table's store write it, and only listed readers read it", () => {
    const problems: string[] = []
    for (const s of statements) {
      for (const table of s.writes) {
        if (STORES[table] === s.file) continue
        problems.push(`${where(s)} writes akter.${table} (its store: ${STORES[table]})`)
      }
      for (const table of s.reads) {
        if (STORES[table] === s.file) continue
        if (READERS.some((r) => r.file === s.file)) continue
        problems.push(`${where(s)} reads akter.${table} (its store: ${STORES[table]})`)
      }
    }
    expect(problems).toEqual([])
  })

  it("leaves a table's schema to the schema's modules, and its rows to its store", () => {
    const schemaModule = (file: string) => SCHEMA_MODULES.some((m) => m.file === file)
    const problems = statements.flatMap((s) => [
      ...(s.schema.length > 0 && !schemaModule(s.file)
        ? [`${where(s)} changes the schema of akter.${s.schema.join(", akter.")}`]
        : []),
      ...(schemaModule(s.file) &&
      STORES.migrations !== s.file &&
      s.writes.length + s.reads.length > 0
        ? [
            `${where(s)} is a schema module touching rows of akter.${[...s.writes, ...s.reads].join(", akter.")}`,
          ]
        : []),
    ])
    expect(problems).toEqual([])
    // Tenant isolation's policies and grants name every table that holds a tenant's data.
    const isolated = new Set(
      statements
        .filter((s) => s.file === "runtime/storage/tenantIsolation.ts")
        .flatMap((s) => s.schema),
    )
    expect([...isolated].sort()).toEqual([
      "events",
      "executions",
      "manifests",
      "outbox",
      "owners",
      "receipts",
      "steps",
    ])
  })

  it("lists no exception that matches no code", () => {
    for (const module of SCHEMA_MODULES) {
      const uses = statements.filter((s) => s.file === module.file && s.schema.length > 0)
      expect(uses.length, `${module.file} changes the schema`).toBeGreaterThan(0)
    }
    for (const reader of READERS) {
      const uses = statements.filter(
        (s) => s.file === reader.file && s.reads.some((table) => STORES[table] !== s.file),
      )
      expect(uses.length, `${reader.file} reads a table it does not own`).toBeGreaterThan(0)
    }
  })

  it("tells a write from a read, and a store's table from another's", () => {
    const sample = [
      "const a = sql`INSERT INTO akter.steps (x) SELECT 1 FROM akter.executions`",
      "const b = sql`UPDATE akter.outbox o SET due_at_ms = 1`",
      "const c = db.deleteFrom('akter.leases').execute()",
      "const d = db.selectFrom('akter.events').selectAll()",
      "const e = sql`SELECT akter.require(true)`",
      "const f = sql`CREATE POLICY p ON akter.steps USING (EXISTS (SELECT 1 FROM akter.executions))`",
      "const g = sql`GRANT SELECT ON akter.events, akter.steps TO ${role}`",
      "const h = sql`WITH x AS (UPDATE akter.outbox SET a = 1) SELECT 1 FROM akter.leases`",
    ].join("\n")
    const seen = sqlIn("sample.ts", sample).map((s) => [s.line, s.writes, s.reads, s.schema])
    expect(seen).toEqual([
      [1, ["steps"], ["executions"], []],
      [2, ["outbox"], [], []],
      [3, ["leases"], [], []],
      [4, [], ["events"], []],
      [5, [], [], []],
      [6, [], [], ["steps", "executions"]],
      [7, [], [], ["events", "steps"]],
      [8, ["outbox"], ["leases"], []],
    ])
  })
})
