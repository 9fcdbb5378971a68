/**
 * `node --conditions=akter-source --import tsx bench/studio.ts`: the studio's server time on a big
 * database (issue 17's goals). In a fresh Postgres database (created on DATABASE_URL's loopback
 * server, default 127.0.0.1:5432, and dropped at the end) it bulk-inserts, with generate_series,
 * 1,000,000 finished executions (10% failed, 2% interrupted, 1% defect) and 10,000 open ones over
 * 20,000 owners, five workflows of two owner types, then times the studio's handler in this
 * process — the executions page's first and next page under several filters, and the overview —
 * as medians of 7 after a warm-up, against the same-run baseline of the public listExecutions
 * page for the same filter. It prints which indexes each page read (pg_stat_user_indexes deltas).
 * Goals: a filtered first and next page under 100 ms, the overview under 300 ms. The input-field
 * page matches nothing (customer c-42's executions are User ones), so it reads its whole scan
 * budget (studio/studioQueries.ts INPUT_SCAN_BUDGET) and says so: the worst case of that filter.
 */
import { sql } from "kysely"
import pg from "pg"
import { createAkter, listExecutions, type Akter } from "../runtime/index.js"
import { internalsOf } from "../runtime/akter.js"
import { placeOwner } from "../runtime/owners/routing.js"
import { studioHandler } from "../studio/index.js"
import { createBenchDatabase, DEFAULT_DATABASE_URL } from "./benchDatabase.js"

