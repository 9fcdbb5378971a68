/**
 * The emit: append the event to the owner's log and, in the same commit, poke the timers of the
 * owner's executions waiting for it, so a wait never misses an event that committed. Usually one
 * statement (the owner's version and the waits read in its snapshot, the sequence reserved under
 * the owner's lock only if the owner is still that version); when a commit changed the owner in
 * between, or the command id was applied before, a transaction of two statements: the first
 * claims the command's receipt and locks the owner (reserving the sequence); the second, with a
 * snapshot taken after the lock, appends and wakes. A pass of this process waiting for the event
 * is handed the poke as soon as the emit commits, with no claim of its timer (outbox/wakeups.ts
 * `takePoked`), and the event with it, so that it need not read the log (events/eventLog.ts
 * `HandedEvent`).
 */
import { randomUUID } from "node:crypto"
import { UnknownEvent } from "../errors.js"
import type { AkterInternals } from "../akter.js"
import { faultPoint } from "../faults.js"
import type { Caller } from "../model/caller.js"
import type { OwnerRegistration } from "../model/registration.js"
import { placeOwner } from "../owners/routing.js"
import { appendEventPart, previousOfNameSql, type HandedEvent } from "../events/eventLog.js"
import { ownerVersionPart, reserveSequencePart } from "../owners/fence.js"
import { waitingForPart } from "../engine/stepStore.js"
import { pokeTimersPart } from "../outbox/outboxStore.js"
import { ANY_BUCKET, notifyColumn, WAKE_CHANNEL } from "../outbox/notifications.js"
import { composeStatement, existsIn } from "../storage/statementParts.js"
import { sql, type RawBuilder } from "kysely"
import type { PokedTimer } from "../outbox/wakeups.js"
import type { EmitOptions, EmitReceipt } from "./clientApi.js"
import { idempotentCall } from "./databaseCalls.js"
import { encodePayload } from "./payloads.js"
import { checkCommandId, checkOwnerId } from "../model/ownerIds.js"
import {
  claimReceiptPart,
  completeReceiptPart,
  earlierOutcome,
  recordReceiptPart,
} from "./receiptStore.js"

/**
 * What the one-statement emit raises when it must not apply alone: the owner changed between its
 * snapshot and its lock, or the command was applied before. Nothing of it committed.
 */
const EMIT_NOT_ALONE = "emit needs its transaction"

