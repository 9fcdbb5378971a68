/**
 * Startup acceptance on PGlite and on Postgres, with registrations built from real manifests: a
 * runner that could not replay open executions refuses to start, naming them, and records nothing;
 * an unchanged deployment takes the fast path; once the executions drain, the new manifest is
 * accepted as the newest.
 */
import { sql } from "kysely"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { IncompatibleDeployment } from "../../runtime/errors.js"
import { makeOwnerClient, startRunner } from "../../runtime/index.js"
import { acceptManifests } from "../../runtime/runner/acceptManifests.js"
import { testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createPostgresDatabase, describeEachBackend } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { payOrders, shop, startWaitingOrders, type Shop } from "./shopVersions.js"

// The client of an untyped (test) registration.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

describeEachBackend("startup acceptance", (backend) => {
  let akter: TestAkter
  let drop: (() => Promise<void>) | undefined
  let v1: Shop
  let v2: Shop
  let v3: Shop

  beforeAll(async () => {
    ;[v1, v2, v3] = await Promise.all([shop(1), shop(2), shop(3)])
    if (backend === "postgres") {
      const database = await createPostgresDatabase()
      drop = database.drop
      akter = await testAkter({ databaseUrl: database.url })
    } else akter = await testAkter()
  })

  afterAll(async () => {
    await akter?.close()
    await drop?.()
  })

  const internals = () => internalsOf(akter)
  const db = () => internals().storage.db
  const hashOf = (release: Shop) => release.registration.workflows["fulfill"]!.hashes.compatibility
  const fulfillOf = (release: Shop) => release.registration.workflows["fulfill"]!

  const manifestRows = () =>
    db()
      .selectFrom("akter.manifests")
      .select(["owner_type", "workflow", "manifest_hash", "accepted_at_ms"])
      .orderBy("owner_type")
      .orderBy("workflow")
      .orderBy("manifest_hash")
      .execute()

  const openShopExecutions = async () => {
    const { rows } = await sql<{ count: number; oldest: number }>`
      SELECT count(*) AS count, min(started_at_ms) AS oldest FROM akter.executions
      WHERE owner_type = 'Shop' AND status <> 'finished'`.execute(db())
    return rows[0]!
  }

  /** Statements the handle sent while `run` ran (no runner is live during these tests). */
  const statementsOf = async <A>(run: () => Promise<A>): Promise<[A, number]> => {
    const before = internals().storage.counters.statements
    const result = await run()
    return [result, internals().storage.counters.statements - before]
  }

  describe("with release 1's executions waiting for payment", () => {
    beforeAll(() => startWaitingOrders(akter, v1, ["o-1", "o-2"]))

    it("refuses to start a runner that removed a step they recorded, naming workflow, rule, count and oldest start, and records nothing", async () => {
      const open = await openShopExecutions()
      expect(open.count).toBe(2)
      const before = await manifestRows()

      const refused = await startRunner({ akter, workflows: [v3.fulfill] }).then(
        () => undefined,
        (error: unknown) => error,
      )

      expect(refused).toBeInstanceOf(IncompatibleDeployment)
      const error = refused as IncompatibleDeployment
      expect(
        error.problems.map((p) => [p.owner, p.workflow, p.rule, p.step, p.severity, p.open]),
      ).toEqual([
        [
          "Shop",
          "fulfill",
          "step-removed",
          "reserve",
          "error",
          { count: 2, oldestStartedAtMs: open.oldest },
        ],
      ])
      const lines = error.message.split("\n")
      expect(lines[0]).toBe(
        "this runner's manifests cannot replay open executions; it refused to start and recorded nothing:",
      )
      expect(lines[1]).toBe(
        `  Shop.fulfill  step-removed  2 open executions, oldest started ${new Date(open.oldest).toISOString()}: ` +
          'step "reserve" of Shop.fulfill is not declared by this manifest; executions started under their start manifest may have reached it',
      )
      expect(lines).toHaveLength(3)
      expect(await manifestRows()).toEqual(before)
      expect(before.map((row) => row.manifest_hash)).not.toContain(hashOf(v3))
    })

    it("skips the full check when the runner's manifest is the one last accepted and every open execution uses it", async () => {
      const accepted = (await manifestRows()).find((row) => row.manifest_hash === hashOf(v1))!
      expect(accepted.accepted_at_ms).toBeGreaterThan(0)

      const [acceptedAt, statements] = await statementsOf(() =>
        acceptManifests(internals(), [fulfillOf(v1)]),
      )

      // begin, the advisory lock, the latest accepted manifests, the manifests in use, commit:
      // no read of groups, recorded steps or markers, and no write.
      expect(statements).toBe(5)
      expect(acceptedAt).toEqual(new Map([["Shop/fulfill", accepted.accepted_at_ms]]))
    })

    it("runs the full check for a new manifest and accepts it as the newest when it can replay them", async () => {
      const before = await manifestRows()
      const [acceptedAt, statements] = await statementsOf(() =>
        acceptManifests(internals(), [fulfillOf(v2)]),
      )

      // begin, lock, latest, in use, groups, recorded steps, markers, concurrency key paths, the
      // insert, commit.
      expect(statements).toBe(10)
      const rows = await manifestRows()
      const recorded = rows.find((row) => row.manifest_hash === hashOf(v2))!
      expect(acceptedAt).toEqual(new Map([["Shop/fulfill", recorded.accepted_at_ms]]))
      const newestBefore = Math.max(...before.map((row) => row.accepted_at_ms))
      expect(recorded.accepted_at_ms).toBeGreaterThan(newestBefore)
    })

    it("runs the full check again while open executions use a manifest the runner does not have", async () => {
      const before = await manifestRows()
      const [, statements] = await statementsOf(() => acceptManifests(internals(), [fulfillOf(v2)]))

      // The release-1 executions are open: groups, steps, markers and concurrency key paths are
      // read; nothing is written.
      expect(statements).toBe(9)
      expect(await manifestRows()).toEqual(before)
    })

    it("accepts the runner that removed the step once the executions drain, as the newest manifest", async () => {
      await payOrders(akter, v2, ["o-1", "o-2"])
      expect((await openShopExecutions()).count).toBe(0)
      const before = await manifestRows()

      const runner3 = await startRunner({ akter, workflows: [v3.fulfill], pollMs: 20 })
      await runner3.close()

      const rows = await manifestRows()
      const recorded = rows.find((row) => row.manifest_hash === hashOf(v3))!
      expect(recorded.accepted_at_ms).toBeGreaterThan(
        Math.max(...before.map((row) => row.accepted_at_ms)),
      )
      expect(rows.filter((row) => row.manifest_hash !== hashOf(v3))).toEqual(before)
    })
  })

  describe("a workflow the new manifest no longer declares", () => {
    const deskYaml = (workflows: string) => `
akter: 1
owner: Desk
workflows:
${workflows}`
    const open = "  open:\n    steps: { greet: { kind: sleep, duration: 1h } }\n"
    const close = "  close:\n    steps: { wave: { kind: sleep, duration: 1h } }\n"

    it("refuses the start while executions of it are open, when the runner passes its owner registrations", async () => {
      const before = await registrationFromYaml(deskYaml(open + close), "manifests/desk.yaml")
      const after = await registrationFromYaml(deskYaml(open), "manifests/desk.yaml")
      await acceptManifests(internals(), Object.values(before.workflows), [before])
      const client = makeOwnerClient<AnyClient>(akter, before)
      await client.close.start("d-1", undefined)
      const { rows } = await sql<{ started: number }>`
        SELECT started_at_ms AS started FROM akter.executions WHERE owner_type = 'Desk'`.execute(
        db(),
      )

      const refused = await acceptManifests(internals(), [after.workflows["open"]!], [after]).then(
        () => undefined,
        (error: unknown) => error,
      )

      expect(refused).toBeInstanceOf(IncompatibleDeployment)
      expect(
        (refused as IncompatibleDeployment).problems.map((p) => [p.workflow, p.rule, p.open]),
      ).toEqual([["close", "workflow-removed", { count: 1, oldestStartedAtMs: rows[0]!.started }]])
      expect((refused as IncompatibleDeployment).message).toContain(
        "  Desk.close  workflow-removed  1 open execution, oldest started",
      )
      // Without the owner registrations, only served workflows are judged: `close` is not one.
      await expect(
        acceptManifests(internals(), [after.workflows["open"]!]),
      ).resolves.toBeInstanceOf(Map)
    })
  })
})
