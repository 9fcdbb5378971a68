/**
 * `npm run build` (and `prepack`): the published package's dist/.
 *
 * - JavaScript: esbuild bundles the three public entries (`akter`, `akter/testing`,
 *   `akter/studio`) and the CLI
 *   into ES modules for Node 20, split into shared chunks so that the CLI and an application's
 *   `import "akter"` share one copy of every runtime module (one set of handles, one set of error
 *   classes), and every command stays a chunk loaded only when it runs. kysely is bundled in:
 *   loading its 263 modules one by one was most of the cost of `import("akter")`. The peers
 *   (`effect`, `zod`) and the other dependencies stay imports, resolved in the user's project.
 *   Source maps carry their sources.
 * - Types: tsc writes the declarations of the runtime and the studio (the public entries and what they refer to)
 *   beside the bundles, and type-checks it on the way.
 */
import { spawnSync } from "node:child_process"
import { copyFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"
import { bundleOptions } from "./bundleOptions.js"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const DIST = join(ROOT, "dist")

rmSync(DIST, { recursive: true, force: true })

const declarations = spawnSync(
  process.execPath,
  [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"],
  { cwd: ROOT, stdio: "inherit" },
)
if (declarations.status !== 0) process.exit(declarations.status ?? 1)

await build({
  ...bundleOptions(ROOT),
  entryPoints: ["runtime/index.ts", "runtime/testing/index.ts", "studio/index.ts", "cli/main.ts"],
  outdir: DIST,
  outbase: ".",
  // codegen/emit/generateState.ts reads this folder's names (content hashes) as the generator's fingerprint.
  chunkNames: "chunks/[name]-[hash]",
  sourcemap: true,
  sourcesContent: true,
  legalComments: "linked",
})

// kysely is MIT: its notice goes with the code of it that is bundled.
copyFileSync(join(ROOT, "node_modules", "kysely", "LICENSE"), join(DIST, "kysely.LICENSE"))
