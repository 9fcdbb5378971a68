/**
 * The real generator under mutated manifests: deleted keys, wrong scalar types, huge strings, deep
 * nesting, anchors and aliases, unicode and duplicate keys, applied to the example manifests. Every
 * run either generates a complete output folder or reports located errors and leaves the output
 * folder and the generator's state byte for byte as they were; it never throws, and it stays within
 * bounded time. A billion-laughs file is refused by the CLI inside a small heap; types nested
 * deeper than MAX_TYPE_DEPTH are refused at the level that crosses it.
 */
import { spawnSync } from "node:child_process"
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import fc from "fast-check"
import YAML from "yaml"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { generate, type GenerateReport } from "../../codegen/emit/generate.js"
import { statePath } from "../../codegen/emit/generateState.js"
import { MAX_TYPE_DEPTH } from "../../runtime/model/typeModel.js"
import { createTempProject, folderSnapshot, type TempProject } from "../codegen/tempProject.js"
import { REPO } from "../codegen/typeCheck.js"

type Plain = null | boolean | number | string | Plain[] | { [key: string]: Plain }
type Path = readonly (string | number)[]

const EXAMPLES = ["order.yaml", "subscription.yaml", "user.yaml"]

/** Every path to a node of a plain value, the root excluded. */
const pathsOf = (value: Plain, prefix: Path = []): Path[] => {
  if (value === null || typeof value !== "object") return []
  const entries: [string | number, Plain][] = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : Object.entries(value)
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])])
}

const clone = (value: Plain): Plain => structuredClone(value)

/** The container holding `path`'s node and the node's key in it. */
const parentOf = (root: Plain, path: Path): [Record<string | number, Plain>, string | number] => {
  let node = root as Record<string | number, Plain>
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, Plain>
  return [node, path.at(-1)!]
}

const WRONG_SCALARS: Plain[] = [
  42,
  -1.5,
  true,
  null,
  "",
  [],
  {},
  "string[][][]",
  "🧾\u202eredro\u202c",
  "$reserved",
  "x".repeat(200_000),
]

const UNICODE_NAMES = ["Ördér", "🧾", "名前", "a\u200db", "ﬃ", "İ", "\u202eevil", "e\u0301"]

const nested = (depth: number, inner: Plain, shape: "map" | "list"): Plain => {
  let value = inner
  for (let level = 0; level < depth; level += 1) value = shape === "map" ? { a: value } : [value]
  return value
}

type Structural =
  | { readonly kind: "delete"; readonly pick: number }
  | { readonly kind: "wrong-scalar"; readonly pick: number; readonly scalar: number }
  | { readonly kind: "nest"; readonly pick: number; readonly depth: number; readonly list: boolean }
  | { readonly kind: "rename"; readonly pick: number; readonly name: number }

type Textual =
  | { readonly kind: "duplicate-line"; readonly pick: number }
  | { readonly kind: "alias"; readonly from: number; readonly to: number }
  | { readonly kind: "undefined-alias"; readonly pick: number }
  | { readonly kind: "self-alias"; readonly pick: number }
  | { readonly kind: "laughs"; readonly levels: number; readonly width: number }
  | { readonly kind: "flow-nesting"; readonly pick: number; readonly depth: number }

const structural: fc.Arbitrary<Structural> = fc.oneof(
  fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("wrong-scalar" as const), pick: fc.nat(), scalar: fc.nat() }),
  fc.record({
    kind: fc.constant("nest" as const),
    pick: fc.nat(),
    depth: fc.constantFrom(MAX_TYPE_DEPTH, MAX_TYPE_DEPTH + 1, 60, 150),
    list: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("rename" as const), pick: fc.nat(), name: fc.nat() }),
)

