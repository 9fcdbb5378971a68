/**
 * Earlier shapes through the real code generator: release 3 of the loan manifest generates a type
 * per earlier shape (of an output, an input, an event's payload and a declared error's payload) and a `LoanMigrations`-style interface that `implement` requires, so an
 * implementation that forgets a migration, or migrates to the wrong shape, does not compile; one
 * that provides them compiles under the repository's strict options.
 */
import { spawnSync } from "node:child_process"
import { readFileSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTempProject, runAkter, type TempProject } from "../codegen/tempProject.js"
import { REPO } from "../codegen/typeCheck.js"
import { linkedProjectTsconfig } from "../readme/readmeSections.js"

/** An implementation of release 3's `apply`; `migrations` is spliced in by each case. */
const app = (migrations: string) => `import { Effect } from "effect"
import { Loan } from "./sdk/index.js"
import { Flagged } from "./sdk/loan/types.js"

export const applyWorker = Loan.apply.implement({
  activities: {
    quote: async () => ({ limit: { value: 12.5, currency: "EUR" } }),
    screen: async () => {
      throw new Flagged({ risk: { score: 7 } })
    },
  },
  body: (input, wf) =>
    Effect.gen(function* () {
      const quote = yield* wf.quote()
      yield* wf.screen().pipe(Effect.catchTag("Flagged", (flagged) => Effect.log(flagged.risk.score)))
      const approved = yield* wf.approved()
      return { summary: \`\${input.applicant.name} \${quote.limit.value} \${approved.by.name}\` }
    }),
${migrations}
})
`

const ALL = `  migrations: {
    input: { v1: (old) => ({ applicant: { name: old.applicant } }) },
    steps: { quote: { v1: (old) => ({ limit: { value: old.limitCents / 100, currency: "EUR" } }) } },
    events: { Approved: { v1: (old) => ({ by: { name: old.approver } }) } },
    errors: { Flagged: { v1: (old) => new Flagged({ risk: { score: old.score } }) } },
  },`

describe("migrations in generated code", { timeout: 240_000 }, () => {
  let project: TempProject
  beforeAll(() => {
    project = createTempProject()
    symlinkSync(
      join(REPO, "node_modules", "@types"),
      join(project.root, "node_modules", "@types"),
      "dir",
    )
    project.write("tsconfig.json", `${JSON.stringify(linkedProjectTsconfig(["src"]), null, 2)}\n`)
    project.write(
      "manifests/loan.yaml",
      readFileSync(join(REPO, "test/fixtures/migrations/loan/v3.yaml"), "utf8"),
    )
    const generated = runAkter(project.root, ["generate", "--out", "src/sdk"])
    expect(generated.stderr).toBe("")
    expect(generated.code).toBe(0)
  })
  afterAll(() => project?.remove())

  /** Type-checks one app per case in one tsc run (each run costs tens of seconds); output by file. */
  const typeCheck = (cases: Readonly<Record<string, string>>) => {
    for (const [name, migrations] of Object.entries(cases))
      project.write(`src/${name}.ts`, app(migrations))
    const run = spawnSync(
      process.execPath,
      [join(REPO, "node_modules", "typescript", "bin", "tsc"), "--noEmit", "-p", project.root],
      { encoding: "utf8", cwd: project.root },
    )
    // A diagnostic is its first line (`src/x.ts(4,49): error …`) and the indented lines after it.
    const byFile = new Map<string, string[]>()
    let file = ""
    for (const line of (run.stdout + run.stderr).split("\n")) {
      if (!line.startsWith(" ")) file = /^src\/(\w+)\.ts\(/.exec(line)?.[1] ?? ""
      byFile.set(file, [...(byFile.get(file) ?? []), line])
    }
    return (name: string) => (byFile.get(name) ?? []).join("\n")
  }

  it("declares each earlier shape as a type and types each migration from it to the current one", () => {
    const types = project.read("src/sdk/loan/types.ts")
    expect(types).toContain(
      "export interface ApplyQuoteOutputV1 {\n  readonly limitCents: number\n}",
    )
    expect(types).toContain("export interface ApprovedV1 {\n  readonly approver: string\n}")
    expect(types).toContain("export interface ApplyInputV1 {\n  readonly applicant: string\n}")
    const workflows = project.read("src/sdk/loan/workflows.ts")
    expect(workflows).toContain("export interface ApplyMigrations {")
    expect(workflows).toContain("readonly v1: Migration<ApplyQuoteOutputV1, ApplyQuoteOutput>")
    expect(workflows).toContain("readonly v1: Migration<ApprovedV1, Approved>")
    // An error's earlier shape is named after its workflow; its migration returns the error.
    expect(types).toContain("export interface ApplyFlaggedV1 {\n  readonly score: number\n}")
    expect(workflows).toContain("readonly v1: Migration<ApplyFlaggedV1, Flagged>")
  })

  it("compiles with every migration, and refuses a missing or mistyped one", () => {
    const errors = typeCheck({
      all: ALL,
      missingEvent: ALL.replace(/\n {4}events: .*\n/, "\n"),
      missingError: ALL.replace(/\n {4}errors: .*\n/, "\n"),
      mistypedError: ALL.replace("score: old.score", "score: String(old.score)"),
      none: "",
      mistyped: ALL.replace("old.limitCents / 100", "String(old.limitCents)"),
    })
    expect(errors("all")).toBe("")
    expect(errors("missingEvent")).toContain("Property 'events' is missing")
    expect(errors("missingError")).toContain("Property 'errors' is missing")
    expect(errors("mistypedError")).toContain("Type 'string' is not assignable to type 'number'")
    expect(errors("none")).toContain("Property 'migrations' is missing")
    expect(errors("mistyped")).toContain("Type 'string' is not assignable to type 'number'")
  })
})
