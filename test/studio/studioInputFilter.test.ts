/**
 * The executions page's input-field filter (`input.customerId = c-42`) on both backends: Postgres
 * drops, by a byte search, the plain inputs that cannot match, and JavaScript decides the rest. The
 * inputs are started through the client (so stored as akter stores them: plain JSON under 256
 * bytes, brotli above) or corrupted afterwards by hand; each filter's expected rows are written
 * out here from the inputs, under the filter's rule: the field at the dotted path equals the value,
 * a string as its text, anything else as its JSON. Also: a corrupt input matches nothing, fails no
 * statement and shows as unreadable; the scan budget stops a page and the next page continues.
 */
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it } from "vitest"
import { makeOwnerClient } from "../../runtime/index.js"
import { internalsOf } from "../../runtime/akter.js"
import type { Db } from "../../runtime/storage/database.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { studioHandler, type StudioHandler } from "../../studio/index.js"
import {
  INPUT_SCAN_BUDGET,
  inputFieldNeedles,
  studioPage,
  type StudioFilter,
} from "../../studio/studioQueries.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { makeVault } from "../hostile/vaultWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const TOKEN = "studio-input-token-0123456789"
const ORIGIN = "http://studio.test"

/** Each execution's `entry.extra` (its input is `{ name, amount, entry: { name, note, tags, extra } }`). */
const EXTRAS: Record<string, unknown> = {
  plain42: { customerId: "c-42", total: 42, vip: true, address: { city: "Oslo" } },
  plain420: { customerId: "c-420", total: 420, vip: false, address: { city: "Oslo 2" } },
  text42: { customerId: "c-42x", total: "42", note: null },
  quoted: { customerId: 'say "c-42"\n', total: 1.5 },
  unicode: { customerId: "ø-42", city: "Zürich" },
  items: { items: [{ sku: "A" }, { sku: "B" }], customerId: "c-9" },
  // A NUL character: valid JSON (JSON.stringify writes \u0000) that Postgres's jsonb refuses.
  nul: { customerId: "c-42", memo: "a\u0000b" },
  // Over 256 bytes of JSON: stored brotli-compressed, so only JavaScript can read it.
  large: { customerId: "c-42", padding: "x".repeat(400) },
  largeOther: { customerId: "c-7", padding: "c-42 ".repeat(80) },
  bare: undefined,
}

/** Inputs overwritten after the start with bytes akter never writes; all hold the text "c-42". */
const CORRUPT: Record<string, Buffer> = {
  notJson: Buffer.concat([Buffer.of(0), Buffer.from('{"entry":{"extra":{"customerId":"c-42"')]),
  empty: Buffer.alloc(0),
  unknownFormat: Buffer.concat([Buffer.of(7), Buffer.from('{"customerId":"c-42"}')]),
  badBrotli: Buffer.concat([Buffer.of(1), Buffer.from('"c-42" is not a brotli stream')]),
}

/**
 * Not UTF-8 (a 0xff byte in `name`), which JavaScript's decoder reads as U+FFFD and Postgres's
 * convert_from would refuse: the field still matches, as it did before SQL took part.
 */
const NOT_UTF8 = Buffer.concat([
  Buffer.of(0),
  Buffer.from('{"name":"'),
  Buffer.of(0xff),
  Buffer.from(
    '","amount":1,"entry":{"name":"n","note":"","tags":[],"extra":{"customerId":"c-42"}}}',
  ),
])

const STARTED = [...Object.keys(EXTRAS), ...Object.keys(CORRUPT), "notUtf8"]

