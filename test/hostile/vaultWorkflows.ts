/**
 * Implementations of test/fixtures/hostile/{vault,ledger}.yaml, the row counts the hostile, tenant
 * and retention suites compare before and after a call, and a fresh database per suite or test.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { sql } from "kysely"
import { implementWorkflow, type WorkflowImplementation } from "../../runtime/index.js"
import { internalsOf, type Akter, type AkterOptions } from "../../runtime/akter.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import { registrationsFromYaml } from "../support/registrationFromYaml.js"

const fixture = (name: string) =>
  readFileSync(new URL(`../fixtures/hostile/${name}`, import.meta.url), "utf8")

export interface Vault {
  readonly vault: OwnerRegistration
  readonly ledger: OwnerRegistration
  readonly workflows: readonly WorkflowImplementation[]
}

// Bodies are written against the untyped `wf`: these workflows have no generated SDK.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Wf = any

export const VAULT_YAML = fixture("vault.yaml")

/** Registrations and implementations of the fixtures; `vaultYaml` replaces vault.yaml's text. */
export const makeVault = async (vaultYaml: string = VAULT_YAML): Promise<Vault> => {
  const registrations = await registrationsFromYaml({
    "test/fixtures/hostile/vault.yaml": vaultYaml,
    "test/fixtures/hostile/ledger.yaml": fixture("ledger.yaml"),
  })
  const vault = registrations["Vault"]!
  const ledger = registrations["Ledger"]!
  const implement = (
    owner: OwnerRegistration,
    workflow: string,
    activities: Record<string, (...args: never[]) => unknown>,
    body: (input: never, wf: Wf) => Effect.Effect<unknown, unknown>,
  ) => implementWorkflow(owner, workflow, { activities, body })
  const workflows = [
    implement(
      vault,
      "store",
      { keep: ({ entry }: { entry: unknown }) => Promise.resolve({ entry }) },
      (input: { name: string; entry: unknown }, wf: Wf) =>
        Effect.map(wf.keep({ entry: input.entry }), (kept: { entry: unknown }) => ({
          name: input.name,
          entry: kept.entry,
        })),
    ),
    implement(vault, "listen", {}, (_input: { name: string }, wf: Wf) =>
      Effect.map(wf.heard(), (said: { text: string }) => ({ text: said.text })),
    ),
    implement(vault, "hold", {}, (_: undefined, wf: Wf) =>
      Effect.map(wf.nap(), () => ({ done: true })),
    ),
    implement(
      ledger,
      "store",
      { keep: (ctx: { ownerId: string }) => Promise.resolve({ name: ctx.ownerId }) },
      (input: { name: string }, wf: Wf) => Effect.map(wf.keep(), () => ({ name: input.name })),
    ),
  ]
  return { vault, ledger, workflows }
}

/** The tables a client call may write, in the order the counts are reported. */
export const CLIENT_TABLES = [
  "owners",
  "executions",
  "steps",
  "events",
  "outbox",
  "receipts",
  "manifests",
] as const

export type TableCounts = Record<(typeof CLIENT_TABLES)[number], number>

/** Rows in each table a client call may write. */
export const tableCounts = async (akter: Akter): Promise<TableCounts> => {
  const { db } = internalsOf(akter).storage
  const counts = {} as TableCounts
  for (const table of CLIENT_TABLES) {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM ${sql.table(`akter.${table}`)}`.execute(db)
    counts[table] = rows[0]!.n
  }
  return counts
}