const textual: fc.Arbitrary<Textual> = fc.oneof(
  fc.record({ kind: fc.constant("duplicate-line" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("alias" as const), from: fc.nat(), to: fc.nat() }),
  fc.record({ kind: fc.constant("undefined-alias" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("self-alias" as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant("laughs" as const),
    levels: fc.integer({ min: 2, max: 12 }),
    width: fc.integer({ min: 2, max: 12 }),
  }),
  fc.record({
    kind: fc.constant("flow-nesting" as const),
    pick: fc.nat(),
    depth: fc.constantFrom(101, 5_000),
  }),
)

const applyStructural = (source: Plain, mutation: Structural): Plain => {
  const root = clone(source)
  const paths = pathsOf(root)
  const path = paths[mutation.pick % paths.length]!
  const [parent, key] = parentOf(root, path)
  switch (mutation.kind) {
    case "delete":
      if (Array.isArray(parent)) parent.splice(key as number, 1)
      else delete parent[key]
      break
    case "wrong-scalar":
      parent[key] = WRONG_SCALARS[mutation.scalar % WRONG_SCALARS.length]!
      break
    case "nest":
      parent[key] = nested(mutation.depth, parent[key]!, mutation.list ? "list" : "map")
      break
    case "rename": {
      if (Array.isArray(parent)) {
        parent[key as number] = UNICODE_NAMES[mutation.name % UNICODE_NAMES.length]!
        break
      }
      const renamed: Record<string, Plain> = {}
      for (const [name, value] of Object.entries(parent)) {
        renamed[name === key ? UNICODE_NAMES[mutation.name % UNICODE_NAMES.length]! : name] = value
      }
      for (const name of Object.keys(parent)) delete parent[name]
      Object.assign(parent, renamed)
    }
  }
  return root
}

/** Lines holding `key: value` with a plain scalar value, by index. */
const scalarLines = (lines: readonly string[]) =>
  lines.flatMap((line, index) =>
    /^\s*[^\s#][^:]*: [^\s&*[{|>'"#][^#]*$/.test(line) ? [index] : [],
  )

const applyTextual = (text: string, mutation: Textual): string => {
  const lines = text.split("\n")
  const scalars = scalarLines(lines)
  const at = (pick: number) => scalars[pick % scalars.length]!
  const setValue = (index: number, value: string) => {
    lines[index] = lines[index]!.replace(/: .*$/, `: ${value}`)
  }
  switch (mutation.kind) {
    case "duplicate-line": {
      const keyed = lines.flatMap((line, index) => (/^\s*[\w.-]+:/.test(line) ? [index] : []))
      const index = keyed[mutation.pick % keyed.length]!
      lines.splice(index + 1, 0, lines[index]!)
      break
    }
    case "alias": {
      const from = at(mutation.from)
      const to = at(mutation.to)
      lines[from] = lines[from]!.replace(/: /, ": &mark ")
      if (to > from) setValue(to, "*mark")
      break
    }
    case "undefined-alias":
      setValue(at(mutation.pick), "*nowhere")
      break
    case "self-alias": {
      const index = at(mutation.pick)
      setValue(index, "&loop [*loop]")
      break
    }
    case "laughs": {
      const types = lines.findIndex((line) => /^types:/.test(line))
      const bomb = [`  Lol0: &lol0 { enum: [a, b] }`]
      for (let level = 1; level < mutation.levels; level += 1) {
        const refs = Array.from({ length: mutation.width }, () => `*lol${level - 1}`).join(", ")
        bomb.push(`  Lol${level}: &lol${level} { oneOf: [${refs}] }`)
      }
      if (types === -1) lines.splice(3, 0, "types:", ...bomb)
      else lines.splice(types + 1, 0, ...bomb)
      break
    }
    case "flow-nesting":
      setValue(
        at(mutation.pick),
        "[".repeat(mutation.depth) + "string" + "]".repeat(mutation.depth),
      )
      break
  }
  return lines.join("\n")
}

const mutation = fc.record({
  file: fc.constantFrom(...EXAMPLES),
  structural: fc.option(structural, { nil: undefined }),
  textual: fc.option(textual, { nil: undefined }),
})

const KEBAB = /^[a-z]+(-[a-z]+)*$/

describe("the generator under mutated manifests", () => {
  let project: TempProject
  const sources = new Map<string, string>()
  const plain = new Map<string, Plain>()
  const options = () => ({
    root: project.root,
    manifestsDir: join(project.root, "manifests"),
    outDir: join(project.root, "generated"),
  })
  const snapshot = () => ({
    generated: folderSnapshot(join(project.root, "generated")),
    state: existsSync(statePath(project.root)) ? readFileSync(statePath(project.root), "utf8") : "",
  })

  beforeAll(async () => {
    project = createTempProject({ manifests: "manifests" })
    for (const file of EXAMPLES) {
      const text = readFileSync(join(REPO, "manifests", file), "utf8")
      sources.set(file, text)
      plain.set(file, YAML.parse(text) as Plain)
    }
    const first = await generate(options())
    expect(first.kind).toBe("generated")
  })

  afterAll(() => project?.remove())

  /** Puts every example back, so each test starts from the valid project. */
  const restoreManifests = () => {
    for (const [file, text] of sources) writeFileSync(join(project.root, "manifests", file), text)
  }
  beforeEach(restoreManifests)

  /** Runs the real generator; checks the outcome is whole either way. */
  const generateChecked = async (file: string, text: string): Promise<GenerateReport> => {
    writeFileSync(join(project.root, "manifests", file), text)
    const before = snapshot()
    const started = performance.now()
    let report: GenerateReport
    try {
      report = await generate(options())
    } catch (error) {
      throw new Error(`generate threw instead of reporting: ${String(error)}`)
    }
    const elapsed = performance.now() - started
    if (report.kind === "invalid") {
      // A hang guard: linear work on at most 1 MiB of text takes seconds even on a loaded machine
      // (yaml's lexer is the slowest part, on deep flow collections); quadratic work takes minutes.
      expect(elapsed).toBeLessThan(30_000)
      const errors = report.diagnostics.filter((d) => d.severity === "error")
      expect(errors.length).toBeGreaterThan(0)
      for (const d of errors) {
        expect(d.file).toMatch(/^manifests\/[a-z]+\.yaml$/)
        const lineCount = readFileSync(join(project.root, d.file), "utf8").split("\n").length
        expect(d.line).toBeGreaterThanOrEqual(1)
        expect(d.line).toBeLessThanOrEqual(lineCount)
        expect(d.column).toBeGreaterThanOrEqual(1)
        expect(d.rule).toMatch(KEBAB)
        expect(d.message.length).toBeGreaterThan(0)
      }
      expect(snapshot()).toEqual(before)
    } else {
      expect(["generated", "unchanged"]).toContain(report.kind)
      if (report.kind === "generated") {
        expect(Object.keys(snapshot().generated).sort()).toEqual([...report.files].sort())
      }
    }
    return report
  }

  it("reports located errors or generates a whole folder for every mutation, never throwing", async () => {
    const outcomes = { invalid: 0, generated: 0 }
    await fc.assert(
      fc.asyncProperty(mutation, async ({ file, structural, textual }) => {
        const mutatedPlain =
          structural === undefined ? undefined : applyStructural(plain.get(file)!, structural)
        let text =
          mutatedPlain === undefined
            ? sources.get(file)!
            : YAML.stringify(mutatedPlain, { lineWidth: 0 })
        if (textual !== undefined) text = applyTextual(text, textual)
        try {
          const report = await generateChecked(file, text)
          outcomes[report.kind === "invalid" ? "invalid" : "generated"] += 1
        } finally {
          restoreManifests()
        }
      }),
      { numRuns: 100, seed: 6006 },
    )
    // The mutations are meant to break manifests; a few happen to leave one valid.
    expect(outcomes.invalid).toBeGreaterThan(75)
  }, 600_000)

  it("refuses a billion-laughs manifest in a 96 MB heap within seconds, writing nothing", () => {
    const bomb = createTempProject({ manifests: "manifests" })
    try {
      cpSync(
        join(REPO, "test/fixtures/manifests/invalid/billion-laughs.yaml"),
        join(bomb.root, "manifests", "lol.yaml"),
      )
      const started = performance.now()
      const result = spawnSync(
        process.execPath,
        ["--max-old-space-size=96", join(REPO, "bin", "akter.js"), "generate"],
        { cwd: bomb.root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } },
      )
      const elapsed = performance.now() - started
      expect(result.status).toBe(2)
      expect(result.stderr).toContain(
        "manifests/lol.yaml:7:56: error[alias-limit] aliases in this file expand to more than 10000 nodes",
      )
      expect(result.stderr).toContain("generated/ left unchanged")
      expect(existsSync(join(bomb.root, "generated"))).toBe(false)
      expect(elapsed).toBeLessThan(15_000)
    } finally {
      bomb.remove()
    }
  })

  it("refuses a type one level deeper than MAX_TYPE_DEPTH at that level, and accepts the limit", async () => {
    const withInput = (depth: number) =>
      sources
        .get("user.yaml")!
        .replace(
          /^workflows:\n/m,
          `types:\n  Deep: ${"{ a: ".repeat(depth - 1)}string${" }".repeat(depth - 1)}\nworkflows:\n`,
        )
    const deep = withInput(MAX_TYPE_DEPTH + 1)
    const line = deep.split("\n").findIndex((text) => text.startsWith("  Deep:")) + 1
    const refused = await generateChecked("user.yaml", deep)
    expect(refused.kind).toBe("invalid")
    expect(refused.diagnostics.map((d) => [d.file, d.rule, d.line, d.column])).toEqual([
      ["manifests/user.yaml", "type-too-deep", line, "  Deep: ".length + 1 + MAX_TYPE_DEPTH * 5],
    ])
    expect(refused.diagnostics[0]!.message).toBe(
      `this type nests deeper than ${MAX_TYPE_DEPTH} levels`,
    )
    const hundredThousand = withInput(100_000)
    const started = performance.now()
    const far = await generateChecked("user.yaml", hundredThousand)
    expect(performance.now() - started).toBeLessThan(30_000)
    expect(far.diagnostics.map((d) => d.rule)).toEqual(["type-too-deep"])
    const atLimit = await generateChecked("user.yaml", withInput(MAX_TYPE_DEPTH))
    expect(atLimit.kind).toBe("generated")
  }, 120_000)

  it("refuses enum values Postgres cannot store, and duplicates in a 100 000-value enum in linear time", async () => {
    const withEnum = (values: string) =>
      sources
        .get("user.yaml")!
        .replace(/^workflows:\n/m, `types:\n  Odd: { enum: [${values}] }\nworkflows:\n`)
    const nul = await generateChecked("user.yaml", withEnum('ok, "a\\0b", "c\\ud800"'))
    expect(nul.diagnostics.map((d) => [d.rule, d.message])).toEqual([
      ["invalid-type", 'enum value "a\\u0000b" holds a NUL character or a lone surrogate'],
      ["invalid-type", 'enum value "c\\ud800" holds a NUL character or a lone surrogate'],
    ])
    // Linear, not quadratic: four times the values may cost about four times the time, far from
    // the sixteen a pairwise duplicate check costs (it took 40 s for 100 000 values).
    const timed = async (count: number) => {
      const values = Array.from({ length: count }, (_, index) => `v${index}`)
      const started = performance.now()
      const report = await generateChecked("user.yaml", withEnum([...values, "v7"].join(", ")))
      return { report, ms: performance.now() - started }
    }
    const quarter = await timed(25_000)
    const full = await timed(100_000)
    expect(full.ms).toBeLessThan(8 * quarter.ms + 1_000)
    expect(full.report.diagnostics.map((d) => [d.rule, d.message])).toEqual([
      ["invalid-type", 'enum value "v7" is listed twice'],
    ])
  })

  it("refuses a manifest over the size limit unread, leaving the output as it was", async () => {
    const huge = `${sources.get("user.yaml")!}\n# ${"x".repeat(1024 * 1024)}\n`
    const report = await generateChecked("user.yaml", huge)
    expect(report.diagnostics.map((d) => [d.rule, d.line, d.column])).toEqual([
      ["file-too-large", 1, 1],
    ])
  })
})
