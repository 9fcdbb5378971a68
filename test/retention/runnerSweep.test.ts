/**
 * A runner runs the retention sweep on its own schedule: a finished execution older than the keep
 * period disappears without anyone calling the sweep. Stopping the schedule stops a paced sweep
 * under way instead of leaving it waiting between batches.
 */
import { randomUUID } from "node:crypto"
import { expect, it } from "vitest"
import { internalsOf } from "../../runtime/akter.js"
import { makeOwnerClient, startRunner } from "../../runtime/index.js"
import { makeLogger } from "../../runtime/log.js"
import { scheduleRetentionSweeps } from "../../runtime/runner/retentionSweeps.js"
import { runUntilIdle, testAkter } from "../../runtime/testing/index.js"
import { makeProbe } from "../runtime/probeWorkflows.js"
import { waitUntil } from "../support/waitUntil.js"

it("deletes a finished execution past the keep period on the runner's own schedule", async () => {
  const akter = await testAkter()
  const probe = await makeProbe()
  const runner = await startRunner({
    akter,
    workflows: probe.workflows,
    pollMs: 20,
    retention: { keepMs: 60_000, everyMs: 40 },
  })
  try {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const client = makeOwnerClient<any>(akter, probe.registration)
    const run = await client.quick.start(`o-${randomUUID()}`, { id: "kept-then-swept" })
    await runUntilIdle(akter, runner)
    expect((await run.result())._tag).toBe("Success")
    const rows = () =>
      internalsOf(akter)
        .storage.db.selectFrom("akter.executions")
        .select("execution_id")
        .where("execution_id", "=", run.executionId)
        .execute()
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(await rows()).toHaveLength(1)
    akter.advance("2 minutes")
    const deadline = Date.now() + 10_000
    while ((await rows()).length > 0) {
      if (Date.now() > deadline) throw new Error("the runner never swept the finished execution")
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(await run.status()).toEqual({ status: "unknown" })
  } finally {
    await runner.close()
    await akter.close()
  }
})

it("refuses to start a runner whose retention schedule is out of range, accepting nothing", async () => {
  const akter = await testAkter()
  const probe = await makeProbe()
  try {
    const accepted = () =>
      internalsOf(akter).storage.db.selectFrom("akter.manifests").select("workflow").execute()
    const before = await accepted()
    for (const [retention, message] of [
      [{ keepMs: -1 }, "retention keepMs must be a non-negative integer of ms, got -1"],
      [{ dutyCycle: 1.5 }, "retention dutyCycle must be above 0 and at most 1, got 1.5"],
      [{ everyMs: 0 }, "retention everyMs must be a positive number of ms, got 0"],
    ] as const) {
      await expect(startRunner({ akter, workflows: probe.workflows, retention })).rejects.toThrow(
        new RangeError(message),
      )
    }
    expect(await accepted()).toEqual(before)
  } finally {
    await akter.close()
  }
})

it("stops a paced sweep under way when the schedule stops, keeping what it deleted", async () => {
  const akter = await testAkter()
  const probe = await makeProbe()
  const runner = await startRunner({
    akter,
    workflows: probe.workflows,
    pollMs: 20,
    retention: false,
  })
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const client = makeOwnerClient<any>(akter, probe.registration)
  const run = await client.quick.start(`o-${randomUUID()}`, { id: "swept-then-stopped" })
  try {
    await runUntilIdle(akter, runner)
    expect((await run.result())._tag).toBe("Success")
  } finally {
    await runner.close()
  }
  try {
    akter.advance("8 days")
    const lines: Record<string, unknown>[] = []
    const log = makeLogger({
      level: "info",
      format: "json",
      write: (line) => lines.push(JSON.parse(line)),
    })
    // After its first batch (at least a millisecond) the sweep would wait 9,999 times as long.
    const stop = scheduleRetentionSweeps(internalsOf(akter), log, { everyMs: 1, dutyCycle: 0.0001 })
    await waitUntil(
      "the scheduled sweep deletes the execution",
      async () => (await run.status()).status === "unknown",
      { timeoutMs: 10_000, intervalMs: 5 },
    )
    stop()
    await waitUntil("the sweep stops after stop", () => lines.length > 0, {
      timeoutMs: 2_000,
      intervalMs: 5,
    })
    expect(lines).toMatchObject([{ message: "retention sweep", executions: 1, skipped: true }])
  } finally {
    await akter.close()
  }
})
