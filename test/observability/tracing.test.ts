/**
 * Spans through Effect's tracer: a client call, each pass of the execution, and each step call as
 * a child of its pass, collected by an in-memory tracer.
 */
import { randomUUID } from "node:crypto"
import { expect, it } from "vitest"
import { makeOwnerClient, startRunner } from "../../runtime/index.js"
import { recordingTracer, runUntilIdle, testAkter } from "../../runtime/testing/index.js"
import { makeProbe } from "../runtime/probeWorkflows.js"

it("records a span per client call, per pass and per step, the steps children of their pass", async () => {
  const { tracer, spans } = recordingTracer()
  const akter = await testAkter({ tracer })
  const probe = await makeProbe()
  const runner = await startRunner({ akter, workflows: probe.workflows, pollMs: 20 })
  try {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const client = makeOwnerClient<any>(akter, probe.registration)
    const owner = `o-${randomUUID()}`
    const run = await client.replay.start(owner, { label: "traced" })
    await runUntilIdle(akter, runner)
    akter.advance("2 hours")
    await runUntilIdle(akter, runner)
    expect((await run.result())._tag).toBe("Success")

    const start = spans.find((span) => span.name === "akter.client.start")
    expect(start?.attributes).toMatchObject({
      "akter.owner_type": "Probe",
      "akter.owner_id": owner,
      "akter.workflow": "replay",
    })
    const passes = spans.filter(
      (span) =>
        span.name === "akter.pass" && span.attributes["akter.execution_id"] === run.executionId,
    )
    // The first pass suspends on the sleep (its span ends interrupted); the second finishes.
    expect(passes.map((pass) => pass.outcome)).toEqual(["interrupted", "ok"])
    const stepsOf = (pass: (typeof passes)[number]) =>
      spans
        .filter((span) => span.name === "akter.step" && span.parentId === pass.spanId)
        .map((span) => [
          span.attributes["akter.step"],
          span.attributes["akter.step.kind"],
          span.outcome,
        ])
    expect(stepsOf(passes[0]!)).toEqual([
      ["count", "activity", "ok"],
      ["nap", "sleep", "interrupted"],
    ])
    expect(stepsOf(passes[1]!)).toEqual([
      ["count", "activity", "ok"],
      ["nap", "sleep", "ok"],
      ["after", "activity", "ok"],
    ])
    expect(passes[1]!.traceId).not.toBe("")
    expect(spans.some((span) => span.name === "akter.client.result" && span.outcome === "ok")).toBe(
      true,
    )
  } finally {
    await runner.close()
    await akter.close()
  }
})

it("makes no span at all without a tracer", async () => {
  const { spans } = recordingTracer()
  const akter = await testAkter()
  const probe = await makeProbe()
  const runner = await startRunner({ akter, workflows: probe.workflows, pollMs: 20 })
  try {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const client = makeOwnerClient<any>(akter, probe.registration)
    const run = await client.quick.start(`o-${randomUUID()}`, { id: "untraced" })
    await runUntilIdle(akter, runner)
    expect((await run.result())._tag).toBe("Success")
    expect(spans).toEqual([])
  } finally {
    await runner.close()
    await akter.close()
  }
})
