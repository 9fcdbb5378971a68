/** `akter run test/multi/evolvingFullApp.ts`: the deployment that has every step and marker. */
import { heldUntilReleased } from "../support/heldStart.js"
import { evolvingWorkflows, fullRegistration } from "./evolvingWorkflows.js"

export const registration = await fullRegistration()
export const workflows = evolvingWorkflows(registration, true)

await heldUntilReleased()
