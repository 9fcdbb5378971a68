/**
 * The import graph of akter's sources has no cycle and keeps its folders' direction. Every `.ts`
 * file under runtime/, codegen/, cli/ and studio/ is parsed with the TypeScript compiler (a
 * dependency already, and the only parser that reads these files exactly as tsc does), and every
 * import it names is resolved the way tsc resolves it (tsconfig.json's module resolution and the
 * `akter-source` condition): `import` and `export … from` declarations, type-only ones included,
 * `import("…")` calls (a lazily loaded module is still a dependency) and `import("…")` types.
 *
 * - No cycle: a strongly connected group of files is reported as a chain, `a.ts → b.ts → a.ts`.
 *   (The last known one, runtime/engine/executionStore → stepStore → outbox/wakeups → executionStore,
 *   was broken by the stores' split in issue 14; none is allowed.)
 * - Folder rules (docs/architecture.md, "Import rules"): runtime/ imports none of codegen/, cli/ or
 *   studio/; studio/ imports neither codegen/ nor cli/; codegen/ imports neither cli/ nor studio/;
 *   and none of the four imports the repository's other folders (examples/, generated/, test/…),
 *   which are not packed.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const REPO = fileURLToPath(new URL("../../", import.meta.url))

const FOLDERS = ["runtime", "codegen", "cli", "studio"] as const
type Folder = (typeof FOLDERS)[number]

/** Which of the four folders each one may import, besides itself. */
const MAY_IMPORT: Readonly<Record<Folder, readonly Folder[]>> = {
  runtime: [],
  studio: ["runtime"],
  codegen: ["runtime"],
  cli: ["runtime", "codegen", "studio"],
}

const COMPILER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  customConditions: ["akter-source"],
}

interface Import {
  /** Repository-relative path of the imported file. */
  readonly to: string
  readonly line: number
}

const sourceFiles = (folder: string): string[] =>
  readdirSync(join(REPO, folder), { withFileTypes: true, recursive: true })
    .filter(
      (entry) => entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts"),
    )
    .map((entry) => relative(REPO, join(entry.parentPath, entry.name)))
    .sort()

/** Relative specifiers that resolved to no file: the walk would miss their edges. */
const unresolved: string[] = []

/** The repository files `file` imports; packages (node_modules) and Node's modules are left out. */
const importsOf = (file: string): Import[] => {
  const absolute = join(REPO, file)
  const source = ts.createSourceFile(
    absolute,
    readFileSync(absolute, "utf8"),
    ts.ScriptTarget.Latest,
  )
  const found: Import[] = []
  const add = (specifier: ts.Node, node: ts.Node) => {
    if (!ts.isStringLiteralLike(specifier)) return
    const resolved = ts.resolveModuleName(
      specifier.text,
      absolute,
      COMPILER_OPTIONS,
      ts.sys,
    ).resolvedModule
    if (resolved === undefined) {
      if (specifier.text.startsWith(".")) unresolved.push(`${file}: ${specifier.text}`)
      return
    }
    if (resolved.isExternalLibraryImport === true) return
    const to = relative(REPO, resolved.resolvedFileName)
    if (to.startsWith("..") || to.split(/[\\/]/).includes("node_modules")) return
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
    found.push({ to, line })
  }
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      add(node.moduleSpecifier, node)
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined
    ) {
      add(node.arguments[0], node)
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      add(node.argument.literal, node)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const graph = new Map<string, Import[]>(
  FOLDERS.flatMap((folder) => sourceFiles(folder)).map((file) => [file, importsOf(file)]),
)

/** Tarjan's strongly connected components with more than one file, or a file importing itself. */
const cyclicGroups = (): string[][] => {
  let counter = 0
  const index = new Map<string, number>()
  const lowest = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const groups: string[][] = []
  const visit = (file: string): void => {
    index.set(file, counter)
    lowest.set(file, counter)
    counter += 1
    stack.push(file)
    onStack.add(file)
    for (const { to } of graph.get(file) ?? []) {
      if (!graph.has(to)) continue
      if (!index.has(to)) {
        visit(to)
        lowest.set(file, Math.min(lowest.get(file)!, lowest.get(to)!))
      } else if (onStack.has(to)) {
        lowest.set(file, Math.min(lowest.get(file)!, index.get(to)!))
      }
    }
    if (lowest.get(file) !== index.get(file)) return
    const group: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      group.push(member)
    } while (member !== file)
    const selfImport = graph.get(file)!.some(({ to }) => to === file)
    if (group.length > 1 || selfImport) groups.push(group.sort())
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return groups
}

/** One cycle through `group`, as a chain that starts and ends at its first file. */
const cycleChain = (group: readonly string[]): string => {
  const members = new Set(group)
  const start = group[0]!
  const previous = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const file = queue.shift()!
    for (const { to } of graph.get(file)!) {
      if (!members.has(to)) continue
      if (to === start) {
        const path: string[] = []
        for (let at = file; at !== start; at = previous.get(at)!) path.unshift(at)
        return [start, ...path, start].join(" → ")
      }
      if (!previous.has(to)) {
        previous.set(to, file)
        queue.push(to)
      }
    }
  }
  return group.join(", ")
}

describe("the import graph of runtime/, codegen/, cli/ and studio/", () => {
  it("reads every source file and resolves their imports", () => {
    expect(graph.size).toBeGreaterThan(150)
    const edges = [...graph.values()].reduce((sum, imports) => sum + imports.length, 0)
    expect(edges).toBeGreaterThan(600)
    expect(unresolved, "relative imports that resolve to no file").toEqual([])
    // The walk sees each kind of import: a type-only one, a lazy import() and an export … from.
    expect(graph.get("runtime/errors.ts")!.map(({ to }) => to)).toContain(
      "runtime/compatibility/finding.ts",
    )
    expect(graph.get("cli/main.ts")!.map(({ to }) => to)).toContain("cli/run.ts")
    expect(graph.get("runtime/index.ts")!.map(({ to }) => to)).toContain("runtime/akter.ts")
  })

  it("has no import cycle", () => {
    expect(cyclicGroups().map(cycleChain), "import cycles (each a chain of imports)").toEqual([])
  })

  it("keeps each folder's direction: runtime/ ← codegen/, studio/ ← cli/", () => {
    const violations: string[] = []
    for (const [file, imports] of graph) {
      const from = file.split("/")[0] as Folder
      for (const { to, line } of imports) {
        const target = to.split("/")[0]!
        if (target === from) continue
        const allowed = (MAY_IMPORT[from] as readonly string[]).includes(target)
        if (!allowed) violations.push(`${file}:${line} imports ${to}`)
      }
    }
    expect(violations).toEqual([])
  })
})
