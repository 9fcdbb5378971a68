/**
 * `akter check --database-url` and `akter lock --prune` against a real Postgres database with open
 * executions: release 1 of the shop has executions waiting for payment; release 3 removes a step
 * they recorded. The check exits 1 naming them while they are open and 0 once a runner drained
 * them; pruning keeps release 1 while it is in use and drops it after.
 */
import { sql } from "kysely"
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { RULES } from "../../runtime/compatibility/finding.js"
import { ownerHash } from "../../runtime/model/canonicalManifest.js"
import { testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createPostgresDatabase, describePostgres } from "../support/backends.js"
import { payOrders, shop, startWaitingOrders, type Shop } from "../startup/shopVersions.js"
import { createCliProject, parseAnnotations, positionOf, type CliProject } from "./cliProject.js"

// Every test runs the real CLI, a few seconds per call on a loaded machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

interface Finding {
  rule: string
  severity: string
  step?: string
  message: string
  location?: { file: string; line: number; column: number }
  open?: { count: number; oldestStartedAtMs: number }
}

describePostgres("akter check and akter lock --prune against open executions", () => {
  let akter: TestAkter
  let drop: () => Promise<void>
  let url: string
  let project: CliProject
  let v1: Shop
  let v3: Shop
  let v3Text: string

  beforeAll(async () => {
    const database = await createPostgresDatabase()
    drop = database.drop
    url = database.url
    akter = await testAkter({ databaseUrl: url })
    ;[v1, v3] = await Promise.all([shop(1), shop(3)])
    project = createCliProject()
    project.useShop(1)
    expect((await project.akter(["lock"])).code).toBe(0)

    await startWaitingOrders(akter, v1, ["o-1", "o-2"])
    v3Text = project.useShop(3)
  })

  afterAll(async () => {
    await akter?.close()
    await drop?.()
    project?.remove()
  })

  const openExecutions = async () => {
    const { rows } = await sql<{ count: number; oldest: number | null }>`
      SELECT count(*) AS count, min(started_at_ms) AS oldest FROM akter.executions
      WHERE status <> 'finished'`.execute(internalsOf(akter).storage.db)
    return rows[0]!
  }

  const lockedReleases = () =>
    Object.values(
      JSON.parse(project.read("manifests/akter.lock.json")).owners.Shop as Record<
        string,
        { release: number }
      >,
    ).map((entry) => entry.release)

  it("exits 1 naming the open executions that recorded the removed step, with count and oldest start", async () => {
    const open = await openExecutions()
    expect(open.count).toBe(2)
    const steps = positionOf(v3Text, "steps:")

    const [json, text, github] = await Promise.all([
      project.akter(["check", "--database-url", url, "--format", "json"]),
      project.akter(["check", "--database-url", url]),
      project.akter(["check", "--database-url", url, "--format", "github"]),
    ])

    expect(json.code).toBe(1)
    const report = JSON.parse(json.stdout) as { findings: Finding[]; exitCode: number }
    expect(report.exitCode).toBe(1)
    expect(report.findings).toEqual([
      {
        rule: "step-removed",
        axis: "replay",
        severity: "error",
        owner: "Shop",
        workflow: "fulfill",
        step: "reserve",
        message:
          'step "reserve" of Shop.fulfill is not declared by this manifest; executions started under their start manifest may have reached it',
        fix: RULES["step-removed"].fix,
        location: { file: "manifests/shop.yaml", ...steps },
        open: { count: 2, oldestStartedAtMs: open.oldest },
      },
    ])
    expect(text.code).toBe(1)
    expect(text.stdout).toContain(
      `  open: 2 open executions, the oldest started ${new Date(open.oldest!).toISOString()}\n`,
    )
    expect(text.stderr).toMatch(
      /akter check: 1 manifest against 1 locked manifest and 2 open executions in postgres:\/\/.*: breaking\n$/,
    )
    expect(github.code).toBe(1)
    expect(parseAnnotations(github.stdout).map((a) => [a.level, a.properties["title"]])).toEqual([
      ["error", "step-removed"],
    ])
  })

  it("keeps release 1 locked while its executions are open, and appends release 3", async () => {
    const result = await project.akter([
      "lock",
      "--prune",
      "--database-url",
      url,
      "--format",
      "json",
    ])

    expect(result.code).toBe(0)
    const v3Hash = ownerHash(v3.registration.canonical)
    expect(JSON.parse(result.stdout)).toEqual({
      lockFile: "manifests/akter.lock.json",
      changed: true,
      added: [{ owner: "Shop", hash: v3Hash, release: 2 }],
      released: [],
      pruned: [],
      retirable: [],
    })
    expect(lockedReleases()).toEqual([1, 2])
  })

  it("exits 0 once the executions drained, keeping the step removal as a warning", async () => {
    await payOrders(akter, v1, ["o-1", "o-2"])
    expect((await openExecutions()).count).toBe(0)

    const json = await project.akter(["check", "--database-url", url, "--format", "json"])

    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout) as { findings: Finding[] }
    expect(report.findings.map((f) => [f.rule, f.severity, f.step, f.open])).toEqual([
      ["step-removed", "warning", "reserve", undefined],
    ])
    expect(report.findings[0]!.message).toMatch(/; no open execution observes this$/)
  })

  it("drops release 1 from the lock once no open execution uses it, keeping the newest", async () => {
    const v1Hash = ownerHash(v1.registration.canonical)

    const result = await project.akter(["lock", "--prune", "--database-url", url])

    expect(result.code).toBe(0)
    expect(result.stdout.split("\n")).toContain(
      `- Shop release 1 ${v1Hash} (no open execution in ${url} uses it)`,
    )
    expect(lockedReleases()).toEqual([2])
    const check = await project.akter(["check"])
    expect(check.code).toBe(0)
  })
})
