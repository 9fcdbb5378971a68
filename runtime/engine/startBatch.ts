/**
 * The batched statement of a client's starts: the starts of concurrent callers of one handle that no
 * runner of the process takes (engine/localStarts.ts) — each owner created if new, each execution
 * inserted with its markers, start manifest and a timer due now, and the runners of each bucket
 * woken once — sent as one statement, one round trip and one commit (storage/statementBatcher.ts
 * gathers them). This module only composes: each part's SQL is its table's store's
 * (owners/fence.ts, executionStore.ts, stepStore.ts, storage/manifestStore.ts,
 * outbox/outboxStore.ts, outbox/notifications.ts).
 */
import { sql } from "kysely"
import { batchCreateOwnersSql } from "../owners/fence.js"
import type { OwnerPlacement } from "../owners/routing.js"
import { batchArmStartTimersSql } from "../outbox/outboxStore.js"
import { notification, WAKE_CHANNEL } from "../outbox/notifications.js"
import type { DatabaseClock } from "../storage/clock.js"
import type { Queryable } from "../storage/database.js"
import { batchRecordStartManifestsSql } from "../storage/manifestStore.js"
import type { StatementBatcher } from "../storage/statementBatcher.js"
import { batchInputSql, ownerColumns, startColumns, startsMarking } from "./batchInput.js"
import { BOOLEAN, TEXT, type InputColumn } from "../storage/rowsSource.js"
import { batchInsertExecutionsSql, type BatchedStartFields } from "./executionStore.js"
import { batchInsertMarkersSql } from "./stepStore.js"

/** One start of a client's batch: with no parent, no concurrency group, nothing alongside. */
export interface BatchedClientStart {
  readonly owner: OwnerPlacement
  readonly executionId: string
  readonly start: BatchedStartFields
  /** Its caller may wait for the result in this process while a runner elsewhere runs it. */
  readonly awaited: boolean
}

/** A handle's batcher of client starts; answers whether each start created its execution. */
export type StartBatcher = StatementBatcher<BatchedClientStart, boolean>

/**
 * Writes `starts` in one statement, with the guarantees of the start statement
 * (engine/startStatement.ts `writeStart`) for each: the owner created at generation 0 if new (no
 * runner takes it here), the execution inserted once — a start whose execution exists inserts
 * nothing and attaches, and nothing of it is written — and, for each inserted, its markers, its
 * manifest if new and its timer due now; the runners of each bucket with a new execution are woken
 * once (`notify`: Postgres). Answers, start by start, whether it created its execution.
 */
export const writeStartBatch = async (
  db: Queryable,
  clock: DatabaseClock,
  requested: readonly BatchedClientStart[],
  notify: boolean,
): Promise<boolean[]> => {
  // Two starts of one execution (a caller's retry beside its first try): the first is written, and
  // awaited if either is; the other attaches to it.
  const firstIndex = new Map<string, number>()
  const starts: BatchedClientStart[] = []
  const rowOf = requested.map((start) => {
    const key = `${start.owner.routingKey}/${start.executionId}`
    const index = firstIndex.get(key)
    if (index === undefined) {
      firstIndex.set(key, starts.length)
      starts.push(start)
      return { index: starts.length - 1, first: true }
    }
    if (start.awaited && !starts[index]!.awaited)
      starts[index] = { ...starts[index]!, awaited: true }
    return { index, first: false }
  })
  const marking = startsMarking(starts, (row) => row.start)
  const columns: InputColumn<BatchedClientStart>[] = [
    ...ownerColumns<BatchedClientStart>(),
    ["execution_id", TEXT, (row) => row.executionId],
    ...startColumns(starts, (row) => row.start, marking),
    ["awaited", BOOLEAN, (row) => row.awaited],
  ]
  const parts = [
    batchInputSql(columns, starts),
    batchCreateOwnersSql(clock, false),
    batchInsertExecutionsSql(clock, true),
    batchRecordStartManifestsSql(),
    batchArmStartTimersSql(clock, false),
    ...(marking ? [batchInsertMarkersSql(clock)] : []),
    // A plain SELECT part runs only when referred to: the final select's count sends these.
    sql`woken AS (${notification(WAKE_CHANNEL, sql`w.bucket::text`, {
      from: sql`(SELECT DISTINCT i.bucket FROM input i JOIN inserted s
        ON s.routing_key = i.routing_key AND s.execution_id = i.execution_id) w`,
      when: sql`${notify}::boolean`,
    })})`,
  ]
  const { rows } = await sql<{ created: boolean }>`WITH ${sql.join(parts)}
    SELECT EXISTS (SELECT 1 FROM inserted s
        WHERE s.routing_key = i.routing_key AND s.execution_id = i.execution_id) AS created,
      (SELECT count(*) FROM woken) AS woken
    FROM input i ORDER BY i.n`.execute(db)
  return rowOf.map(({ index, first }) => first && rows[index]!.created)
}
