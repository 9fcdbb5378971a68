/**
 * Spans and metrics at the tools teams already run: a real OTLP/HTTP receiver on loopback
 * (test/support/otlpReceiver.ts) gets every span of an execution — the client's start, each pass,
 * each step — in one trace with its parent links, from `createAkter({ telemetry })` in this process
 * and, across processes, from `akter run` configured by the standard OpenTelemetry variables; the
 * metrics arrive over OTLP and are scraped from `akter run --metrics-port` in Prometheus's format.
 */
import { createServer } from "node:net"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  createAkter,
  makeOwnerClient,
  prometheusMetrics,
  startRunner,
  type Akter,
} from "../../runtime/index.js"
import { runUntilIdle } from "../../runtime/testing/index.js"
import { makeProbe } from "../runtime/probeWorkflows.js"
import {
  createPostgresDatabase,
  describeEachBackend,
  describePostgres,
  openTestAkter,
} from "../support/backends.js"
import { startChildRunner, type ChildRunner } from "../support/childRunner.js"
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../support/otlpReceiver.js"
import { waitUntil } from "../support/waitUntil.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

/** The spans of one execution: its start, its passes, and each pass's steps. */
const executionTrace = (spans: readonly ReceivedSpan[], executionId: string) => {
  const passes = spans.filter(
    (span) => span.name === "akter.pass" && span.attributes["akter.execution_id"] === executionId,
  )
  const start = spans.find((span) => span.spanId === passes[0]?.parentSpanId)
  const stepsOf = (pass: ReceivedSpan) =>
    spans
      .filter((span) => span.name === "akter.step" && span.parentSpanId === pass.spanId)
      .map(
        (span) =>
          `${String(span.attributes["akter.step"])}:${String(span.attributes["akter.step.kind"])}`,
      )
  return { start, passes, stepsOf }
}

describeEachBackend("OTLP export from createAkter({ telemetry })", (backend) => {
  let receiver: OtlpReceiver

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
  })
  afterAll(async () => {
    await receiver?.close()
  })

  it("sends one execution's start, passes and steps as one trace, and its metrics, to the collector", async () => {
    const akter = await openTestAkter(backend, {
      telemetry: { otlpUrl: receiver.url, protocol: "http/json", serviceName: "shop" },
    })
    const probe = await makeProbe()
    const runner = await startRunner({ akter, workflows: probe.workflows, pollMs: 20 })
    const client = makeOwnerClient<AnyClient>(akter, probe.registration)
    const owner = `o-${randomUUID()}`
    let executionId: string
    try {
      const run = await client.replay.start(owner, { label: "traced" })
      executionId = run.executionId
      await runUntilIdle(akter, runner)
      akter.advance("2 hours")
      await runUntilIdle(akter, runner)
      expect((await run.result())._tag).toBe("Success")
    } finally {
      await runner.close()
      // Closing the handle sends what the exporter still holds.
      await akter.close()
    }

    expect(
      receiver.requests.some((r) => r.path === "/v1/traces" && r.contentType.includes("json")),
    ).toBe(true)
    const { start, passes, stepsOf } = executionTrace(receiver.spans, executionId)
    expect(start).toMatchObject({
      name: "akter.client.start",
      serviceName: "shop",
      parentSpanId: "",
      attributes: {
        "akter.owner_type": "Probe",
        "akter.owner_id": owner,
        "akter.workflow": "replay",
      },
    })
    // Every pass is a child of the start, in its trace: the first suspends on the sleep.
    expect(passes.map((pass) => [pass.traceId, pass.parentSpanId])).toEqual([
      [start!.traceId, start!.spanId],
      [start!.traceId, start!.spanId],
    ])
    expect(passes[0]!.attributes).toMatchObject({
      "akter.execution_id": executionId,
      "akter.owner_type": "Probe",
      "akter.owner_id": owner,
      "akter.workflow": "replay",
      "akter.tenant": "default",
    })
    expect(passes.map(stepsOf)).toEqual([
      ["count:activity", "nap:sleep"],
      ["count:activity", "nap:sleep", "after:activity"],
    ])

    const metric = (name: string) => receiver.metrics.filter((m) => m.name === name).at(-1)
    expect(metric("akter_executions_started_total")).toMatchObject({
      serviceName: "shop",
      kind: "sum",
      points: [{ attributes: { owner_type: "Probe", workflow: "replay" }, value: 1 }],
    })
    expect(metric("akter_executions_finished_total")?.points).toEqual([
      { attributes: { owner_type: "Probe", workflow: "replay", outcome: "succeeded" }, value: 1 },
    ])
    // Two activities ran once each (count, after); replays run nothing.
    expect(
      metric("akter_activity_duration_seconds")?.points.map((point) => [
        point.attributes["step"],
        point.attributes["outcome"],
        point.value,
      ]),
    ).toEqual(
      expect.arrayContaining([
        ["count", "success", 1],
        ["after", "success", 1],
      ]),
    )
    expect(metric("akter_timer_lag_seconds")?.kind).toBe("histogram")
    // The start went straight to this process's runner; the sleep's timer was claimed once.
    expect(metric("akter_timer_lag_seconds")!.points[0]!.value).toBe(1)
    expect(metric("akter_lease_changes_total")?.points).toContainEqual({
      attributes: { change: "acquired" },
      value: 256,
    })
  })
})

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