const FINISHED = Number(process.env["STUDIO_BENCH_FINISHED"] ?? 1_000_000)
const OPEN = Number(process.env["STUDIO_BENCH_OPEN"] ?? 10_000)
const ROUNDS = 7
const TOKEN = "bench-token-0123456789abcdef"

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** Rows as the engine would leave them: owners, then executions referring to them. */
const seed = async (akter: Akter) => {
  const db = internalsOf(akter).storage.db
  const started = Date.now()
  // Owners placed as the runtime places them (placeOwner), so the owner filter's routing key works.
  const owners = Array.from({ length: 20_000 }, (_, index) => {
    const o = index + 1
    return placeOwner({
      tenant: "default",
      ownerType: o % 2 === 0 ? "Order" : "User",
      ownerId: `o-${o}`,
    })
  })
  await sql`CREATE TEMP TABLE bench_owner AS
    SELECT * FROM unnest(${owners.map((_, index) => index + 1)}::int[],
      ${owners.map((owner) => owner.routingKey)}::bigint[], ${owners.map((owner) => owner.bucket)}::int[])
      AS t(o, rk, bucket)`.execute(db)
  await sql`INSERT INTO akter.owners (routing_key, tenant, owner_type, owner_id, created_at_ms)
    SELECT rk, 'default', CASE WHEN o % 2 = 0 THEN 'Order' ELSE 'User' END, 'o-' || o, 1700000000000
    FROM bench_owner`.execute(db)
  const insert = (from: number, to: number, open: boolean) =>
    sql`
    INSERT INTO akter.executions (routing_key, execution_id, bucket, tenant, owner_type, owner_id,
      workflow, execution_key, manifest_hash, input, caller, event_cursor, status, result,
      outcome, started_at_ms, finished_at_ms)
    SELECT b.rk, 'ak1.bench-' || n, b.bucket, 'default',
      CASE WHEN o % 2 = 0 THEN 'Order' ELSE 'User' END, 'o-' || o,
      CASE WHEN o % 2 = 0 THEN (ARRAY['fulfill', 'refund', 'ship'])[1 + (n / 7) % 3]
        ELSE (ARRAY['signUp', 'verify'])[1 + (n / 7) % 2] END,
      'k-' || n, 'akter1:sha256:bench',
      '\\x00'::bytea || convert_to('{"customerId":"c-' || (n % 5000) || '","total":' || (n % 997) || '}', 'UTF8'),
      '{"tenant":"default"}', 0,
      ${open ? sql`CASE WHEN n % 4 = 0 THEN 'running' ELSE 'suspended' END` : sql`'finished'`},
      ${open ? sql`NULL` : sql`'\\x00'::bytea || convert_to(CASE WHEN n % 100 < 10 THEN '{"_tag":"Failure","error":{"_tag":"OutOfStock"}}' WHEN n % 100 < 12 THEN '{"_tag":"Interrupt"}' WHEN n % 100 < 13 THEN '{"_tag":"Die","message":"bug"}' ELSE '{"_tag":"Success","value":null}' END, 'UTF8')`},
      ${open ? sql`NULL` : sql`CASE WHEN n % 100 < 10 THEN 'failed' WHEN n % 100 < 12 THEN 'interrupted' WHEN n % 100 < 13 THEN 'defect' ELSE 'succeeded' END`},
      ${open ? sql`${Date.now()}::bigint - (n - ${from}) * 1000` : sql`${Date.now()}::bigint - 86400000 - (${to} - n) * 100`},
      ${open ? sql`NULL` : sql`${Date.now()}::bigint - 86400000 - (${to} - n) * 100 + 500`}
    FROM generate_series(${from}::int, ${to}::int) AS n, LATERAL (SELECT 1 + n % 20000 AS o) AS owner JOIN bench_owner b USING (o)`.execute(
      db,
    )
  const batch = 100_000
  for (let from = 1; from <= FINISHED; from += batch) {
    await insert(from, Math.min(FINISHED, from + batch - 1), false)
    process.stderr.write(`\rinserted ${Math.min(FINISHED, from + batch - 1)} finished executions`)
  }
  await insert(FINISHED + 1, FINISHED + OPEN, true)
  await sql`INSERT INTO akter.manifests (owner_type, workflow, manifest_hash, manifest, accepted_at_ms)
    SELECT DISTINCT owner_type, workflow, 'akter1:sha256:bench', '{}'::jsonb, 0 FROM akter.executions
    ON CONFLICT DO NOTHING`.execute(db)
  await sql`ANALYZE akter.executions`.execute(db)
  process.stderr.write(`\nseeded in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
}

const indexScans = async (client: pg.Client) => {
  // Backends report their index scans at most once a second: wait for the report.
  await new Promise((resolve) => setTimeout(resolve, 1500))
  await client.query("SELECT pg_stat_clear_snapshot()")
  const { rows } = await client.query<{ name: string; scans: string }>(
    "SELECT indexrelname AS name, idx_scan AS scans FROM pg_stat_user_indexes WHERE relname = 'executions'",
  )
  return new Map(rows.map((row) => [row.name, Number(row.scans)]))
}

const main = async () => {
  const server = process.env["DATABASE_URL"] || DEFAULT_DATABASE_URL
  const database = await createBenchDatabase(server, "akter_bench_studio")
  const akter = await createAkter({ databaseUrl: database.url, poolSize: 4 })
  const stats = new pg.Client({ connectionString: database.url })
  await stats.connect()
  try {
    await seed(akter)
    const studio = studioHandler(akter, { token: TOKEN })
    const get = async (path: string) => {
      const begin = performance.now()
      const response = await studio(
        new Request(`http://bench${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }),
      )
      const text = await response.text()
      if (response.status !== 200)
        throw new Error(`${path}: ${response.status} ${text.slice(0, 300)}`)
      return { ms: performance.now() - begin, text }
    }
    const nextOf = (text: string) =>
      /rel="next"\s+href="([^"]+)"/.exec(text)?.[1]?.replaceAll("&amp;", "&")
    const scenarios: [string, string, Parameters<typeof listExecutions>[1] | undefined][] = [
      ["all executions", "/executions", {}],
      [
        "one workflow, failed",
        "/executions?ownerType=Order&workflow=fulfill&status=failed",
        undefined,
      ],
      ["failed (any workflow)", "/executions?status=failed", undefined],
      ["open", "/executions?status=open", { status: "open" }],
      [
        "one workflow, open",
        "/executions?ownerType=Order&workflow=fulfill&status=open",
        { ownerType: "Order", workflow: "fulfill", status: "open" },
      ],
      [
        "one owner",
        "/executions?tenant=default&ownerType=Order&ownerId=o-42",
        { tenant: "default", ownerType: "Order", ownerId: "o-42" },
      ],
      [
        "one workflow, last day",
        `/executions?ownerType=User&workflow=verify&from=${new Date(Date.now() - 86_400_000 * 1.5).toISOString().slice(0, 16)}`,
        undefined,
      ],
      [
        "input field, one workflow",
        `/executions?ownerType=Order&workflow=fulfill&input=${encodeURIComponent("customerId = c-42")}`,
        undefined,
      ],
    ]
    console.log(
      `akter studio, ${FINISHED.toLocaleString("en-US")} finished + ${OPEN.toLocaleString("en-US")} open executions, Postgres, server time (median of ${ROUNDS})\n`,
    )
    console.log(
      "page                         first ms   next ms   listExecutions ms   first/goal  indexes read",
    )
    for (const [name, path, query] of scenarios) {
      await get(path)
      const before = await indexScans(stats)
      const firsts: number[] = []
      const nexts: number[] = []
      let last = ""
      for (let round = 0; round < ROUNDS; round += 1) {
        const first = await get(path)
        firsts.push(first.ms)
        last = first.text
        const next = nextOf(first.text)
        if (next !== undefined) nexts.push((await get(next)).ms)
      }
      const after = await indexScans(stats)
      const used = [...after.entries()]
        .filter(([index, scans]) => scans > (before.get(index) ?? 0))
        .map(([index]) => index)
      const baseline: number[] = []
      if (query !== undefined) {
        for (let round = 0; round < ROUNDS; round += 1) {
          const begin = performance.now()
          await listExecutions(akter, query)
          baseline.push(performance.now() - begin)
        }
      }
      const firstMs = median(firsts)
      console.log(
        `${name.padEnd(28)} ${firstMs.toFixed(1).padStart(8)} ${(nexts.length === 0 ? "-" : median(nexts).toFixed(1)).padStart(9)} ${(baseline.length === 0 ? "-" : median(baseline).toFixed(1)).padStart(19)} ${(firstMs / 100).toFixed(2).padStart(11)}  ${used.join(", ")}${/data-count="(\d+)"/.exec(last) === null ? "" : `  (count ${/data-count="(\d+)"/.exec(last)![1]})`}`,
      )
    }
    await get("/")
    const overview: number[] = []
    const before = await indexScans(stats)
    for (let round = 0; round < ROUNDS; round += 1) overview.push((await get("/")).ms)
    const after = await indexScans(stats)
    const used = [...after.entries()]
      .filter(([index, scans]) => scans > (before.get(index) ?? 0))
      .map(([index]) => index)
    console.log(
      `\noverview ${median(overview).toFixed(1)} ms (goal 300 ms: ${(median(overview) / 300).toFixed(2)} of it); indexes read: ${used.join(", ")}`,
    )
    await studio.close()
  } finally {
    await stats.end()
    await akter.close()
    await database.drop()
  }
}

await main()
