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
 *   a reader with its reason.
 *
 * Every listed exception must still match real code, so a stale entry fails too.
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

/** Modules that write tables they do not own, with why. */
const FOREIGN_WRITERS: readonly { file: string; tables: readonly string[]; reason: string }[] = [
  {
    file: "runtime/storage/tenantIsolation.ts",
    tables: ["steps", "executions", "owners", "outbox", "receipts", "events", "manifests"],
    reason: "row-level-security policies and grants (DDL) on every table, applied at setup",
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
  /** Tables written (INSERT/UPDATE/DELETE, DDL) and read. */
  readonly writes: readonly string[]
  readonly reads: readonly string[]
}

const TABLE = String.raw`akter\.(owners|events|executions|steps|outbox|manifests|receipts|runners|leases|migrations)\b`
const WRITE = new RegExp(
  String.raw`(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|ALTER\s+TABLE|ON|LOCK\s+TABLE)\s+${TABLE}`,
  "g",
)
const ANY = new RegExp(TABLE, "g")
const GRANTED = new RegExp(String.raw`ON\s+((?:${TABLE}\s*,?\s*)+)\s+TO`, "g")

const tablesIn = (text: string) => {
  const writes = new Set([...text.matchAll(WRITE)].map((m) => m[1]!))
  for (const grant of text.matchAll(GRANTED)) {
    for (const m of grant[1]!.matchAll(ANY)) writes.add(m[1]!)
  }
  const reads = new Set([...text.matchAll(ANY)].map((m) => m[1]!).filter((t) => !writes.has(t)))
  return { writes: [...writes], reads: [...reads] }
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
        const allowed = FOREIGN_WRITERS.some((w) => w.file === s.file && w.tables.includes(table))
        if (!allowed)
          problems.push(`${where(s)} writes akter.${table} (its store: ${STORES[table]})`)
      }
      for (const table of s.reads) {
        if (STORES[table] === s.file) continue
        if (READERS.some((r) => r.file === s.file)) continue
        if (FOREIGN_WRITERS.some((w) => w.file === s.file)) continue
        problems.push(`${where(s)} reads akter.${table} (its store: ${STORES[table]})`)
      }
    }
    expect(problems).toEqual([])
  })

  it("lists no exception that matches no code", () => {
    for (const writer of FOREIGN_WRITERS) {
      for (const table of writer.tables) {
        const uses = statements.filter((s) => s.file === writer.file && s.writes.includes(table))
        expect(uses.length, `${writer.file} writes akter.${table}`).toBeGreaterThan(0)
      }
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
    ].join("\n")
    expect(sqlIn("sample.ts", sample).map((s) => [s.line, s.writes, s.reads])).toEqual([
      [1, ["steps"], ["executions"]],
      [2, ["outbox"], []],
      [3, ["leases"], []],
      [4, [], ["events"]],
      [5, [], []],
    ])
  })
})
