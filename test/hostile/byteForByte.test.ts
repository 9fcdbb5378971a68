/**
 * Tenants, owner ids, keys, payloads and event payloads full of quotes, backslashes, control
 * characters (all but NUL, which Postgres text cannot hold and the client refuses), SQL fragments
 * and unicode are stored and returned exactly: the rows hold the same strings, the id decodes to
 * them, and results and matched events come back equal code unit for code unit.
 */
import fc from "fast-check"
import { afterAll, beforeAll, expect, it } from "vitest"
import { makeOwnerClient, startRunner, type Runner } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import { decodeExecutionId } from "../../runtime/model/executionId.js"
import { decodeJson } from "../../runtime/storage/codec.js"
import { runUntilIdle, testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createPostgresDatabase, describeEachBackend } from "../support/backends.js"
import { makeVault, type Vault } from "./vaultWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const CONTROLS = Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join("") + "\x7f"

/** Hand-picked strings that break naive quoting, escaping, normalization or encoding. */
const NASTY = [
  `'; DROP TABLE akter.executions; --`,
  `"quoted" 'single' \`back\` $1 $$dollar$$ \${template}`,
  "back\\slash \\\\ \\x00 \\u0000 \\n",
  CONTROLS,
  "line\nbreak\r\ntab\t\u2028\u2029",
  "emoji 🧾🏳️‍🌈 astral 𝔘𝔫𝔦",
  "combining e\u0301 vs \u00e9, RTL \u202eevil\u202c, BOM \ufeff, ZWJ a\u200db",
  "%s %d {0} <script>alert(1)</script> &amp;",
  "ﷺ 𒐫 ǅ İ ß ﬃ",
]

/** Strings of any code points except NUL and lone surrogates, within a part's byte bound. */
const storableText = fc
  .string({ unit: "grapheme", minLength: 1, maxLength: 40 })
  .filter((text) => !text.includes("\0") && Buffer.byteLength(text) <= 128)

describeEachBackend("hostile text round trips", (backend) => {
  let vault: Vault
  let akter: TestAkter
  let drop: (() => Promise<void>) | undefined
  let runner: Runner

  beforeAll(async () => {
    vault = await makeVault()
    if (backend === "postgres") {
      const database = await createPostgresDatabase()
      drop = database.drop
      akter = await testAkter({ databaseUrl: database.url })
    } else akter = await testAkter()
    runner = await startRunner({ akter, workflows: vault.workflows, pollMs: 20 })
  })

  afterAll(async () => {
    await runner?.close()
    await akter?.close()
    await drop?.()
  })

  const db = () => internalsOf(akter).storage.db

  /** Starts `store` as `tenant` and checks every place the strings land. */
  const roundTrip = async (tenant: string, ownerId: string, key: string, texts: string[]) => {
    const client = makeOwnerClient<AnyClient>(akter, vault.vault, { tenant, subject: texts[0]! })
    const entry = { name: texts[0]!, note: texts.join(""), tags: texts, extra: { [key]: texts } }
    const run = await client.store.start(ownerId, { name: key, amount: 1, entry })
    expect(decodeExecutionId(run.executionId)).toEqual({
      tenant,
      ownerType: "Vault",
      ownerId,
      workflow: "store",
      key,
    })
    const stored = await db()
      .selectFrom("akter.executions")
      .select(["tenant", "owner_id", "execution_key", "caller", "input"])
      .where("execution_id", "=", run.executionId)
      .executeTakeFirstOrThrow()
    expect([stored.tenant, stored.owner_id, stored.execution_key]).toEqual([tenant, ownerId, key])
    expect(JSON.parse(stored.caller)).toEqual({ tenant, subject: texts[0] })
    expect(decodeJson(stored.input)).toEqual({ name: key, amount: 1, entry })
    await runUntilIdle(akter, runner)
    expect(await client.store.attach(run.executionId).result()).toEqual({
      _tag: "Success",
      value: { name: key, entry },
    })

    const listening = await client.listen.start(ownerId, { name: key })
    await runUntilIdle(akter, runner)
    const text = texts.join("|")
    const { sequence } = await client.emit(ownerId, "Said", { text }, { commandId: key })
    const logged = await db()
      .selectFrom("akter.events")
      .select(["owner_id", "payload"])
      .where("tenant", "=", tenant)
      .where("owner_id", "=", ownerId)
      .where("sequence", "=", sequence)
      .executeTakeFirstOrThrow()
    expect([logged.owner_id, decodeJson(logged.payload)]).toEqual([ownerId, { text }])
    await runUntilIdle(akter, runner)
    expect(await listening.result()).toEqual({ _tag: "Success", value: { text } })
    const receipt = await db()
      .selectFrom("akter.receipts")
      .select("command_id")
      .where("tenant", "=", tenant)
      .where("owner_id", "=", ownerId)
      .executeTakeFirstOrThrow()
    expect(receipt.command_id).toBe(key)
  }

  it("stores and returns hand-picked hostile strings exactly, as tenant, owner id, key and payload", async () => {
    for (const [index, nasty] of NASTY.entries()) {
      await roundTrip(`t${index}${nasty}`.slice(0, 60), `${nasty}/${index}`, `${index}:${nasty}`, [
        nasty,
        nasty.split("").reverse().join(""),
        "",
      ])
    }
  })

  it("stores and returns random unicode text exactly", async () => {
    await fc.assert(
      fc.asyncProperty(
        storableText,
        storableText,
        storableText,
        fc.array(fc.string({ unit: "binary", maxLength: 20 }), { minLength: 1, maxLength: 4 }),
        async (tenant, ownerId, key, texts) => {
          await roundTrip(tenant, ownerId, key, texts)
        },
      ),
      { numRuns: backend === "postgres" ? 15 : 25, seed: 6 },
    )
  })
})
