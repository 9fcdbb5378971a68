/**
 * `listExecutions`, `countExecutions` and `inspectExecution` as the `akter` entry exports them: the
 * listing (executionListing.ts, its queries and kysely) is loaded by the first call, not by
 * `import "akter"`. Each refuses what the listing's own refuses, as it refuses it.
 */
import { internalsOf, type Akter } from "../akter.js"
import type { ExecutionCounts, ExecutionPage, ExecutionQuery } from "./executionListing.js"
import type { ExecutionDetail } from "./executionQueries.js"

const listing = () => import("./executionListing.js")

/**
 * One page of the executions matching `query`, newest first unless asked otherwise; pass
 * `nextCursor` back as `cursor` for the next page. Throws `InvalidQuery` for a malformed query.
 *
 * @example
 * // This customer's open orders, twenty at a time.
 * const query = { ownerType: "Order", ownerId: "c-42", status: "open", limit: 20 } as const
 * let page = await listExecutions(akter, query)
 * while (page.nextCursor !== undefined) {
 *   page = await listExecutions(akter, { ...query, cursor: page.nextCursor })
 * }
 */
export const listExecutions = async (
  akter: Akter,
  query?: ExecutionQuery,
): Promise<ExecutionPage> => (await listing()).listExecutions(akter, query)

/**
 * How many executions match `query` (its `order`, `limit` and `cursor` aside), by status. It
 * counts every matching row: cheap for one owner or workflow, slower for a whole large table.
 *
 * @example
 * const { running, suspended } = await countExecutions(akter, { ownerType: "Order", workflow: "fulfill" })
 */
export const countExecutions = async (
  akter: Akter,
  query?: ExecutionQuery,
): Promise<ExecutionCounts> => (await listing()).countExecutions(akter, query)

/**
 * Everything recorded about one execution, decoded — its status, markers, every step with its
 * attempt and exit, the pending timer — as `akter inspect EXECUTION_ID --format json` prints it;
 * undefined when no such execution exists. Throws `InvalidExecutionId` for a string akter did not
 * issue.
 *
 * @example
 * const detail = await inspectExecution(akter, run.executionId)
 * for (const step of detail?.steps ?? []) console.log(step.step, step.attempt, step.exit)
 */
export const inspectExecution = (
  akter: Akter,
  executionId: string,
): Promise<ExecutionDetail | undefined> => {
  // A value that is not a handle is refused synchronously, as the listing's own refuses it.
  internalsOf(akter)
  return listing().then((loaded) => loaded.inspectExecution(akter, executionId))
}
