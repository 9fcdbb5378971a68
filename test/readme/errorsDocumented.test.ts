/**
 * Every user-facing error is documented: each error class the runtime exports and each rule id the
 * manifest loader, the compatibility rules and the lock file can report appears in docs/errors.md,
 * and each run-time error class in the README's Errors table. The ids are collected from the code
 * and from the loader's own output on the invalid fixtures, not from the documentation.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { loadManifests, loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import * as errors from "../../runtime/errors.js"
import { RULE_IDS } from "../../runtime/compatibility/finding.js"
import { REPO } from "../codegen/typeCheck.js"

const reference = readFileSync(join(REPO, "docs/errors.md"), "utf8")
const readme = readFileSync(join(REPO, "README.md"), "utf8")
const readmeErrors = readme.slice(readme.indexOf("\n## Errors"), readme.indexOf("\n## Testing"))

/** `name` as a table cell's code span: `| \`name\`` (possibly followed by "(warning)"). */
const documented = (text: string, name: string) => text.includes(`| \`${name}\``)

const INVALID_FIXTURES = join(REPO, "test/fixtures/manifests/invalid")

/** Every rule the loader reports on the invalid fixtures, plus the folder-level ones. */
const manifestRules = async (): Promise<string[]> => {
  const rules = new Set<string>()
  for (const name of readdirSync(INVALID_FIXTURES)) {
    const path = join(INVALID_FIXTURES, name)
    const loaded = statSync(path).isDirectory()
      ? await loadManifests({ dir: path, root: REPO })
      : loadManifestSources([{ file: name, text: readFileSync(path, "utf8") }])
    for (const diagnostic of loaded.diagnostics) rules.add(diagnostic.rule)
  }
  const missingFolder = await loadManifests({ dir: join(REPO, "no-such-folder"), root: REPO })
  for (const diagnostic of missingFolder.diagnostics) rules.add(diagnostic.rule)
  const empty = await loadManifests({ dir: join(REPO, "docs"), root: REPO })
  for (const diagnostic of empty.diagnostics) rules.add(diagnostic.rule)
  return [...rules].sort()
}

describe("the error documentation", () => {
  const classes = Object.entries(errors)
    .filter(([, value]) => typeof value === "function")
    .map(([name]) => name)

  it("names every run-time error class in docs/errors.md and in the README", () => {
    expect(classes.length).toBeGreaterThanOrEqual(13)
    expect(classes.filter((name) => !documented(reference, name))).toEqual([])
    expect(classes.filter((name) => !documented(readmeErrors, name))).toEqual([])
  })

  it("names every compatibility rule id", () => {
    expect(RULE_IDS.length).toBeGreaterThanOrEqual(20)
    expect(RULE_IDS.filter((rule) => !documented(reference, rule))).toEqual([])
  })

  it("names every rule the manifest loader reports", async () => {
    const rules = await manifestRules()
    expect(rules).toContain("manifest-folder-missing")
    expect(rules).toContain("no-manifests")
    expect(rules.length).toBeGreaterThanOrEqual(30)
    expect(rules.filter((rule) => !documented(reference, rule))).toEqual([])
  })

  it("names every rule the lock file reader reports", () => {
    const source = readFileSync(join(REPO, "cli/compatibility/lockFile.ts"), "utf8")
    const rules = [...new Set([...source.matchAll(/rule: "([a-z-]+)"/g)].map((match) => match[1]!))]
    expect(rules.length).toBeGreaterThanOrEqual(3)
    expect(rules.filter((rule) => !documented(reference, rule))).toEqual([])
  })
})