const isEmitNotAlone = (error: unknown) =>
  error instanceof Error && error.message === `akter: ${EMIT_NOT_ALONE}`

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
  const servedHere = internals.wakeups.servedHere(owner.bucket)
  /**
   * The final select of either form: the wake-up of other processes, the timers poked, and the
   * sequence of the event of this name before the appended one, which a pass here waiting for it
   * needs to take it without reading the log (read only when a timer was poked).
   */
  const wakeColumns = (poked: string, sequence: RawBuilder<unknown>) => {
    const pokedWanted = sql<boolean>`EXISTS (SELECT 1 FROM ${sql.id(poked)} WHERE wanted)`
    return sql.join([
      internals.storage.backend === "postgres"
        ? notifyColumn(
            WAKE_CHANNEL,
            // A poked timer wanting a manifest is for whichever runner serves it.
            sql`CASE WHEN ${pokedWanted} THEN ${ANY_BUCKET} ELSE ${String(owner.bucket)} END`,
            {
              // A runner here serving the bucket is woken in memory; others only for executions
              // wanting a manifest it may not run.
              when: servedHere ? pokedWanted : existsIn(poked),
            },
          )
        : sql`true AS notified`,
      sql`(SELECT coalesce(json_agg(json_build_array(id, pokes)), '[]')
        FROM ${sql.id(poked)}) AS poked`,
      sql`CASE WHEN ${existsIn(poked)} THEN ${previousOfNameSql(owner, event, sequence)}
        END AS previous`,
    ])
  }
  const pokedOf = (row: Readonly<Record<string, unknown>> | undefined, sequence: number) => {
    const handed: HandedEvent = {
      name: event,
      sequence,
      previous: Number(row?.["previous"] ?? 0),
      payload: encoded.stored,
    }
    return ((row?.["poked"] as [string, number | string][] | undefined) ?? []).map(
      ([executionId, pokes]): PokedTimer => ({ executionId, pokes: Number(pokes), event: handed }),
    )
  }
  // The emit in one statement, one round trip and one commit: it reads the owner's version and the
  // waits in its snapshot, then reserves the sequence under the owner's lock only if the row is
  // still that version. Every wait registration changes the owner row (owners/fence.ts
  // `touchingFence`), so one that committed between the snapshot and the lock — which the snapshot
  // lacks — shows as a new version; then, or when the command was applied before, the statement
  // aborts and the emit goes as the transaction below.
  const appendAlone = async () => {
    const version = ownerVersionPart(owner)
    const reserved = reserveSequencePart(clock, owner, sql`true`, version.name)
    const receipt = recordReceiptPart(clock, owner, commandId, "emit", reserved.name)
    const waiting = waitingForPart(owner, event)
    const poked = pokeTimersPart(clock, owner, waiting.name)
    const { rows } = await composeStatement(
      [
        version,
        reserved,
        receipt,
        appendEventPart(clock, owner, { reservedBy: reserved.name }, event, encoded.stored),
        waiting,
        poked,
      ],
      sql.join([
        sql`akter.require(${existsIn(receipt.name)}, ${EMIT_NOT_ALONE}) AS alone`,
        sql`(SELECT event_sequence FROM ${sql.id(reserved.name)}) AS sequence`,
        wakeColumns(poked.name, sql`(SELECT event_sequence FROM ${sql.id(reserved.name)})`),
      ]),
    ).execute(internals.storage.db)
    const sequence = Number(rows[0]?.["sequence"])
    return { sequence, poked: pokedOf(rows[0], sequence) }
  }
  // Retried under the same command id: a second emit of it appends nothing and reads the first's
  // sequence from its receipt.
  const appendInTransaction = () =>
    internals.storage.db.transaction().execute(async (tx) => {
      const receipt = claimReceiptPart(clock, owner, commandId, "emit")
      const reserved = reserveSequencePart(clock, owner, existsIn(receipt.name))
      const claimed = await composeStatement(
        [receipt, reserved],
        sql`(SELECT event_sequence FROM ${sql.id(reserved.name)}) AS sequence`,
      ).execute(tx)
      const next = claimed.rows[0]?.["sequence"]
      if (next === null || next === undefined)
        return {
          sequence: Number(await earlierOutcome(tx, owner, commandId)),
          poked: [] as PokedTimer[],
        }
      // A new statement, so a new snapshot: every wait registered before the owner lock is seen.
      const appended = Number(next)
      const waiting = waitingForPart(owner, event)
      const poked = pokeTimersPart(clock, owner, waiting.name)
      const { rows } = await composeStatement(
        [
          appendEventPart(clock, owner, appended, event, encoded.stored),
          waiting,
          poked,
          completeReceiptPart(owner, commandId, String(appended)),
        ],
        wakeColumns(poked.name, sql`${appended}::bigint`),
      ).execute(tx)
      return { sequence: appended, poked: pokedOf(rows[0], appended) }
    })
  const append = () =>
    appendAlone().catch((error: unknown) => {
      if (!isEmitNotAlone(error)) throw error
      return appendInTransaction()
    })
  const { sequence, poked } = await idempotentCall(`emit ${event}`, internals, append)
  faultPoint("emit.after")
  // A pass of this process waiting for the event answers it at once; other pokes are claimed.
  if (!internals.wakeups.takePoked(owner.bucket, poked)) internals.wakeups.wakeBucket(owner.bucket)
  return { sequence }
}
