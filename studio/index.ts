/**
 * `akter/studio`: the web dashboard of executions, owners and runners, as a Fetch handler an
 * application mounts in its own server (`studioHandler`), and the node:http glue to serve it
 * (`serveFetchHandler`). `akter studio` serves the same handler from the command line.
 */
export { studioHandler, type StudioHandler, type StudioOptions } from "./studioHandler.js"
export { serveFetchHandler } from "./serveFetchHandler.js"
export type { CompatibilityVerdict } from "./compatibilityPage.js"
export type { ScheduleDeclarations } from "./schedulesPage.js"
