/**
 * The emit transaction: append the event to the owner's log and, in the same transaction, poke the
 * timers of the owner's executions waiting for it, so a wait never misses an event that committed.
 * Two statements: the first claims the command's receipt and locks the owner (reserving the
 * sequence); the second, with a snapshot taken after the lock, appends and wakes. A pass of this
 * process waiting for the event is handed the poke as soon as the emit commits, with no claim of its
 * timer (outbox/wakeups.ts `takePoked`).
 */
import { randomUUID } from "node:crypto"
import { UnknownEvent } from "../errors.js"
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { Caller } from "../model/caller.js"
import type { OwnerRegistration } from "../model/registration.js"
import { placeOwner } from "../owners/routing.js"
import { appendEventPart } from "../events/eventLog.js"
import { reserveSequencePart } from "../owners/fence.js"
import { waitingForPart } from "../engine/stepStore.js"
import { pokeTimersPart } from "../outbox/outboxStore.js"
import { ANY_BUCKET, notifyColumn, WAKE_CHANNEL } from "../outbox/notifications.js"
import { composeStatement, existsIn } from "../storage/statementParts.js"
import { sql } from "kysely"
import type { EmitOptions, EmitReceipt } from "./clientApi.js"
import { idempotentCall } from "./databaseCalls.js"
import { encodePayload } from "./payloads.js"
import { checkCommandId, checkOwnerId } from "../model/ownerIds.js"
import { claimReceiptPart, completeReceiptPart, earlierOutcome } from "./receiptStore.js"

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
  // Retried under the same command id: a second emit of it appends nothing and reads the first's
  // sequence from its receipt.
  const append = () =>
    internals.storage.db.transaction().execute(async (tx) => {
      const receipt = claimReceiptPart(clock, owner, commandId, "emit")
      const reserved = reserveSequencePart(clock, owner, existsIn(receipt.name))
      const claimed = await composeStatement(
        [receipt, reserved],
        sql`(SELECT event_sequence FROM ${sql.id(reserved.name)}) AS sequence`,
      ).execute(tx)
      const next = claimed.rows[0]?.["sequence"]
      if (next === null || next === undefined)
        return { sequence: Number(await earlierOutcome(tx, owner, commandId)), poked: [] }
      // A new statement, so a new snapshot: every wait registered before the owner lock is seen.
      const appended = Number(next)
      const waiting = waitingForPart(owner, event)
      const servedHere = internals.wakeups.servedHere(owner.bucket)
      const poked = pokeTimersPart(clock, owner, waiting.name)
      const pokedWanted = sql<boolean>`EXISTS (SELECT 1 FROM ${sql.id(poked.name)} WHERE wanted)`
      const { rows } = await composeStatement(
        [
          appendEventPart(clock, owner, appended, event, encoded.stored),
          waiting,
          poked,
          completeReceiptPart(owner, commandId, String(appended)),
        ],
        sql.join([
          internals.storage.backend === "postgres"
            ? notifyColumn(
                WAKE_CHANNEL,
                // A poked timer wanting a manifest is for whichever runner serves it.
                sql`CASE WHEN ${pokedWanted} THEN ${ANY_BUCKET} ELSE ${String(owner.bucket)} END`,
                {
                  // A runner here serving the bucket is woken in memory; others only for executions
                  // wanting a manifest it may not run.
                  when: servedHere ? pokedWanted : existsIn(poked.name),
                },
              )
            : sql`true AS notified`,
          sql`(SELECT coalesce(json_agg(json_build_array(id, pokes)), '[]')
            FROM ${sql.id(poked.name)}) AS poked`,
        ]),
      ).execute(tx)
      const pokedRows = rows[0]?.["poked"] as [string, number | string][] | undefined
      return {
        sequence: appended,
        poked: (pokedRows ?? []).map(([executionId, pokes]) => ({
          executionId,
          pokes: Number(pokes),
        })),
      }
    })
  const { sequence, poked } = await idempotentCall(`emit ${event}`, internals, append)
  faultPoint("emit.after")
  // A pass of this process waiting for the event answers it at once; other pokes are claimed.
  if (!internals.wakeups.takePoked(owner.bucket, poked)) internals.wakeups.wakeBucket(owner.bucket)
  return { sequence }
}
