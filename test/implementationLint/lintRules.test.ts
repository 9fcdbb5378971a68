/**
 * Every rule of the implementation lint on the fixture project test/fixtures/implementationLint/shop:
 * one app per rule, each linted on its own, with the exact findings expected — rule id and
 * file:line:column, the position looked up in the fixture's text rather than taken from the lint —
 * and a clean app with none. The manifests and the generated SDK are the fixture's own, made by
 * `akter generate`.
 */
import { readFileSync } from "node:fs"
import path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { loadAppProgram } from "../../codegen/implementationLint/appProgram.js"
import { lintImplementations } from "../../codegen/implementationLint/lintImplementations.js"
import type { LintFinding } from "../../codegen/implementationLint/lintRules.js"
import { loadManifests, type LoadedManifest } from "../../codegen/manifest/loadManifests.js"

const FIXTURE = path.resolve(import.meta.dirname, "../fixtures/implementationLint/shop")

let manifests: readonly LoadedManifest[]
beforeAll(async () => {
  const loaded = await loadManifests({ dir: path.join(FIXTURE, "manifests"), root: FIXTURE })
  expect(loaded.diagnostics).toEqual([])
  manifests = loaded.manifests
})

const lint = (app: string) =>
  lintImplementations(
    loadAppProgram({
      cwd: FIXTURE,
      root: FIXTURE,
      outDir: path.join(FIXTURE, "generated"),
      patterns: [app],
    }),
    manifests,
  )

/** `file:line:column` of the `occurrence`-th appearance of `snippet` in a fixture file. */
const at = (file: string, snippet: string, occurrence = 1): string => {
  const lines = readFileSync(path.join(FIXTURE, file), "utf8").split("\n")
  let seen = 0
  for (let index = 0; index < lines.length; index++) {
    let column = lines[index]!.indexOf(snippet)
    while (column !== -1) {
      if (++seen === occurrence) return `${file}:${index + 1}:${column + 1}`
      column = lines[index]!.indexOf(snippet, column + 1)
    }
  }
  throw new Error(`${snippet} is not in ${file}`)
}

const located = (findings: readonly LintFinding[]) =>
  findings.map(
    (finding) =>
      `${finding.location.file}:${finding.location.line}:${finding.location.column} ${finding.rule}${finding.ignored === undefined ? "" : " (ignored)"}`,
  )

describe("the implementation lint", () => {
  it("finds nothing in a clean app whose activities use the clock, randomness and the network", () => {
    const result = lint("apps/clean.ts")
    expect(result.implementations).toBe(1)
    expect(result.findings).toEqual([])
  })

  it("finds every nondeterministic call of a body, where it is written", () => {
    const file = "apps/nondeterministic.ts"
    const result = lint(file)
    expect(located(result.findings)).toEqual([
      `${at(file, "Date.now()")} nondeterministic-call`,
      `${at(file, "new Date()")} nondeterministic-call`,
      `${at(file, "Math.random()")} nondeterministic-call`,
      `${at(file, "crypto.randomUUID()")} nondeterministic-call`,
      `${at(file, "performance.now()")} nondeterministic-call`,
      `${at(file, 'process.env["REGION"]')} nondeterministic-call`,
      `${at(file, 'readFileSync("config.json"')} nondeterministic-call`,
      `${at(file, "Clock.currentTimeMillis")} nondeterministic-call`,
      `${at(file, "setTimeout(")} nondeterministic-call`,
      `${at(file, "fetch(")} nondeterministic-call`,
    ])
    expect(result.findings[0]).toMatchObject({
      owner: "Shop",
      workflow: "checkout",
      severity: "error",
      message: expect.stringContaining("in the body of Shop.checkout"),
    })
  })

  it("follows a body into a helper of another file that calls a helper of a third, which reads the clock", () => {
    const result = lint("apps/crossFile.ts")
    expect(located(result.findings)).toEqual([
      `${at("apps/clock.ts", "Date.now()")} nondeterministic-call`,
    ])
    expect(result.findings[0]!.message).toContain("through stampedId → nowMillis")
  })

  it("reports plain Promises: Effect.promise in the body and await in a helper it calls", () => {
    const file = "apps/promise.ts"
    expect(located(lint(file).findings)).toEqual([
      `${at(file, "await Promise.resolve")} promise-in-body`,
      `${at(file, "Effect.promise(")} promise-in-body`,
    ])
  })

  it("reports writes to module-level state: an assignment and a mutating method", () => {
    const file = "apps/moduleState.ts"
    expect(located(lint(file).findings)).toEqual([
      `${at(file, "checkouts += 1")} module-state-write`,
      `${at(file, "seenCarts.add(")} module-state-write`,
    ])
  })

  it("reports a declared step that no body calls, at the body", () => {
    const file = "apps/stepNeverCalled.ts"
    const result = lint(file)
    expect(located(result.findings)).toEqual([`${at(file, "body:")} step-never-called`])
    expect(result.findings[0]).toMatchObject({ step: "settle", severity: "warning" })
    expect(result.findings[0]!.message).toContain(at("manifests/shop.yaml", "settle:"))
  })

  it("reports a declared marker that no body reads, following the handle into a helper", () => {
    const file = "apps/markerNeverRead.ts"
    const result = lint(file)
    expect(located(result.findings)).toEqual([`${at(file, "body:")} marker-never-read`])
    expect(result.findings[0]).toMatchObject({ marker: "expressShipping" })
  })

  it("reports a marker read that the manifest does not declare, at its name", () => {
    const file = "apps/markerUndeclared.compile-fail.ts"
    const result = lint(file)
    expect(located(result.findings)).toEqual([`${at(file, '"fastLane"')} marker-undeclared`])
    expect(result.findings[0]).toMatchObject({ marker: "fastLane", severity: "error" })
  })

  it("says when a body is not a function it can follow", () => {
    const file = "apps/bodyNotAnalyzed.ts"
    expect(located(lint(file).findings)).toEqual([`${at(file, "body }")} body-not-analyzed`])
  })

  it("reports an implementation of a builder whose generated SDK does not exist", () => {
    const file = "apps/builderManifestMissing.compile-fail.ts"
    expect(located(lint(file).findings)).toEqual([
      `${at(file, "Warehouse.restock.implement")} builder-manifest-missing`,
    ])
  })

  it("keeps a suppressed finding as ignored, and reports stale and invalid suppressions", () => {
    const file = "apps/suppressed.ts"
    const result = lint(file)
    expect(located(result.findings)).toEqual([
      `${at(file, "Date.now()")} nondeterministic-call (ignored)`,
      `${at(file, "// akter-ignore-next-line promise-in-body")} stale-suppression`,
      `${at(file, "// akter-ignore-next-line nondeterministic-call", 2)} suppression-invalid`,
    ])
    expect(result.findings[0]!.ignored).toEqual({
      reason: "only logged, the body never branches on it",
    })
  })
})