describeEachBackend("studio input-field filter", (backend) => {
  let akter: TestAkter
  let db: Db
  let studio: StudioHandler
  const ids: Record<string, string> = {}
  const names = new Map<string, string>()

  /** The names of the executions a page of `studioPage` holds (newest first). */
  const matching = async (path: string, value: string, limit = 50) => {
    const page = await studioPage(
      db,
      { ownerType: "Vault", workflow: "store", inputField: { path: path.split("."), value } },
      undefined,
      limit,
    )
    return page.executions.map((execution) => names.get(execution.executionId))
  }
  const get = (path: string) =>
    studio(new Request(`${ORIGIN}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))

  beforeAll(async () => {
    const vault = await makeVault()
    akter = await openTestAkter(backend)
    db = internalsOf(akter).storage.db
    const vaults = makeOwnerClient<AnyClient>(akter, vault.vault)
    for (const name of STARTED) {
      akter.advance("1 second")
      const extra = EXTRAS[name]
      const entry = { name: "n", note: "", tags: name === "items" ? ["t"] : [] }
      const started = await vaults.store.start(`o-${name}`, {
        name,
        amount: name === "plain42" ? 7 : 1,
        entry: extra === undefined ? entry : { ...entry, extra },
      })
      ids[name] = started.executionId
      names.set(started.executionId, name)
    }
    const corrupt = { ...CORRUPT, notUtf8: NOT_UTF8 }
    for (const [name, bytes] of Object.entries(corrupt)) {
      // The test corrupts rows on purpose: no akter write produces these bytes.
      await sql`UPDATE akter.executions SET input = ${bytes} WHERE execution_id = ${ids[name]!}`.execute(
        db,
      )
    }
    studio = studioHandler(akter, { token: TOKEN })
  })

  afterAll(async () => {
    await studio?.close()
    await akter?.close()
  })

  it("stores the large inputs brotli-compressed and the others as plain JSON", async () => {
    const { rows } = await sql<{ execution_id: string; format: number }>`
      SELECT execution_id, get_byte(input, 0) AS format FROM akter.executions
      WHERE execution_id IN (${sql.join(Object.keys(EXTRAS).map((name) => ids[name]!))})`.execute(
      db,
    )
    const formats = Object.fromEntries(rows.map((row) => [names.get(row.execution_id), row.format]))
    expect(formats).toEqual({
      plain42: 0,
      plain420: 0,
      text42: 0,
      quoted: 0,
      unicode: 0,
      items: 0,
      nul: 0,
      large: 1,
      largeOther: 1,
      bare: 0,
    })
  })

  it("matches a string field by its text, in plain and brotli-stored inputs", async () => {
    expect(await matching("entry.extra.customerId", "c-42")).toEqual([
      "notUtf8",
      "large",
      "nul",
      "plain42",
    ])
    expect(await matching("entry.extra.customerId", 'say "c-42"\n')).toEqual(["quoted"])
    expect(await matching("entry.extra.customerId", "ø-42")).toEqual(["unicode"])
    expect(await matching("entry.extra.customerId", "c-7")).toEqual(["largeOther"])
    expect(await matching("name", "plain420")).toEqual(["plain420"])
  })

  it("matches numbers, booleans, null and objects by their JSON, and a string that spells one", async () => {
    expect(await matching("entry.extra.total", "42")).toEqual(["text42", "plain42"])
    expect(await matching("entry.extra.total", "1.5")).toEqual(["quoted"])
    expect(await matching("entry.extra.total", "1.50")).toEqual([])
    expect(await matching("amount", "7")).toEqual(["plain42"])
    expect(await matching("entry.extra.vip", "true")).toEqual(["plain42"])
    expect(await matching("entry.extra.vip", "false")).toEqual(["plain420"])
    expect(await matching("entry.extra.note", "null")).toEqual(["text42"])
    expect(await matching("entry.extra.address", '{"city":"Oslo"}')).toEqual(["plain42"])
    expect(await matching("entry.extra.address", '{ "city": "Oslo" }')).toEqual([])
    expect(await matching("entry.tags", '["t"]')).toEqual(["items"])
  })

  it("follows nested paths through objects and array indexes, and a name arrays inherit", async () => {
    expect(await matching("entry.extra.address.city", "Oslo")).toEqual(["plain42"])
    expect(await matching("entry.extra.items.1.sku", "B")).toEqual(["items"])
    expect(await matching("entry.extra.items.0.sku", "B")).toEqual([])
    // `length` is no key of the stored JSON: the array's own property, as JavaScript reads it.
    expect(await matching("entry.extra.items.length", "2")).toEqual(["items"])
    expect(await matching("entry.tags.length", "1")).toEqual(["items"])
  })

  it("matches nothing where the field is missing or its parent is not an object", async () => {
    expect(await matching("entry.extra.absent", "c-42")).toEqual([])
    expect(await matching("entry.extra.customerId.first", "c-42")).toEqual([])
    expect(await matching("name.length", "6")).toEqual([])
    expect(await matching("entry.extra.customerId", "c-4")).toEqual([])
  })

  it("pages through the matches by cursor, the same rows as one page", async () => {
    const all = await matching("entry.extra.customerId", "c-42")
    const seen: (string | undefined)[] = []
    const filter: StudioFilter = {
      ownerType: "Vault",
      workflow: "store",
      inputField: { path: ["entry", "extra", "customerId"], value: "c-42" },
    }
    let after: Parameters<typeof studioPage>[2]
    for (;;) {
      const page = await studioPage(db, filter, after, 1)
      seen.push(...page.executions.map((execution) => names.get(execution.executionId)))
      expect(page.budgetSpent).toBe(false)
      if (page.next === undefined) break
      after = page.next
    }
    expect(seen).toEqual(all)
  })

  it("a corrupt input matches nothing, fails no page, and its execution shows it unreadable", async () => {
    const list = await get(
      `/executions?ownerType=Vault&workflow=store&input=${encodeURIComponent("entry.extra.customerId = c-42")}`,
    )
    expect(list.status).toBe(200)
    const listed = [...(await list.text()).matchAll(/data-execution="([^"]+)"/g)].map((match) =>
      names.get(match[1]!),
    )
    expect(listed).toEqual(["notUtf8", "large", "nul", "plain42"])
    for (const name of Object.keys(CORRUPT)) {
      const page = await get(`/executions/${encodeURIComponent(ids[name]!)}`)
      expect(page.status).toBe(200)
      expect(await page.text()).toMatch(/<span class="status defect">unreadable<\/span>/)
    }
    // Every format and every corruption on one page: a filter whose needle is in each of them.
    expect(await matching("customerId", "c-42")).toEqual([])
  })

  it("stops a page at the scan budget, and the next page continues after the last row read", async () => {
    const vault = await makeVault()
    const vaults = makeOwnerClient<AnyClient>(akter, vault.vault)
    akter.advance("1 minute")
    const match = await vaults.store.start("budget", {
      name: "budget-match",
      amount: 1,
      entry: { name: "n", note: "", tags: [], extra: { customerId: "c-42" } },
    })
    akter.advance("1 minute")
    const other = await vaults.store.start("budget", {
      name: "budget-other",
      amount: 1,
      entry: { name: "n", note: "", tags: [], extra: { customerId: "c-43" } },
    })
    // Copies of the non-matching execution, started between the two: the test's own rows.
    await sql`INSERT INTO akter.executions (routing_key, execution_id, bucket, tenant, owner_type,
        owner_id, workflow, execution_key, manifest_hash, input, caller, event_cursor, status,
        started_at_ms)
      SELECT routing_key, execution_id || '.copy-' || lpad(n::text, 5, '0'), bucket, tenant,
        owner_type, owner_id, workflow, execution_key || '-' || n, manifest_hash, input, caller,
        event_cursor, status, started_at_ms - n
      FROM akter.executions, generate_series(1, ${INPUT_SCAN_BUDGET + 100}::int) AS n
      WHERE execution_id = ${other.executionId}`.execute(db)
    const filter: StudioFilter = {
      tenant: "default",
      ownerType: "Vault",
      ownerId: "budget",
      inputField: { path: ["entry", "extra", "customerId"], value: "c-42" },
    }
    const first = await studioPage(db, filter, undefined, 50)
    expect(first.executions).toEqual([])
    expect(first.budgetSpent).toBe(true)
    expect(first.scanned).toBe(INPUT_SCAN_BUDGET)
    // Read newest first: the original, then copies 1, 2, …: the budget's last row is copy budget-1.
    expect(first.next?.executionId).toBe(
      `${other.executionId}.copy-${String(INPUT_SCAN_BUDGET - 1).padStart(5, "0")}`,
    )
    const second = await studioPage(db, filter, first.next, 50)
    expect(second.executions.map((execution) => execution.executionId)).toEqual([match.executionId])
    expect(second.budgetSpent).toBe(false)
    expect(second.next).toBeUndefined()
    // The 101 copies left, then the match.
    expect(second.scanned).toBe(102)
  })
})

it("the byte search looks for a string field's JSON, and for the value itself where it is how JSON.stringify writes a non-string", () => {
  const needles = (path: string, value: string) =>
    inputFieldNeedles({ path: path.split("."), value })?.map((needle) => needle.toString("utf8"))
  expect(needles("customerId", "c-42")).toEqual(['"c-42"'])
  expect(needles("customerId", 'say "hi"')).toEqual(['"say \\"hi\\""'])
  expect(needles("total", "42")).toEqual(['"42"', "42"])
  expect(needles("total", "1.50")).toEqual(['"1.50"'])
  expect(needles("vip", "true")).toEqual(['"true"', "true"])
  expect(needles("address", '{"city":"Oslo"}')).toEqual([
    '"{\\"city\\":\\"Oslo\\"}"',
    '{"city":"Oslo"}',
  ])
  expect(needles("quoted", '"x"')).toEqual(['"\\"x\\""'])
  expect(needles("items.length", "2")).toBeUndefined()
  expect(needles("a.__proto__.b", "{}")).toBeUndefined()
  expect(needles("a.constructor", "x")).toBeUndefined()
})
