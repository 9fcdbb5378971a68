/**
 * A runner's startup acceptance judges a changed concurrency key against the open executions, which
 * record the key path they started under (it is outside the compatibility hash, so the fast path
 * looks at the path too): a changed path with executions open under the old one refuses the runner
 * with `concurrency-key-changed`, naming how many; a raised limit, and a removed key, start. The
 * lock-file side of the rules is covered by test/compatibility/fixtures.test.ts.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { IncompatibleDeployment } from "../../runtime/errors.js"
import { implementWorkflow, makeOwnerClient, startRunner } from "../../runtime/index.js"
import type { OwnerRegistration } from "../../runtime/model/registration.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"
import { step, type UntypedSteps } from "../support/untypedSteps.js"

const manifest = (concurrency: string) => `
akter: 1
owner: Desk
workflows:
  ticket:
    input: { customerId: string, accountId: string }
${concurrency}
    steps:
      rest: { kind: sleep, duration: 1h }
`

const runnerOf = (akter: TestAkter, registration: OwnerRegistration) =>
  startRunner({
    akter,
    workflows: [
      implementWorkflow(registration, "ticket", {
        activities: {},
        body: (_: unknown, wf: UntypedSteps) => Effect.asVoid(step(wf.rest())),
      }),
    ],
  })

describeEachBackend(
  "concurrency keys at runner startup",
  (backend) => {
    let akter: TestAkter

    beforeAll(async () => {
      akter = await openTestAkter(backend)
      const first = await registrationFromYaml(
        manifest("    concurrency: { key: customerId, limit: 1 }"),
        "manifests/desk.yaml",
      )
      const runner = await runnerOf(akter, first)
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const client = makeOwnerClient<any>(akter, first)
      for (const n of [1, 2, 3]) {
        await client.ticket.start(`t-${n}`, { customerId: "c", accountId: `a-${n}` })
      }
      await runner.close()
    })

    afterAll(() => akter?.close())

    it("refuses a runner whose key path differs from the one open executions started under", async () => {
      const moved = await registrationFromYaml(
        manifest("    concurrency: { key: accountId, limit: 1 }"),
        "manifests/desk.yaml",
      )
      const refused = await runnerOf(akter, moved).then(
        async (runner) => {
          await runner.close()
          return undefined
        },
        (error: unknown) => error,
      )
      expect(refused).toBeInstanceOf(IncompatibleDeployment)
      const problems = (refused as IncompatibleDeployment).problems
      expect(problems.map((p) => [p.rule, p.severity, p.workflow, p.open?.count])).toEqual([
        ["concurrency-key-changed", "error", "ticket", 3],
      ])
      expect(problems[0]!.message).toContain(
        'the concurrency key of Desk.ticket is "accountId" in this manifest but "customerId"',
      )
    })

    it("starts a runner that raises the limit, or drops the key", async () => {
      for (const concurrency of ["    concurrency: { key: customerId, limit: 5 }", ""]) {
        const registration = await registrationFromYaml(
          manifest(concurrency),
          "manifests/desk.yaml",
        )
        const runner = await runnerOf(akter, registration)
        await runner.close()
      }
    })
  },
  ["pglite"],
)
