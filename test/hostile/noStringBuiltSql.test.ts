/**
 * No SQL is built from strings: every statement in runtime/, codegen/, cli/ and studio/ is a kysely
 * query or an `sql` tagged template, whose substitutions become bind parameters. The scan parses each
 * file with the TypeScript compiler and flags raw-SQL escape hatches (`sql.raw`, `sql.lit`,
 * `CompiledQuery.raw`), `query(…)` calls given anything but a constant, and untagged template
 * strings or concatenations that read as SQL. The legitimate uses are listed below with why.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const REPO = new URL("../../", import.meta.url).pathname

interface Finding {
  readonly file: string
  readonly line: number
  readonly code: string
  readonly why: string
}

/** Each allowed use, by file and exact source text. */
const ALLOWED: readonly { file: string; code: string; reason: string }[] = [
  {
    file: "runtime/storage/migrator.ts",
    code: "sql.raw(migration.sql)",
    reason: "a migration file from migrations/, checksummed and applied whole; no value reaches it",
  },
  {
    file: "runtime/storage/openStorage.ts",
    code: "query({ name, text: shape, values })",
    reason:
      "the driver's own parameterized call, as a named prepared statement: its text is kysely's, its values still bind parameters",
  },
  {
    file: "runtime/storage/openStorage.ts",
    code: "query(...args)",
    reason:
      "the statement counter and the unprepared path forward the driver's own (already parameterized) calls unchanged",
  },
  {
    file: "runtime/storage/shapedStatement.ts",
    code: "CompiledQuery.raw(text, bound)",
    reason:
      "a shaped statement's text is what kysely compiled from its parts, kept and sent again with the call's values as bind parameters",
  },
  {
    file: "runtime/storage/listenSession.ts",
    code: "client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)",
    reason:
      "LISTEN takes no bind parameters; the channel is one of akter's constants, quoted as an identifier",
  },
  {
    file: "runtime/storage/listenSession.ts",
    code: "this.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)",
    reason: "the same LISTEN, for a channel subscribed while the session is connected",
  },
  {
    file: "runtime/storage/listenSession.ts",
    code: "this.client?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`)",
    reason: "UNLISTEN takes no bind parameters either; the same quoted constant channel",
  },
  {
    file: "runtime/storage/listenSession.ts",
    code: "`a self-addressed NOTIFY did not arrive within ${PROBE_TIMEOUT_MS} ms (a connection pooler in transaction mode drops notifications)`",
    reason: "a log message that names the statement, never sent to the database",
  },
]

const SQL_WORDS =
  /\b(SELECT\s|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|CREATE\s|DROP\s|ALTER\s|TRUNCATE\s|LISTEN\s|NOTIFY\s|SET\s+(ROLE|SESSION|LOCAL)|WHERE\s)/

const isSqlTag = (node: ts.Node) =>
  ts.isTaggedTemplateExpression(node.parent) && node.parent.tag.getText().startsWith("sql")

const textOf = (node: ts.Node): string | undefined =>
  ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)
    ? node.text
    : ts.isTemplateExpression(node)
      ? [node.head.text, ...node.templateSpans.map((span) => span.literal.text)].join("…")
      : undefined

/** String-built SQL in one source text. */
export const stringBuiltSql = (file: string, source: string): Finding[] => {
  const tree = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true)
  const findings: Finding[] = []
  const flag = (node: ts.Node, why: string) => {
    const { line } = tree.getLineAndCharacterOfPosition(node.getStart())
    findings.push({ file, line: line + 1, code: node.getText(), why })
  }
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression.getText()
      if (/^(sql\.raw|sql\.lit|CompiledQuery\.raw)$/.test(callee))
        flag(node, `${callee} inlines text`)
      else if (/\.query$/.test(callee) || callee === "query") {
        const first = node.arguments[0]
        if (
          first !== undefined &&
          !ts.isStringLiteral(first) &&
          !ts.isNoSubstitutionTemplateLiteral(first)
        ) {
          flag(node, "query() given text that is not a constant")
        }
      }
    }
    if (ts.isTemplateExpression(node) && !isSqlTag(node) && SQL_WORDS.test(textOf(node) ?? "")) {
      const parent = node.parent
      // An argument of a flagged call is reported once, as that call.
      const flaggedCall =
        ts.isCallExpression(parent) &&
        /(query|^sql\.raw|^sql\.lit|^CompiledQuery\.raw)$/.test(parent.expression.getText())
      if (!flaggedCall) flag(node, "an untagged template with substitutions reads as SQL")
    }
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind === ts.SyntaxKind.PlusToken &&
      [node.left, node.right].some((side) => SQL_WORDS.test(textOf(side) ?? ""))
    ) {
      flag(node, "SQL text concatenated with a value")
    }
    ts.forEachChild(node, visit)
  }
  visit(tree)
  return findings
}

const sourceFiles = (folder: string): string[] =>
  readdirSync(join(REPO, folder), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)))
    .sort()

describe("no string-built SQL", () => {
  it("finds none in runtime/, codegen/, cli/ and studio/ beyond the listed uses", () => {
    const files = ["runtime", "codegen", "cli", "studio"].flatMap(sourceFiles)
    expect(files.length).toBeGreaterThan(50)
    const findings = files.flatMap((file) =>
      stringBuiltSql(file, readFileSync(join(REPO, file), "utf8")),
    )
    const unexpected = findings.filter(
      (finding) =>
        !ALLOWED.some((allowed) => allowed.file === finding.file && allowed.code === finding.code),
    )
    expect(unexpected).toEqual([])
    // Each allowance still matches real code: a stale entry would hide a future use.
    for (const allowed of ALLOWED) {
      const uses = findings.filter((f) => f.file === allowed.file && f.code === allowed.code)
      expect(uses.length, `${allowed.file}: ${allowed.code}`).toBeGreaterThan(0)
    }
  })

  it("flags each way of building SQL from strings, and none of the parameterized forms", () => {
    const source = [
      "const a = sql.raw(`SELECT * FROM t WHERE id = '${id}'`)",
      "const b = sql.lit(name)",
      "const c = CompiledQuery.raw(text)",
      "await client.query(`UPDATE t SET x = ${x}`)",
      "await pool.query(statement, [1])",
      "const d = `DELETE FROM akter.events WHERE owner_id = '${ownerId}'`",
      "const e = 'SELECT * FROM t WHERE id = ' + id",
      "const ok1 = sql`SELECT * FROM t WHERE id = ${id}`",
      "const ok2 = await db.selectFrom('t').where('id', '=', id).execute()",
      "await client.query('SELECT 1')",
      "const ok3 = `workflow ${name} selects nothing`",
    ].join("\n")
    expect(stringBuiltSql("sample.ts", source).map((f) => [f.line, f.why])).toEqual([
      [1, "sql.raw inlines text"],
      [2, "sql.lit inlines text"],
      [3, "CompiledQuery.raw inlines text"],
      [4, "query() given text that is not a constant"],
      [5, "query() given text that is not a constant"],
      [6, "an untagged template with substitutions reads as SQL"],
      [7, "SQL text concatenated with a value"],
    ])
  })
})
