/**
 * The `wait` step: the first event of its name, logged after the cursor its execution's start
 * recorded, that passes the body's `where`, or its timeout. The registration records where the scan
 * starts; each pass scans the log from where the last one stopped and parks until an event or the
 * due time wakes it. An event logged before the timeout's settle wins over the timeout.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { sql } from "kysely"
import { eventsAfter, type LoggedEvent } from "../../events/eventLog.js"
import type { WaitOutcome } from "../../model/exit.js"
import { schemaOf } from "../../model/schemaOf.js"
import { decodeJson } from "../../storage/codec.js"
import { existsIn } from "../../storage/statementParts.js"
import { decodeExit, encodeExit, migrateRecorded } from "../recordedExits.js"
import { PassAbandoned, RecordedDefect } from "../signals.js"
import type { StepEnvironment } from "../stepEnvironment.js"
import {
  beginWaitPart,
  recordScannedPart,
  settleStepsPart,
  unseenEventsPart,
} from "../stepStore.js"
import {
  durationMsOf,
  interruptIfAsked,
  settledRow,
  stepKey,
  type StepKindEngine,
} from "./stepKindEngine.js"

/** Events read from the log per query while a wait scans. */
const EVENT_PAGE = 256

/** `wf.<wait>(options?)`: the first event of its name after the cursor that passes `where`, or its timeout. */
const waitMethod =
  (env: StepEnvironment, step: string) =>
  (options: { where?: (payload: unknown) => boolean; timeout?: Duration.Input } = {}) =>
    Effect.gen(function* () {
      const { state, internals } = env
      const declared = state.registration.canonical.steps[step]!
      const event = declared.event!
      const payloadSchema = schemaOf(declared.payload!, "tolerant")
      const declaredTimeout = state.registration.steps[step]?.timeoutMs
      const timed = declaredTimeout !== undefined
      const migrations = env.implementation.migrations.events?.[event]
      const earlierShapes = Object.entries(state.registration.earlier.events?.[event] ?? {})
      /**
       * A logged event's payload as the wait reads it: as the current type, or else through the
       * migration of the first earlier shape it matches (the log does not record the shape an
       * event was emitted under); `undefined` when it matches none.
       */
      const readLogged = (payload: unknown): { readonly value: unknown } | undefined => {
        const parsed = payloadSchema.safeParse(payload)
        if (parsed.success) return { value: parsed.data }
        for (const [migration, shape] of earlierShapes) {
          if (!schemaOf(shape, "tolerant").safeParse(payload).success) continue
          return {
            value: migrateRecorded(
              `event ${event} read by wait ${step}`,
              payload,
              { migration, shape },
              migrations?.[migration],
              declared.payload!,
            ),
          }
        }
        return undefined
      }
      const present = (recorded: WaitOutcome): Effect.Effect<unknown> => {
        const migrated = state.migrations.steps[step]
        let outcome = recorded
        if (migrated !== undefined && "event" in recorded) {
          try {
            outcome = {
              event: migrateRecorded(
                `the event recorded by wait ${step}`,
                recorded.event,
                migrated,
                migrations?.[migrated.migration],
                declared.payload!,
              ),
            }
          } catch (error) {
            return Effect.die(error)
          }
        }
        if ("event" in outcome) {
          const parsed = payloadSchema.safeParse(outcome.event)
          if (!parsed.success) {
            return Effect.die(
              new RecordedDefect(
                `wait ${step}: the recorded event no longer matches ${event}'s payload type`,
              ),
            )
          }
          return Effect.succeed(timed ? Option.some(parsed.data) : parsed.data)
        }
        return timed
          ? Effect.succeed(Option.none())
          : Effect.die(
              new RecordedDefect(
                `wait ${step} recorded a timeout, but the manifest no longer gives it one`,
              ),
            )
      }
      const row = state.rowsOf(step)[0]
      if (row?.exit != null) {
        const exit = decodeExit(row.exit, step)
        if (exit._tag !== "Success")
          return yield* Effect.die(new RecordedDefect(`wait ${step} recorded a failure`))
        return yield* present(exit.value as WaitOutcome)
      }
      yield* interruptIfAsked(env)
      const key = stepKey(env, step)
      const timeoutMs =
        options.timeout !== undefined
          ? yield* durationMsOf(step, options.timeout)
          : (declaredTimeout ?? null)
      let scanned: number
      let due: number | null
      if (row === undefined) {
        // The wait sees events after the cursor its execution's start recorded.
        yield* env.startRecorded
        state.beginWork()
        const waiting = beginWaitPart(internals.clock, key, event, state.cursor, timeoutMs)
        const registered = yield* env
          .write("wait", {
            parts: [waiting],
            // An emit in one statement detects this registration by the owner row's new version.
            touchesOwner: true,
            select: sql`(SELECT wait_after FROM ${sql.id(waiting.name)}) AS wait_after,
              (SELECT due_at_ms FROM ${sql.id(waiting.name)}) AS due_at_ms`,
            read: (row) => ({
              after: Number(row["wait_after"]),
              dueAtMs: row["due_at_ms"] === null ? null : Number(row["due_at_ms"]),
            }),
          })
          .pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
        scanned = registered.after
        due = registered.dueAtMs
        state.remember({
          ...settledRow(step, "wait", Buffer.alloc(0), env.now()),
          exit: null,
          settled_at_ms: null,
          wait_event: event,
          wait_after: registered.after,
          scanned,
          due_at_ms: due,
        })
      } else {
        scanned = row.scanned ?? row.wait_after ?? state.cursor
        due = row.due_at_ms
      }
      const settle = (outcome: WaitOutcome, matched: number | undefined) => {
        const stored = encodeExit({ _tag: "Success", value: outcome })
        const settled = settleStepsPart(internals.clock, key, [
          {
            step,
            attempt: key.attempt,
            exit: stored,
            ...(matched === undefined ? {} : { matched }),
          },
        ])
        env.hold([settled], [settled.name])
        if (matched !== undefined) {
          env.patchExecution({ cursor: matched })
          state.cursor = Math.max(state.cursor, matched)
        }
        state.remember({
          ...settledRow(step, "wait", stored, env.now()),
          wait_event: event,
          matched: matched ?? null,
        })
        return present(outcome)
      }
      for (;;) {
        state.beginWork()
        const match = yield* Effect.gen(function* () {
          for (;;) {
            // An event an emit of this process handed with its poke, when it is the next of the
            // name after the cursor, is what the log would answer first (and, on a short page,
            // alone: a later one would have poked again).
            const handed = state.handed
            const page: readonly Pick<LoggedEvent, "sequence" | "payload">[] =
              handed !== undefined &&
              handed.name === event &&
              handed.previous <= scanned &&
              handed.sequence > scanned
                ? [handed]
                : yield* Effect.promise(() =>
                    eventsAfter(internals.storage.db, state.owner, event, scanned, EVENT_PAGE),
                  )
            for (const logged of page) {
              const read = yield* Effect.try({
                try: () => readLogged(decodeJson(logged.payload)),
                catch: (error) => error,
              }).pipe(Effect.orDie)
              scanned = logged.sequence
              if (read === undefined) continue
              const where = options.where
              if (where === undefined || where(read.value))
                return { payload: read.value, sequence: logged.sequence }
            }
            if (page.length < EVENT_PAGE) return undefined
          }
        }).pipe(Effect.ensuring(Effect.sync(() => state.endWork())))
        if (match !== undefined) return yield* settle({ event: match.payload }, match.sequence)
        if (due !== null && env.now() >= due) {
          // An event in the log that the scan has not evaluated wins over the timeout.
          const unseen = unseenEventsPart(state.owner, [{ event, scanned }])
          const expired = settleStepsPart(
            internals.clock,
            key,
            [
              {
                step,
                attempt: key.attempt,
                exit: encodeExit({ _tag: "Success", value: { timedOut: true } }),
              },
            ],
            sql`NOT (SELECT seen FROM ${sql.id(unseen.name)})`,
          )
          const timedOut = yield* env.write("timeout", {
            parts: [
              recordScannedPart(state.routingKey, state.executionId, [{ step, scanned }]),
              unseen,
              expired,
            ],
            select: sql`${existsIn(expired.name)} AS timed_out,
              (SELECT seen FROM ${sql.id(unseen.name)}) AS seen`,
            read: (row) => ({ expired: row["timed_out"] === true, seen: row["seen"] === true }),
          })
          // Neither timed out nor an event to read: another writer settled the wait, and this
          // pass's memory is behind the database.
          if (!timedOut.expired && !timedOut.seen) {
            return yield* Effect.die(
              new PassAbandoned(`wait ${step} was settled by another writer`),
            )
          }
          if (timedOut.expired) {
            const outcome: WaitOutcome = { timedOut: true }
            state.remember({
              ...settledRow(
                step,
                "wait",
                encodeExit({ _tag: "Success", value: outcome }),
                env.now(),
              ),
              wait_event: event,
            })
            return yield* present(outcome)
          }
          continue
        }
        yield* env.park(step, { dueAtMs: due, scanned, event, attempt: 1 })
      }
    })

export const waitEngine: StepKindEngine = { method: waitMethod }
