/**
 * The vitest configuration of the StrykerJS runs (`npm run mutate`): the repository's, with a
 * longer hook timeout. A guard file's setup (a PGlite database and its migrations) runs once per
 * mutant, and on a machine shared with other test runs it can take longer than the two minutes the
 * suite allows it, which fails StrykerJS's initial run of the guards.
 */
import { defineConfig, mergeConfig } from "vitest/config"
import base from "../../vitest.config.js"

export default mergeConfig(base, defineConfig({ test: { hookTimeout: 600_000 } }))
