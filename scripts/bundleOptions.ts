/**
 * How akter's JavaScript is bundled: the settings the published package's build (scripts/build.ts)
 * and the benchmark's bundled trials (bench/bundledTrials.ts) share, so that the benchmark runs
 * the runtime as a user's `node` loads it. ES modules for Node 20, split into shared chunks; kysely
 * is bundled in, and every other dependency and peer (`effect`, `zod`, `pg`, …) stays an import,
 * resolved in the project that installs akter.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { BuildOptions } from "esbuild"

/** Bundled rather than imported. */
const BUNDLED = new Set(["kysely"])

/** The esbuild options of a bundle of akter's code under `root` (the repository). */
export const bundleOptions = (root: string): BuildOptions => {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    readonly dependencies: Record<string, string>
    readonly peerDependencies: Record<string, string>
  }
  const external = [
    ...Object.keys(manifest.peerDependencies),
    ...Object.keys(manifest.dependencies).filter((name) => !BUNDLED.has(name)),
  ].flatMap((name) => [name, `${name}/*`])
  return {
    absWorkingDir: root,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    external,
    logLevel: "warning",
  }
}
