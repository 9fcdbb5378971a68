/**
 * Where akter's own files are at run time — its package.json and its migrations — whether this code
 * runs from the repository's TypeScript sources (`runtime/…`) or from the published package's
 * compiled bundle (`dist/…`): the package root is the nearest folder above this module that holds
 * a package.json (dist/ holds none).
 *
 * It also refuses to run a compiled copy inside akter's own repository: there dist/ may be older
 * than the sources beside it, and the repository's tools (the `akter` bin, vitest, tsc) all run the
 * sources through the `akter-source` export condition. A published package holds no sources, so
 * the check never fires for a user.
 */
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** True in the published package: this module was compiled to JavaScript. */
export const RUNS_COMPILED = import.meta.url.endsWith(".js")

const packageRootAbove = (dir: string): string =>
  existsSync(join(dir, "package.json")) || dirname(dir) === dir
    ? dir
    : packageRootAbove(dirname(dir))

/** The folder holding akter's package.json and migrations/. */
export const PACKAGE_ROOT = packageRootAbove(dirname(fileURLToPath(import.meta.url)))

export const MIGRATIONS_DIR = join(PACKAGE_ROOT, "migrations")

if (RUNS_COMPILED && existsSync(join(PACKAGE_ROOT, "runtime", "packageFiles.ts"))) {
  throw new Error(
    `akter: ${join(PACKAGE_ROOT, "dist")} is a build inside akter's repository, and may be older than its sources. ` +
      "Run the sources instead: `node bin/akter.js` for the CLI, and `node --conditions=akter-source --import tsx` for scripts importing akter.",
  )
}
