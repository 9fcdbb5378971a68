/**
 * The emit transaction: append the event to the owner's log and, in the same transaction, arm the
 * timers of the owner's executions waiting for it, so a wait never misses an event that committed.
 */
import { randomUUID } from "node:crypto"
import { UnknownEvent } from "../errors.js"
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { Caller } from "../model/caller.js"
import type { OwnerRegistration } from "../model/registration.js"
import { ensureOwner } from "../owners/ownerStore.js"
import { placeOwner } from "../owners/routing.js"
import { appendEvent } from "../events/eventLog.js"
import { executionsWaitingFor } from "../engine/stepStore.js"
import { armTimersNow } from "../outbox/outboxStore.js"
import { notifyBucket } from "../outbox/wakeups.js"
import type { EmitOptions, EmitReceipt } from "./clientApi.js"
import { encodePayload } from "./payloads.js"
import { checkCommandId, checkOwnerId } from "./ownerIds.js"
import { claimReceipt, completeReceipt } from "./receiptStore.js"

export const emitEvent = async (
  internals: AkterInternals,
  registration: OwnerRegistration,
  caller: Caller,
  ownerId: string,
  event: string,
  payload: unknown,
  options: EmitOptions = {},
): Promise<EmitReceipt> => {
  const schema = Object.hasOwn(registration.events, event) ? registration.events[event] : undefined
  if (schema === undefined) throw new UnknownEvent(registration.owner, event, registration.source)
  const invalidOwner = checkOwnerId(ownerId)
  if (invalidOwner !== undefined) throw invalidOwner
  const encoded = encodePayload(
    `payload of event ${event}`,
    schema,
    payload,
    internals.maxPayloadBytes,
  )
  if (!("stored" in encoded)) throw encoded
  const owner = placeOwner({ tenant: caller.tenant, ownerType: registration.owner, ownerId })
  const invalidCommand =
    options.commandId === undefined ? undefined : checkCommandId(options.commandId)
  if (invalidCommand !== undefined) throw invalidCommand
  const commandId = options.commandId ?? randomUUID()
  const { clock } = internals
  faultPoint("emit.before")
  const sequence = await internals.storage.db.transaction().execute(async (tx) => {
    await ensureOwner(tx, clock, owner)
    const receipt = await claimReceipt(tx, clock, owner, commandId, "emit")
    if (receipt.earlier !== undefined) return Number(receipt.earlier)
    const appended = await appendEvent(tx, clock, owner, event, encoded.stored)
    const waiting = await executionsWaitingFor(tx, owner, [event])
    await armTimersNow(tx, clock, owner, waiting)
    await completeReceipt(tx, owner, commandId, String(appended))
    if (waiting.length > 0 && internals.storage.backend === "postgres") {
      await notifyBucket(tx, owner.bucket)
    }
    return appended
  })
  faultPoint("emit.after")
  internals.wakeups.wakeBucket(owner.bucket)
  return { sequence }
}
