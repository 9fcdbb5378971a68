/**
 * Where a command finds the project it works on: the root is the folder of the nearest
 * package.json above the current directory; the manifest and output folders come from the command
 * line, else from that package.json's `"akter": { "manifests": …, "out": … }`, else `manifests/`
 * and `generated/`. `"app"` names the implementation sources `akter check` lints (a path or glob, or
 * a list of them), as `--app` does.
 */
import { existsSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { dirname, join, resolve } from "node:path"
import { UsageError } from "./commandLine.js"

export interface ProjectFolders {
  readonly root: string
  readonly manifestsDir: string
  readonly outDir: string
  /** The `"app"` setting: paths or globs relative to the root; empty when not set. */
  readonly app: readonly string[]
}

export const DEFAULT_MANIFESTS = "manifests"
export const DEFAULT_OUT = "generated"

/** The folder of the nearest package.json at or above `cwd`; `cwd` itself when there is none. */
export const findProjectRoot = (cwd: string): string => {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir
    if (dirname(dir) === dir) return resolve(cwd)
  }
}

interface AkterSettings {
  readonly manifests?: string
  readonly out?: string
  readonly app?: string | readonly string[]
}

const SETTING_KEYS = ["manifests", "out", "app"]

const readSettings = async (root: string): Promise<AkterSettings> => {
  const file = join(root, "package.json")
  let parsed: unknown
  try {
    parsed = JSON.parse(await readFile(file, "utf8"))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {}
    throw new UsageError(`${file} is not valid JSON: ${(error as Error).message}`)
  }
  const settings = (parsed as { akter?: unknown } | null)?.akter
  if (settings === undefined) return {}
  if (typeof settings !== "object" || settings === null || Array.isArray(settings)) {
    throw new UsageError(
      `${file}: "akter" must be an object like { "manifests": "manifests", "out": "generated" }`,
    )
  }
  for (const key of Object.keys(settings)) {
    const value = (settings as Record<string, unknown>)[key]
    if (!SETTING_KEYS.includes(key)) {
      throw new UsageError(
        `${file}: unknown setting "akter.${key}" (known: ${SETTING_KEYS.join(", ")})`,
      )
    }
    if (key === "app") {
      const paths = Array.isArray(value) ? value : [value]
      if (paths.length === 0 || paths.some((item) => typeof item !== "string" || item === "")) {
        throw new UsageError(
          `${file}: "akter.app" must be a path or glob of the implementation sources, or a list of them`,
        )
      }
      continue
    }
    if (typeof value !== "string" || value === "") {
      throw new UsageError(`${file}: "akter.${key}" must be a folder path`)
    }
  }
  return settings as AkterSettings
}

/**
 * @example
 * const { root, manifestsDir, outDir } = await projectFolders({ cwd: process.cwd(), out: "src/generated" })
 */
export const projectFolders = async (options: {
  readonly cwd: string
  readonly manifests?: string | undefined
  readonly out?: string | undefined
}): Promise<ProjectFolders> => {
  const root = findProjectRoot(options.cwd)
  const settings = await readSettings(root)
  const folder = (flag: string | undefined, setting: string | undefined, fallback: string) =>
    flag !== undefined ? resolve(options.cwd, flag) : resolve(root, setting ?? fallback)
  return {
    root,
    manifestsDir: folder(options.manifests, settings.manifests, DEFAULT_MANIFESTS),
    outDir: folder(options.out, settings.out, DEFAULT_OUT),
    app: (typeof settings.app === "string" ? [settings.app] : (settings.app ?? [])).map((pattern) =>
      resolve(root, pattern),
    ),
  }
}
