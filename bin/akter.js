#!/usr/bin/env node
// The CLI is written in TypeScript; tsx's loader lets it run from source on Node 20.
import { register } from "tsx/esm/api"

register()
const { main } = await import("../codegen/cli/main.ts")
process.exitCode = await main(process.argv.slice(2))
