/**
 * akter as a user gets it: the tarball `npm pack` makes (its prepack builds dist/ from the sources
 * of this checkout), installed into a fresh project outside the repository with `effect` and `zod`
 * from the npm registry, at the versions `npm install` picks for a user today.
 *
 * Packing compiles the whole package, so the tarball is made once per content of everything that
 * goes into it (its sources, migrations, package.json, README...) and shared — by every test file
 * of a run and by later runs — under the OS temp dir, keyed by that content's hash: a source change
 * always makes a new tarball, never reuses a stale one. Concurrent test files wait on a lock for
 * the one that packs.
 *
 * The registry is a service like Postgres: without it, `describeWithRegistry` suites fail under
 * `CI=true` and are reported skipped, with the reason, otherwise.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process"
import { createHash } from "node:crypto"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, it } from "vitest"

export const REPO = fileURLToPath(new URL("../../", import.meta.url))

/** What the tarball is made of: a change to any of these makes a new one. */
const PACKED_INPUTS = [
  "package.json",
  "package-lock.json",
  "tsconfig.json",
  "tsconfig.build.json",
  "README.md",
  "docs",
  "bin",
  "runtime",
  "codegen",
  "cli",
  "studio",
  "migrations",
]

const filesUnder = (path: string): string[] => {
  if (!existsSync(path)) return []
  if (!statSync(path).isDirectory()) return [path]
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name)))
}

/** sha256 of every packed input's path and bytes. */
export const packageContentHash = (): string => {
  const hash = createHash("sha256")
  for (const input of PACKED_INPUTS) {
    for (const file of filesUnder(join(REPO, input))) {
      hash.update(`\0${relative(REPO, file)}\0`).update(readFileSync(file))
    }
  }
  return hash.digest("hex").slice(0, 16)
}

const run = (
  command: string,
  args: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string | undefined>> = {},
): SpawnSyncReturns<string> =>
  spawnSync(command, [...args], {
    cwd,
    encoding: "utf8",
    env: {
      ...process.env,
      npm_config_audit: "false",
      npm_config_fund: "false",
      npm_config_update_notifier: "false",
      ...env,
    },
    timeout: 600_000,
  })

const check = (result: SpawnSyncReturns<string>, what: string): SpawnSyncReturns<string> => {
  if (result.status !== 0) {
    throw new Error(
      `${what} failed (exit ${result.status}):\n${result.stdout}\n${result.stderr}${String(result.error ?? "")}`,
    )
  }
  return result
}

export interface PackedTarball {
  readonly path: string
  /** npm pack's own report: every packed file with its size, the tarball size and the unpacked size. */
  readonly files: readonly { readonly path: string; readonly size: number }[]
  readonly size: number
  readonly unpackedSize: number
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/**
 * The tarball of this checkout, packed once per content. Synchronous, so a suite can call it while
 * it collects its tests.
 */
export const packedTarball = (): PackedTarball => {
  const folder = join(tmpdir(), `akter-pack-${packageContentHash()}`)
  const report = join(folder, "pack.json")
  const lock = `${folder}.lock`
  for (;;) {
    if (existsSync(report)) {
      return JSON.parse(readFileSync(report, "utf8")) as PackedTarball
    }
    try {
      mkdirSync(lock)
    } catch {
      // Another process packs this content: wait for it, unless it died mid-way.
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 10 * 60_000) {
        rmSync(lock, { recursive: true, force: true })
      }
      sleepSync(500)
      continue
    }
    try {
      rmSync(folder, { recursive: true, force: true })
      mkdirSync(folder, { recursive: true })
      const packed = check(
        run("npm", ["pack", "--json", "--pack-destination", folder], REPO),
        "npm pack",
      )
      const [entry] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as {
        filename: string
        size: number
        unpackedSize: number
        files: { path: string; size: number }[]
      }[]
      const tarball: PackedTarball = {
        path: join(folder, entry!.filename),
        files: entry!.files.map((file) => ({ path: file.path, size: file.size })),
        size: entry!.size,
        unpackedSize: entry!.unpackedSize,
      }
      writeFileSync(report, JSON.stringify(tarball))
      return tarball
    } finally {
      rmSync(lock, { recursive: true, force: true })
    }
  }
}

export interface InstalledProject {
  readonly root: string
  readonly tarball: PackedTarball
  write(path: string, text: string): void
  read(path: string): string
  /** Runs a command in the project, its output as text; PATH finds the project's own bins first. */
  run(
    command: string,
    args: readonly string[],
    env?: Readonly<Record<string, string | undefined>>,
  ): SpawnSyncReturns<string>
  remove(): void
}

/**
 * An empty ESM project under the OS temp dir (outside the repository), with nothing installed: a
 * test installs the tarball (`tarball.path`) as a user would install `akter`.
 */
export const freshProject = (name: string): InstalledProject => {
  const tarball = packedTarball()
  const root = mkdtempSync(join(tmpdir(), `${name}-`))
  const project: InstalledProject = {
    root,
    tarball,
    write: (path, text) => {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    },
    read: (path) => readFileSync(join(root, path), "utf8"),
    run: (command, args, env = {}) =>
      run(command, args, root, {
        PATH: `${join(root, "node_modules", ".bin")}:${process.env["PATH"] ?? ""}`,
        ...env,
      }),
    remove: () => rmSync(root, { recursive: true, force: true }),
  }
  return project
}

/**
 * A fresh project with the tarball installed beside `effect` and `zod` from the registry (and the
 * given dev dependencies), as the README's install step does.
 */
export const installedProject = (
  name: string,
  devDependencies: readonly string[] = [],
): InstalledProject => {
  const project = freshProject(name)
  project.write(
    "package.json",
    `${JSON.stringify({ name, private: true, type: "module" }, null, 2)}\n`,
  )
  check(
    project.run("npm", ["install", project.tarball.path, "effect", "zod"]),
    "npm install of the tarball, effect and zod",
  )
  if (devDependencies.length > 0) {
    check(
      project.run("npm", ["install", "--save-dev", ...devDependencies]),
      `npm install --save-dev ${devDependencies.join(" ")}`,
    )
  }
  return project
}

const registryProblem = (): string | undefined => {
  const probe = run("npm", ["view", "effect", "version"], REPO)
  return probe.status === 0
    ? undefined
    : `the npm registry does not answer (npm view effect version: ${probe.stderr.trim().split("\n")[0] ?? probe.status})`
}

let registryChecked: string | undefined | null = null

/**
 * `describe` for suites that install from the npm registry: without it, one test that fails under
 * `CI=true` and is skipped with the reason otherwise.
 */
export const describeWithRegistry = (title: string, suite: () => void) => {
  if (registryChecked === null) registryChecked = registryProblem()
  const problem = registryChecked
  if (problem === undefined) {
    describe(title, suite)
    return
  }
  describe(title, () => {
    if (process.env["CI"] === "true") {
      it("needs the npm registry under CI", () => {
        throw new Error(problem)
      })
    } else it.skip(`skipped: ${problem}`, () => {})
  })
}
