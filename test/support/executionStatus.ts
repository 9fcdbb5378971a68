/**
 * An execution's status as its row has it, and waiting for it to park: what tests that need an
 * execution suspended (its suspend written) before they act read, instead of each its own query.
 */
import type { Queryable } from "../../runtime/storage/database.js"
import { waitUntil } from "./waitUntil.js"

/** The execution's `status` column; fails when there is no row. */
export const executionStatusOf = async (db: Queryable, executionId: string): Promise<string> =>
  (
    await db
      .selectFrom("akter.executions")
      .select("status")
      .where("execution_id", "=", executionId)
      .executeTakeFirstOrThrow()
  ).status

/** Resolves once the execution's row says `suspended`; rejects naming `what` after the timeout. */
export const waitUntilSuspended = (
  db: Queryable,
  executionId: string,
  what = "the suspend is written",
): Promise<true> =>
  waitUntil(what, async () => (await executionStatusOf(db, executionId)) === "suspended")
