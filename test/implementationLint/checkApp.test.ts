/**
 * `akter check --app` as a user runs it, through the real CLI: the lint's findings in the command's
 * text, json and github formats with its exit codes (1 for an error finding, 0 when only warnings or
 * suppressed findings remain, 2 for a pattern matching nothing), the package.json `"akter": { "app" }`
 * setting instead of the flag, and the repository's example app, which is clean.
 */
import { cpSync, rmSync } from "node:fs"
import path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { createTempProject, runAkter, type TempProject } from "../codegen/tempProject.js"
import { REPO } from "../codegen/typeCheck.js"

const FIXTURE = path.join(REPO, "test/fixtures/implementationLint/shop")

describe("akter check --app", () => {
  const projects: TempProject[] = []
  afterAll(() => {
    for (const project of projects) project.remove()
  })

  it("prints each finding located with its rule and fix, and exits 1 on an error", () => {
    const result = runAkter(FIXTURE, ["check", "--app", "apps/crossFile.ts"])
    expect(result.stdout).toBe(
      [
        "apps/clock.ts:2:40: error[nondeterministic-call] Date.now reads the clock, which a replay reads again and finds later; it is reached from the body of Shop.checkout through stampedId → nowMillis",
        "  fix: move it into an activity, whose result is recorded once and replayed, or pass the value in the workflow's input",
        "1 error, 0 warnings, 0 infos, 0 ignored",
        "",
      ].join("\n"),
    )
    expect(result.stderr).toContain("and 1 implementation in 4 source files: breaking")
    expect(result.code).toBe(1)
  })

  it("exits 0 when only warnings and suppressed findings remain, and 0 on a clean app", () => {
    const warned = runAkter(FIXTURE, ["check", "--app", "apps/stepNeverCalled.ts"])
    expect(warned.stdout).toContain("warning[step-never-called]")
    expect(warned.code).toBe(0)
    const clean = runAkter(FIXTURE, ["check", "--app", "apps/clean.ts"])
    expect(clean.stdout).toBe("0 errors, 0 warnings, 0 infos, 0 ignored\n")
    expect(clean.code).toBe(0)
  })

  it("prints JSON with the lint's findings and the exit code, for tools", () => {
    const result = runAkter(FIXTURE, [
      "check",
      "--app",
      "apps/moduleState.ts",
      "--app",
      "apps/suppressed.ts",
      "--format",
      "json",
    ])
    const report = JSON.parse(result.stdout) as {
      findings: { rule: string; location: { file: string; line: number }; ignored?: unknown }[]
      summary: Record<string, number>
      exitCode: number
    }
    expect(report.findings.map((finding) => `${finding.location.file}:${finding.rule}`)).toEqual([
      "apps/moduleState.ts:module-state-write",
      "apps/moduleState.ts:module-state-write",
      "apps/suppressed.ts:nondeterministic-call",
      "apps/suppressed.ts:stale-suppression",
      "apps/suppressed.ts:suppression-invalid",
    ])
    expect(report.summary).toEqual({ errors: 3, warnings: 1, infos: 0, ignored: 1 })
    expect(report.exitCode).toBe(1)
    expect(result.code).toBe(1)
  })

  it("prints GitHub annotations, a suppressed finding as a notice", () => {
    const result = runAkter(FIXTURE, ["check", "--app", "apps/suppressed.ts", "--format", "github"])
    const lines = result.stdout.trim().split("\n")
    expect(lines[0]).toMatch(
      /^::notice file=apps\/suppressed\.ts,line=14,col=46,title=nondeterministic-call \(ignored\)::Date\.now reads the clock/,
    )
    expect(lines[1]).toMatch(
      /^::warning file=apps\/suppressed\.ts,line=15,col=7,title=stale-suppression::/,
    )
    expect(result.code).toBe(1)
  })

  it("refuses a pattern that matches no file with exit 2", () => {
    const result = runAkter(FIXTURE, ["check", "--app", "apps/none/*.ts"])
    expect(result.stderr).toContain("--app apps/none/*.ts matches no file")
    expect(result.code).toBe(2)
  })

  it('reads the app from package.json\'s "akter": { "app" } setting', () => {
    const project = createTempProject({ akter: { app: ["apps/markerNeverRead.ts"] } })
    projects.push(project)
    for (const folder of ["manifests", "generated", "apps"]) {
      cpSync(path.join(FIXTURE, folder), path.join(project.root, folder), { recursive: true })
    }
    const result = runAkter(project.root, ["check"])
    expect(result.stdout).toContain("apps/markerNeverRead.ts:15:3: warning[marker-never-read]")
    expect(result.code).toBe(0)
    rmSync(path.join(project.root, "apps", "markerNeverRead.ts"))
    const missing = runAkter(project.root, ["check"])
    expect(missing.stderr).toContain("--app apps/markerNeverRead.ts matches no file")
    expect(missing.code).toBe(2)
  })

  it("finds nothing in the repository's example app", () => {
    const result = runAkter(REPO, ["check", "--app", "examples/app.ts", "--format", "json"])
    const report = JSON.parse(result.stdout) as {
      findings: { rule: string; location?: { file: string } }[]
    }
    expect(report.findings.filter((finding) => finding.location?.file.endsWith(".ts"))).toEqual([])
    expect(result.stderr).toContain("and 3 implementations in 3 source files")
  })
})
