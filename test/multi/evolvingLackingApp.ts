/** `akter run test/multi/evolvingLackingApp.ts`: the deployment that lacks a step and a marker. */
import { heldUntilReleased } from "../support/heldStart.js"
import { evolvingWorkflows, lackingRegistration } from "./evolvingWorkflows.js"

export const registration = await lackingRegistration()
export const workflows = evolvingWorkflows(registration, false)

await heldUntilReleased()
