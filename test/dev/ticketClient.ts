/**
 * A client process of the tutorial's Ticket workflow, with no runner of its own, connected through
 * `DATABASE_URL` (what `akter dev` printed): `open TICKET TEXT` starts triage and prints the
 * execution id and its status; `assign TICKET AGENT` emits Assigned, attaches to the ticket's
 * execution (a second start with the same key) and prints its result.
 */
import { createAkter, makeOwnerClient } from "../../runtime/index.js"
import { registration } from "./ticketApp.js"

const [command, ticketId, word] = process.argv.slice(2)
const akter = await createAkter({ databaseUrl: process.env["DATABASE_URL"] })
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const tickets = makeOwnerClient<any>(akter, registration)
if (command === "open") {
  const execution = await tickets.triage.start(ticketId, { ticketId, text: word })
  console.log(`opened ${execution.executionId} in process ${process.pid}`)
} else {
  await tickets.emit(ticketId, "Assigned", { agent: word })
  const execution = await tickets.triage.start(ticketId, { ticketId, text: "(attach)" })
  console.log(JSON.stringify(await execution.result({ timeout: "60 seconds" })))
}
await akter.close()
