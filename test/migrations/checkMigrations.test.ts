/**
 * `akter check` with migrations, as the real CLI in a temporary project: releases 1 and 2 of the
 * loan manifest are locked with `akter lock`, and release 3 passes only because its earlier shapes
 * cover what each release recorded; the check says which migration covers which release, and names
 * the release whose shape no declared earlier shape covers when one is missing.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { createCliProject, withoutProgress, type CliProject } from "../cli/cliProject.js"
import { loanYaml } from "./loanReleases.js"

// Every call runs the real CLI, a few seconds each on a loaded machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

interface Finding {
  readonly rule: string
  readonly severity: string
  readonly step?: string
  readonly event?: string
  readonly message: string
  readonly location?: { readonly line: number; readonly column: number }
}

describe("akter check across releases that migrate recorded data", () => {
  let project: CliProject
  beforeAll(async () => {
    project = createCliProject()
    for (const version of [1, 2] as const) {
      project.write("manifests/loan.yaml", loanYaml(version))
      const locked = await project.akter(["lock"])
      expect(withoutProgress(locked.stderr)).toBe("")
      expect(locked.code).toBe(0)
    }
  })
  afterAll(() => project?.remove())

  const check = async (manifest: string) => {
    project.write("manifests/loan.yaml", manifest)
    const run = await project.akter(["check", "--format", "json"])
    return {
      code: run.code,
      findings: (JSON.parse(run.stdout) as { findings: Finding[] }).findings,
    }
  }

  it("passes release 3, saying which migration reads which release's data", async () => {
    const { code, findings } = await check(loanYaml(3))
    expect(code).toBe(0)
    expect(findings.filter((f) => f.severity === "error")).toEqual([])
    expect(
      findings
        .filter((f) => f.rule === "recorded-data-migrated")
        .map((f) => f.message)
        .sort(),
    ).toEqual([
      '"Approved" events of Loan recorded under release 1 are read through migration "v1"',
      '"Approved" events of Loan recorded under release 2 are read through migration "v1"',
      '"Approved" events that wait "approved" of Loan.apply matched recorded under release 1 are read through migration "v1"',
      '"Approved" events that wait "approved" of Loan.apply matched recorded under release 2 are read through migration "v1"',
      '"Flagged" errors of step "screen" of Loan.apply recorded under release 1 are read through migration "v1"',
      '"Flagged" errors of step "screen" of Loan.apply recorded under release 2 are read through migration "v1"',
      'inputs of Loan.apply recorded under release 1 are read through migration "v1"',
      'inputs of Loan.apply recorded under release 2 are read through migration "v1"',
      'results of step "quote" of Loan.apply recorded under release 1 are read through migration "v1"',
    ])
  })

  it("warns that a migrated error's payload decodes in a workflow's result only under its own shape", async () => {
    const { findings } = await check(loanYaml(3))
    expect(
      findings
        .filter((f) => f.rule === "output-incompatible")
        .map((f) => [f.severity, f.location?.line, f.location?.column, f.message]),
    ).toEqual([
      [
        "warning",
        34,
        7,
        'the payload of error "Flagged" of Loan.apply changed: failures steps recorded are read through its migration, but a result of Loan.apply that fails with it decodes only in clients built with the payload it was written with',
      ],
    ])
  })

  it("fails naming the release whose error payload no earlier shape covers", async () => {
    // The earlier shape of Flagged is not what releases 1 and 2 recorded ({ score: integer }).
    const manifest = loanYaml(3).replace(
      "          v1: { score: integer }",
      "          v1: { score: string }",
    )
    const { code, findings } = await check(manifest)
    expect(code).toBe(1)
    const errors = findings.filter((f) => f.severity === "error")
    expect(errors.map((f) => [f.rule, f.step, f.location?.line, f.location?.column])).toEqual([
      ["output-incompatible", undefined, 34, 7],
      ["step-result-incompatible", "screen", 36, 9],
    ])
    expect(errors[1]!.message).toContain(
      "no earlier shape declared (v1) covers the shape recorded under release 1: declare one with its migration",
    )
  })

  it("fails naming the release whose shape no earlier shape covers", async () => {
    // The quote's earlier shape is release 2's own; release 1's { limitCents } has no migration.
    const manifest = loanYaml(3).replace(
      "            v1: { limitCents: integer }",
      "            v2: { limit: { value: integer, currency: string } }",
    )
    const { code, findings } = await check(manifest)
    expect(code).toBe(1)
    const errors = findings.filter((f) => f.severity === "error")
    expect(errors.map((f) => [f.rule, f.step, f.location?.line, f.location?.column])).toEqual([
      ["step-result-incompatible", "quote", 28, 11],
    ])
    expect(errors[0]!.message).toContain(
      "no earlier shape declared (v2) covers the shape recorded under release 1: declare one with its migration",
    )
  })
})
