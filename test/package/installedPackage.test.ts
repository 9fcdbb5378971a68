/**
 * The package as a user installs it (test/support/packedAkter.ts): the tarball holds the compiled
 * code and nothing of the repository's tests, benches or examples; its CLI and runtime run on plain
 * Node; `akter init` scaffolds a project that builds with tsc and runs; a deployed runner loads no
 * code generator (prettier, ts-morph, yaml) and no TypeScript loader; a TypeScript app module is
 * loaded through the project's tsx, or refused with how to run it; a read-only command creates no
 * database; and a compiled copy inside akter's own repository refuses to run.
 */
import { spawn, spawnSync } from "node:child_process"
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  describeWithRegistry,
  installedProject,
  packedTarball,
  REPO,
  type InstalledProject,
} from "../support/packedAkter.js"

const VERSION = (
  JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }
).version

/** A loader hook that appends every module URL the process loads to `file`. */
const moduleLog = (file: string) =>
  `data:text/javascript,${encodeURIComponent(`
    import { register } from "node:module"
    register("data:text/javascript," + encodeURIComponent(\`
      import { appendFileSync } from "node:fs"
      export const load = async (url, context, next) => {
        appendFileSync(${JSON.stringify(file)}, url + "\\\\n")
        return next(url, context)
      }
    \`))
  `)}`

const GENERATORS = /\/node_modules\/(prettier|ts-morph|@ts-morph|typescript|yaml|tsx|esbuild)\//

describeWithRegistry("the installed package", () => {
  let project: InstalledProject

  beforeAll(() => {
    project = installedProject("akter-installed", ["typescript", "@types/node"])
  }, 900_000)
  afterAll(() => project?.remove())

  it("packs the compiled code, the bin, the migrations and the docs, and nothing of the repository's tests, benches or examples", () => {
    const { files, size, unpackedSize } = packedTarball()
    const paths = files.map((file) => file.path)
    const outside = paths.filter((path) => !path.startsWith("dist/"))
    expect(outside.sort()).toEqual(
      [
        "LICENSE",
        "README.md",
        "bin/akter.js",
        "docs/errors.md",
        "package.json",
        ...paths.filter((path) => path.startsWith("migrations/")),
      ].sort(),
    )
    expect(paths.filter((path) => path.startsWith("migrations/")).length).toBeGreaterThan(4)
    expect(paths.filter((path) => /\.ts$/.test(path) && !path.endsWith(".d.ts"))).toEqual([])
    expect(
      paths.filter((path) => /(^|\/)(test|bench|examples|manifests|generated)\//.test(path)),
    ).toEqual([])
    expect(paths).toContain("dist/runtime/index.js")
    expect(paths).toContain("dist/runtime/index.d.ts")
    expect(paths).toContain("dist/runtime/index.js.map")
    expect(paths).toContain("dist/cli/main.js")
    expect(paths.some((path) => path.includes("demo"))).toBe(false)
    console.log(
      `akter tarball: ${paths.length} files, ${(size / 1024).toFixed(0)} kB packed, ${(unpackedSize / 1024).toFixed(0)} kB unpacked`,
    )
  })

  it("declares effect and zod as peers, and only what it imports as dependencies", () => {
    const manifest = JSON.parse(project.read("node_modules/akter/package.json")) as {
      dependencies: Record<string, string>
      peerDependencies: Record<string, string>
    }
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual(["effect", "zod"])
    expect(Object.keys(manifest.dependencies).sort()).toEqual([
      "@electric-sql/pglite",
      "croner",
      "kysely",
      "pg",
      "prettier",
      "ts-morph",
      "yaml",
    ])
    expect(existsSync(join(project.root, "node_modules/akter/node_modules/effect"))).toBe(false)
  })

  it("answers --version and --help on plain node, and says where the demo lives", () => {
    const version = project.run("npx", ["--no-install", "akter", "--version"])
    expect(version.stdout).toBe(`${VERSION}\n`)
    expect(version.status).toBe(0)
    const help = project.run("npx", ["--no-install", "akter", "--help"])
    expect(help.status).toBe(0)
    expect(help.stdout).toContain("  init ")
    expect(help.stdout).not.toContain("  demo ")
    const demo = project.run("npx", ["--no-install", "akter", "demo"])
    expect(demo.status).toBe(2)
    expect(demo.stderr).toContain("akter demo runs the examples of akter's repository")
  })

  it("inspects nothing, and creates no database, in a folder where nothing has run", () => {
    const inspect = project.run("npx", ["--no-install", "akter", "inspect"], {
      DATABASE_URL: undefined,
    })
    expect(inspect.status).toBe(2)
    expect(inspect.stderr).toContain("PGlite in .akter/pglite holds no database")
    expect(existsSync(join(project.root, ".akter"))).toBe(false)
  })

  it(
    "scaffolds with akter init a project that builds with tsc and runs on plain node",
    { timeout: 600_000 },
    () => {
      const init = project.run("npx", ["--no-install", "akter", "init"])
      expect(init.stderr).toBe("")
      expect(init.status).toBe(0)
      expect(init.stdout).toMatch(/^updated {2}package\.json$/m)
      expect(init.stdout).toMatch(/^created {2}manifests\/account\.yaml$/m)
      expect(project.read("manifests/account.yaml")).toMatch(
        /^# yaml-language-server: \$schema=\.\.\/generated\/manifest\.schema\.json\n/,
      )
      expect(project.read(".gitignore").split("\n")).toContain(".akter/")
      const scripts = (
        JSON.parse(project.read("package.json")) as { scripts: Record<string, string> }
      ).scripts
      expect(scripts).toMatchObject({
        build: "akter generate && tsc",
        start: "node dist/src/main.js",
      })
      // A second init keeps everything.
      const again = project.run("npx", ["--no-install", "akter", "init"])
      expect(again.stdout).toMatch(/^kept {5}src\/main\.ts$/m)

      const build = project.run("npm", ["run", "build"])
      expect(build.status, build.stdout + build.stderr).toBe(0)
      expect(existsSync(join(project.root, "generated", "manifest.schema.json"))).toBe(true)
      const start = project.run("npm", ["start"], { DATABASE_URL: undefined, AKTER_LOG: "warn" })
      expect(start.status, start.stdout + start.stderr).toBe(0)
      expect(start.stdout).toContain("{ _tag: 'Success', value: { message: 'Welcome, Ada!' } }")
    },
  )

  // Checking effect's declarations too takes a minute or more on a busy machine.
  it(
    "type-checks akter's own declarations too (skipLibCheck off), with the registry's TypeScript and with 6.0",
    { timeout: 600_000 },
    () => {
      // Every entry point's declarations, not only those the scaffold happens to import.
      project.write(
        "entryPoints.ts",
        [
          'export type * as Akter from "akter"',
          'export type * as Testing from "akter/testing"',
          'export type * as Studio from "akter/studio"',
          "",
        ].join("\n"),
      )
      project.write(
        "tsconfig.strict.json",
        `${JSON.stringify({ extends: "./tsconfig.json", include: ["src", "generated", "entryPoints.ts"], compilerOptions: { noEmit: true, skipLibCheck: false } })}\n`,
      )
      const latest = project.run("npx", ["--no-install", "tsc", "-p", "tsconfig.strict.json"])
      expect(latest.stdout + latest.stderr).toBe("")
      expect(latest.status).toBe(0)
      const six = project.run(process.execPath, [
        join(REPO, "node_modules", "typescript", "bin", "tsc"),
        "-p",
        "tsconfig.strict.json",
      ])
      expect(six.stdout + six.stderr).toBe("")
      expect(six.status).toBe(0)
    },
  )

  it(
    "runs a deployed runner that loads no code generator and no TypeScript loader",
    { timeout: 300_000 },
    async () => {
      expect(existsSync(join(project.root, "dist", "src", "app.js"))).toBe(true)
      const log = join(project.root, "modules.log")
      const runner = spawn(
        process.execPath,
        [
          "--import",
          moduleLog(log),
          join(project.root, "node_modules", ".bin", "akter"),
          "run",
          "dist/src/app.js",
          "--data-dir",
          ".akter/runner",
        ],
        {
          cwd: project.root,
          env: { ...process.env, DATABASE_URL: "", AKTER_LOG: "info", NODE_OPTIONS: "" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      )
      let output = ""
      runner.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
      runner.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
      const exited = new Promise<number | null>((resolve) => runner.once("exit", resolve))
      const deadline = Date.now() + 240_000
      while (!output.includes("runner started")) {
        if (runner.exitCode !== null || Date.now() > deadline) {
          runner.kill("SIGKILL")
          throw new Error(`the runner did not start:\n${output}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      runner.kill("SIGTERM")
      expect(await exited).toBe(0)
      const loaded = readFileSync(log, "utf8").split("\n")
      expect(loaded).toContain(
        `${pathToFileURL(join(project.root, "node_modules/akter/dist/runtime/index.js")).href}`,
      )
      expect(loaded.filter((url) => GENERATORS.test(url))).toEqual([])
      expect(loaded.filter((url) => url.includes("/dist/codegen/emit/"))).toEqual([])
      expect(loaded.filter((url) => url.includes("/dist/codegen/manifest/"))).toEqual([])
    },
  )

  it("loads akter's entry with no code generator either", () => {
    const log = join(project.root, "import.log")
    writeFileSync(
      join(project.root, "load.mjs"),
      'await import("akter")\nawait import("akter/testing")\n',
    )
    const result = project.run(process.execPath, ["--import", moduleLog(log), "load.mjs"])
    expect(result.status, result.stderr).toBe(0)
    const loaded = readFileSync(log, "utf8").split("\n")
    expect(loaded.filter((url) => GENERATORS.test(url))).toEqual([])
  })

  it(
    "loads the database driver when a handle opens, and the runner and zod when one starts, not on import",
    { timeout: 300_000 },
    () => {
      const log = join(project.root, "lazy.log")
      writeFileSync(
        join(project.root, "lazy.mjs"),
        [
          'import { appendFileSync } from "node:fs"',
          `const mark = (stage) => appendFileSync(${JSON.stringify(log)}, \`-- \${stage}\\n\`)`,
          'const { createAkter, startRunner } = await import("akter")',
          'mark("imported akter")',
          'await import("akter/testing")',
          'mark("imported")',
          'const akter = await createAkter({ dataDir: "memory" })',
          'mark("opened")',
          "const runner = await startRunner({ akter, workflows: [] })",
          'mark("runner started")',
          "await runner.close()",
          "await akter.close()",
          "",
        ].join("\n"),
      )
      const result = project.run(process.execPath, ["--import", moduleLog(log), "lazy.mjs"], {
        AKTER_LOG: "error",
      })
      expect(result.status, result.stderr).toBe(0)
      const lines = readFileSync(log, "utf8").split("\n")
      const stage = (name: string) => lines.indexOf(`-- ${name}`)
      expect([
        stage("imported akter"),
        stage("imported"),
        stage("opened"),
        stage("runner started"),
      ]).not.toContain(-1)
      const driver = /\/node_modules\/(pg|@electric-sql\/pglite)\/|\/chunks\/openStorage-\w+\.js$/
      const runnerChunk = /\/chunks\/runner-\w+\.js$/
      const upTo = (name: string) => lines.slice(0, stage(name))
      // The code that opens a handle (kysely, the migrator) comes with createAkter, and zod with
      // what validates payloads (a client's calls, a runner): generated code imports zod itself,
      // the entry does not.
      const zod = /\/node_modules\/zod\//
      const handleChunk = /\/chunks\/openHandle-\w+\.js$/
      expect(
        upTo("imported akter").filter((url) => zod.test(url) || handleChunk.test(url)),
      ).toEqual([])
      expect(upTo("opened").filter((url) => handleChunk.test(url))).toHaveLength(1)
      expect(upTo("runner started").filter((url) => zod.test(url)).length).toBeGreaterThan(0)
      expect(upTo("imported").filter((url) => driver.test(url) || runnerChunk.test(url))).toEqual(
        [],
      )
      // Loaded by the open, and by the start: the log sees them, so their absence above means something.
      expect(
        upTo("opened").filter((url) => url.includes("/node_modules/pg/")).length,
      ).toBeGreaterThan(0)
      expect(
        upTo("opened").filter((url) => url.includes("/@electric-sql/pglite/")).length,
      ).toBeGreaterThan(0)
      expect(upTo("opened").filter((url) => runnerChunk.test(url))).toEqual([])
      expect(upTo("runner started").filter((url) => runnerChunk.test(url))).toHaveLength(1)
    },
  )

  it(
    "refuses a TypeScript app module without a loader, saying how to run it, and runs it through the project's tsx",
    { timeout: 600_000 },
    async () => {
      const refused = project.run("npx", ["--no-install", "akter", "run", "src/app.ts"], {
        DATABASE_URL: "",
      })
      expect(refused.status).toBe(2)
      expect(refused.stderr).toContain(
        "cannot load src/app.ts: src/app.ts is TypeScript, which Node does not run by itself: compile it (`npx tsc`, then `akter run` the .js file it writes), or install a TypeScript loader in the project (`npm install --save-dev tsx`) and akter uses it",
      )
      const installed = project.run("npm", ["install", "--save-dev", "tsx"])
      expect(installed.status, installed.stderr).toBe(0)
      const runner = spawn(
        join(project.root, "node_modules", ".bin", "akter"),
        ["run", "src/app.ts", "--data-dir", ".akter/ts-runner"],
        {
          cwd: project.root,
          env: { ...process.env, DATABASE_URL: "", AKTER_LOG: "info", NODE_OPTIONS: "" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      )
      let output = ""
      runner.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
      runner.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
      const exited = new Promise<number | null>((resolve) => runner.once("exit", resolve))
      const deadline = Date.now() + 240_000
      while (!output.includes("runner started")) {
        if (runner.exitCode !== null || Date.now() > deadline) {
          runner.kill("SIGKILL")
          throw new Error(`the runner of src/app.ts did not start:\n${output}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(output).toContain('"workflows":["Account/welcome"]')
      runner.kill("SIGTERM")
      expect(await exited).toBe(0)
    },
  )
})

it("refuses to run a compiled copy inside akter's own repository, which may be older than its sources", () => {
  const { path } = packedTarball()
  const copy = mkdtempSync(join(tmpdir(), "akter-stale-build-"))
  try {
    expect(spawnSync("tar", ["xzf", path, "-C", copy]).status).toBe(0)
    const root = join(copy, "package")
    // What a checkout of the repository has beside its dist/: the sources.
    symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"), "dir")
    mkdirSync(join(root, "runtime"))
    cpSync(join(REPO, "runtime", "packageFiles.ts"), join(root, "runtime", "packageFiles.ts"))
    const result = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `await import(${JSON.stringify(join(root, "dist", "runtime", "index.js"))})`,
      ],
      { encoding: "utf8" },
    )
    expect(result.status).not.toBe(0)
    expect(result.stderr).toContain(
      `akter: ${join(root, "dist")} is a build inside akter's repository, and may be older than its sources.`,
    )
  } finally {
    rmSync(copy, { recursive: true, force: true })
  }
}, 600_000)
