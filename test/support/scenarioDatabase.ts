/**
 * One multi-process scenario's world: a Postgres database of its own (migrated, with the write
 * audit installed before any runner connects), the test's akter handle on it, an activity journal,
 * a gate folder, and the runner fleets it starts — all torn down by `close()`, the runners first.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { createAkter, internalsOf, type Akter } from "../../runtime/akter.js"
import type { Db } from "../../runtime/storage/database.js"
import { JOURNAL_VARIABLE } from "./activityJournal.js"
import { createPostgresDatabase } from "./backends.js"
import { GATES_VARIABLE, makeGateFolder } from "./fileGates.js"
import { startFleet, type Fleet, type FleetOptions } from "./runnerFleet.js"
import { installWriteAudit } from "./writeAudit.js"

export interface Scenario {
  readonly databaseUrl: string
  readonly akter: Akter
  readonly db: Db
  /** The activity journal file every runner of this scenario appends to. */
  readonly journal: string
  /** The gate folder every runner of this scenario waits in. */
  readonly gates: string
  /** A fleet of runner processes on this database, sharing the journal and the gates. */
  fleet(options: Omit<FleetOptions, "databaseUrl">): Fleet
  /** Every fleet's output, for failure messages. */
  outputs(): string
  close(): Promise<void>
}

/**
 * @example
 * const scenario = await openScenario()
 * try {
 *   const fleet = scenario.fleet({ app: "test/multi/multiApp.ts" })
 *   ...
 * } finally {
 *   await scenario.close()
 * }
 */
export const openScenario = async (): Promise<Scenario> => {
  const database = await createPostgresDatabase()
  let akter: Akter | undefined
  try {
    akter = await createAkter({ databaseUrl: database.url, poolSize: 4 })
    await installWriteAudit(database.url)
  } catch (error) {
    await akter?.close()
    await database.drop()
    throw error
  }
  const journal = path.join(mkdtempSync(path.join(tmpdir(), "akter-journal-")), "journal.jsonl")
  const gates = makeGateFolder()
  const fleets: Fleet[] = []
  const opened = akter
  return {
    databaseUrl: database.url,
    akter: opened,
    db: internalsOf(opened).storage.db,
    journal,
    gates,
    fleet: (options) => {
      const fleet = startFleet({
        ...options,
        databaseUrl: database.url,
        env: { ...options.env, [JOURNAL_VARIABLE]: journal, [GATES_VARIABLE]: gates },
      })
      fleets.push(fleet)
      return fleet
    },
    outputs: () => fleets.map((fleet) => fleet.outputs()).join("\n"),
    close: async () => {
      for (const fleet of fleets) await fleet.stopAll()
      await opened.close()
      await database.drop()
    },
  }
}

/**
 * Runs `test` in a fresh scenario and tears it down afterwards, whatever happened.
 *
 * @example
 * it("...", () => withScenario(async (scenario) => { ... }))
 */
export const withScenario = async (test: (scenario: Scenario) => Promise<void>): Promise<void> => {
  const scenario = await openScenario()
  try {
    await test(scenario)
  } finally {
    await scenario.close()
  }
}
