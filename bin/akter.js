#!/usr/bin/env node
// The `akter` command. From the npm package it runs the compiled CLI in dist/ on plain Node. In
// akter's own repository, where the TypeScript sources sit beside this file (they are never
// packed), it runs those sources instead, so a dist/ older than them is never what runs.
import { existsSync } from "node:fs"

const sources = new URL("../cli/main.ts", import.meta.url)
const cli = existsSync(sources)
  ? await import("./fromSources.js").then((module) => module.loadSources())
  : { main: (await import("../dist/cli/main.js")).main, extraCommands: {} }
process.exitCode = await cli.main(process.argv.slice(2), cli.extraCommands)
