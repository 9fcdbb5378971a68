/**
 * A temporary project for the compatibility commands' end-to-end tests: a folder outside the
 * repository with its own package.json and `manifests/`, and the real `akter` CLI run in it as a
 * child process (asynchronously, so a test can serve a socket or hold a database meanwhile).
 */
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { shopYaml, type ShopVersion } from "../startup/shopVersions.js"

const BIN = fileURLToPath(new URL("../../bin/akter.js", import.meta.url))

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface CliProject {
  readonly root: string
  write(path: string, text: string): void
  read(path: string): string
  /** Puts a release of the shop manifest (test/fixtures/lock/shop) in `manifests/shop.yaml`. */
  useShop(version: ShopVersion): string
  /** Runs `akter ...args` in the project; `env` entries set to undefined are removed. */
  akter(
    args: readonly string[],
    env?: Readonly<Record<string, string | undefined>>,
  ): Promise<CliResult>
  remove(): void
}

export const createCliProject = (): CliProject => {
  const root = mkdtempSync(join(tmpdir(), "akter-cli-"))
  const project: CliProject = {
    root,
    write: (path, text) => {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    },
    read: (path) => readFileSync(join(root, path), "utf8"),
    useShop: (version) => {
      const text = shopYaml(version)
      project.write("manifests/shop.yaml", text)
      return text
    },
    akter: (args, env = {}) =>
      new Promise((resolve, reject) => {
        const environment: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" }
        for (const [name, value] of Object.entries(env)) {
          if (value === undefined) delete environment[name]
          else environment[name] = value
        }
        const child = spawn(process.execPath, [BIN, ...args], {
          cwd: root,
          env: environment,
          stdio: ["ignore", "pipe", "pipe"],
        })
        let stdout = ""
        let stderr = ""
        child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
        child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
        child.on("error", reject)
        child.on("close", (code) => resolve({ code, stdout, stderr }))
      }),
    remove: () => rmSync(root, { recursive: true, force: true }),
  }
  project.write("package.json", `${JSON.stringify({ name: "shop-app", private: true }, null, 2)}\n`)
  return project
}

/** Where `needle` first occurs in `text` (after `after`, if given), as 1-based line and column. */
export const positionOf = (text: string, needle: string, after?: string) => {
  const start = after === undefined ? 0 : text.indexOf(after)
  if (start < 0) throw new Error(`"${after}" is not in the text`)
  const offset = text.indexOf(needle, start)
  if (offset < 0) throw new Error(`"${needle}" is not in the text`)
  const before = text.slice(0, offset)
  return { line: before.split("\n").length, column: offset - before.lastIndexOf("\n") }
}

/** A GitHub Actions workflow command, parsed back: level, properties and the unescaped message. */
export interface Annotation {
  readonly level: string
  readonly properties: Readonly<Record<string, string>>
  readonly message: string
}

const unescape = (text: string) =>
  text
    .replaceAll("%0A", "\n")
    .replaceAll("%0D", "\r")
    .replaceAll("%3A", ":")
    .replaceAll("%2C", ",")
    .replaceAll("%25", "%")

/** Parses every `::level props::message` line of an output; other lines are ignored. */
export const parseAnnotations = (output: string): Annotation[] =>
  output
    .split("\n")
    .filter((line) => line.startsWith("::"))
    .map((line) => {
      const match = /^::(\w+)(?: ([^:]*))?::(.*)$/.exec(line)
      if (match === null) throw new Error(`not a workflow command: ${line}`)
      const properties: Record<string, string> = {}
      for (const pair of (match[2] ?? "").split(",").filter((p) => p !== "")) {
        const [name, value] = pair.split("=") as [string, string]
        properties[name] = unescape(value)
      }
      return { level: match[1]!, properties, message: unescape(match[3]!) }
    })

/**
 * `stderr` without the slow-stage progress lines (cli/slowProgress.ts), which a command connecting
 * to a database prints only when a stage takes longer than a moment — on a loaded machine, sometimes.
 */
export const withoutProgress = (stderr: string): string =>
  stderr.replace(/^akter [\w-]+: [^\n]*…\n/gm, "")