describePostgres("telemetry across processes: akter run and a client", () => {
  let receiver: OtlpReceiver
  let database: { url: string; drop: () => Promise<void> }
  let child: ChildRunner | undefined
  let client: Akter | undefined

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    database = await createPostgresDatabase()
  })
  afterAll(async () => {
    await child?.kill("SIGKILL")
    await client?.close()
    await database?.drop()
    await receiver?.close()
  })

  it(
    "joins the runner's passes to the client's start span, and serves the runner's metrics to Prometheus",
    { timeout: 180_000 },
    async () => {
      const metricsPort = await freePort()
      child = startChildRunner({
        app: "test/observability/probeApp.ts",
        databaseUrl: database.url,
        args: ["--metrics-port", String(metricsPort), "--metrics-host", "127.0.0.1"],
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_SERVICE_NAME: "shop-runner",
          OTEL_BSP_SCHEDULE_DELAY: "100",
        },
      })
      await child.waitForOutput("runner started", 120_000)
      client = await createAkter({
        databaseUrl: database.url,
        telemetry: { otlpUrl: receiver.url, protocol: "http/json", serviceName: "shop-api" },
      })
      const probe = await makeProbe()
      const orders = makeOwnerClient<AnyClient>(client, probe.registration)
      const ids: string[] = []
      for (const n of [1, 2, 3]) {
        const run = await orders.quick.start(`o-${n}`, { id: `q-${n}` })
        expect(await run.result({ timeout: "60 seconds" })).toEqual({
          _tag: "Success",
          value: { id: `q-${n}` },
        })
        ids.push(run.executionId)
      }
      await client.close()
      client = undefined

      await waitUntil(
        "the runner exports the passes",
        () => ids.every((id) => executionTrace(receiver.spans, id).passes.length > 0),
        { timeoutMs: 20_000, details: () => child?.output() ?? "" },
      )
      for (const id of ids) {
        const { start, passes, stepsOf } = executionTrace(receiver.spans, id)
        // The start came from this process as JSON; the pass from the runner, protobuf by default.
        expect(start).toMatchObject({
          name: "akter.client.start",
          serviceName: "shop-api",
          encoding: "json",
        })
        expect(passes).toHaveLength(1)
        expect(passes[0]).toMatchObject({
          serviceName: "shop-runner",
          encoding: "protobuf",
          traceId: start!.traceId,
          parentSpanId: start!.spanId,
        })
        expect(stepsOf(passes[0]!)).toEqual(["touch:activity"])
      }

      const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
      expect(scrape.status).toBe(200)
      expect(scrape.headers.get("content-type")).toContain("text/plain")
      const text = await scrape.text()
      expect(text).toContain(
        'akter_executions_finished_total{owner_type="Probe",workflow="quick",outcome="succeeded"} 3',
      )
      expect(text).toMatch(
        /^akter_activity_duration_seconds_count\{owner_type="Probe",workflow="quick",step="touch",outcome="success"\} 3$/m,
      )
      expect(text).toMatch(/^akter_timer_lag_seconds_count 3$/m)
      expect(text).toMatch(/^akter_runners 1$/m)
      expect(text).toMatch(/^akter_runner_buckets 256$/m)
      expect(text).toMatch(/^akter_runner_passes 0$/m)
      expect((await fetch(`http://127.0.0.1:${metricsPort}/other`)).status).toBe(404)
      expect(await child.kill("SIGTERM")).toEqual({ code: 0, signal: null })
      child = undefined
    },
  )
})

it("renders a handle's metrics in Prometheus's text format", async () => {
  const akter = await openTestAkter("pglite")
  const probe = await makeProbe()
  const runner = await startRunner({ akter, workflows: probe.workflows, pollMs: 20 })
  try {
    const client = makeOwnerClient<AnyClient>(akter, probe.registration)
    await client.quick.start("o-1", { id: "a" })
    await client.quick.start("o-1", { id: "a" }) // attaches: not a second start
    await runUntilIdle(akter, runner)
    const text = await prometheusMetrics(akter)
    expect(text).toContain("# TYPE akter_executions_started_total counter")
    expect(text).toContain('akter_executions_started_total{owner_type="Probe",workflow="quick"} 1')
    expect(text).toContain(
      'akter_executions_finished_total{owner_type="Probe",workflow="quick",outcome="succeeded"} 1',
    )
    expect(text).toContain("# TYPE akter_activity_duration_seconds histogram")
    expect(text).toMatch(/^akter_runner_buckets 256$/m)
  } finally {
    await runner.close()
    await akter.close()
  }
})
