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
import pg from "pg"
import { createAkter, listExecutions, type Akter } from "../runtime/index.js"
import { internalsOf } from "../runtime/akter.js"
import { studioHandler } from "../studio/index.js"
import { createBenchDatabase, DEFAULT_DATABASE_URL } from "./benchDatabase.js"
import { seedHistory } from "./historySeed.js"

const FINISHED = Number(process.env["STUDIO_BENCH_FINISHED"] ?? 1_000_000)
const OPEN = Number(process.env["STUDIO_BENCH_OPEN"] ?? 10_000)
const ROUNDS = 7
const TOKEN = "bench-token-0123456789abcdef"

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** Rows as the engine would leave them (historySeed.ts), without events: the studio reads none. */
const seed = async (akter: Akter) => {
  const started = Date.now()
  await seedHistory(internalsOf(akter).storage.db, {
    finished: FINISHED,
    open: OPEN,
    events: false,
    onProgress: (finished) => process.stderr.write(`\rinserted ${finished} finished executions`),
  })
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
