/**
 * Commands only akter's own repository has, added to the CLI by bin/fromSources.js: the demo runs
 * the repository's example manifests, generated SDK and example app, none of which is packed.
 */
import type { Command } from "../../cli/main.js"

export const repositoryCommands: Readonly<Record<string, Command>> = {
  demo: {
    summary:
      "the main job: hundreds of executions on embedded PGlite through a runner killed halfway",
    load: () => import("./demoCommand.js"),
  },
}
