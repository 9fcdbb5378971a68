/**
 * The probe workflows (test/fixtures/runtime/probe.yaml) as an application module, for a child
 * process's `akter run test/observability/probeApp.ts`.
 */
import { makeProbe } from "../runtime/probeWorkflows.js"

export const workflows = (await makeProbe()).workflows
