/**
 * Temporary projects for the code generation tests: a folder outside the repository with its own
 * package.json and manifests, and `node_modules` links to this repository (as `akter`) and to the
 * libraries generated code imports, the way an installed akter would find them.
 */
import { spawn, spawnSync } from "node:child_process"
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { REPO } from "./typeCheck.js"

export interface TempProject {
  readonly root: string
  /** Writes a file under the root, creating folders. */
  write(path: string, text: string): void
  read(path: string): string
  remove(): void
}

export const createTempProject = (
  options: {
    /** package.json `"akter"` settings. */
    readonly akter?: Readonly<Record<string, unknown>>
    /** Folder (under the root) to copy the example manifests into; none when undefined. */
    readonly manifests?: string
  } = {},
): TempProject => {
  const root = mkdtempSync(join(tmpdir(), "akter-codegen-"))
  const project: TempProject = {
    root,
    write: (path, text) => {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    },
    read: (path) => readFileSync(join(root, path), "utf8"),
    remove: () => rmSync(root, { recursive: true, force: true }),
  }
  project.write(
    "package.json",
    `${JSON.stringify({ name: "user-app", private: true, type: "module", ...(options.akter === undefined ? {} : { akter: options.akter }) }, null, 2)}\n`,
  )
  mkdirSync(join(root, "node_modules"))
  symlinkSync(REPO, join(root, "node_modules", "akter"), "dir")
  for (const library of ["effect", "zod"]) {
    symlinkSync(join(REPO, "node_modules", library), join(root, "node_modules", library), "dir")
  }
  if (options.manifests !== undefined) {
    cpSync(join(REPO, "manifests"), join(root, options.manifests), { recursive: true })
  }
  return project
}

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the real `akter` command, as a user would, from `cwd`. */
export const runAkter = (cwd: string, args: readonly string[]): CliResult => {
  const result = spawnSync(process.execPath, [join(REPO, "bin", "akter.js"), ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** Starts the real `akter` command without waiting for it, e.g. `generate --watch`. */
export const startAkter = (cwd: string, args: readonly string[]) =>
  spawn(process.execPath, [join(REPO, "bin", "akter.js"), ...args], { cwd, stdio: "pipe" })

/** Every file under `dir` with its bytes, by `/`-separated relative path, for byte comparisons. */
export const folderSnapshot = (dir: string): Record<string, string> => {
  const snapshot: Record<string, string> = {}
  const walk = (relative: string) => {
    for (const entry of readdirSync(join(dir, relative), { withFileTypes: true })) {
      const path = relative === "" ? entry.name : `${relative}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else snapshot[path] = readFileSync(join(dir, path)).toString("base64")
    }
  }
  walk("")
  return snapshot
}
