/**
 * Sends a handle's spans and metrics to an OpenTelemetry collector over OTLP/HTTP, with Effect's
 * own exporter (`effect/observability`): akter's spans are made by Effect's tracer and its metrics
 * live in an Effect metric registry, so the exporter that reads both needs no bridge and no
 * dependency beyond the `effect` the application already has. Loaded only when telemetry is asked
 * for, so a handle without it loads none of the exporter.
 *
 * Settings come from `createAkter({ telemetry })`, else from the standard OpenTelemetry
 * variables: `OTEL_EXPORTER_OTLP_ENDPOINT` (and the `_TRACES_`/`_METRICS_` endpoints),
 * `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `http/json`),
 * `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_METRIC_EXPORT_INTERVAL`, and `OTEL_SDK_DISABLED`.
 */
import type { Tracer } from "effect"
import type { AkterMetrics } from "./metrics.js"

export interface TelemetryOptions {
  /**
   * The collector's OTLP/HTTP base URL, e.g. `http://localhost:4318`: spans go to `/v1/traces`,
   * metrics to `/v1/metrics`. Default: `OTEL_EXPORTER_OTLP_ENDPOINT`; with neither, nothing is sent.
   */
  readonly otlpUrl?: string | undefined
  /** Default: `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`. */
  readonly protocol?: "http/protobuf" | "http/json" | undefined
  /** The `service.name` of the resource. Default: `OTEL_SERVICE_NAME`, else `akter`. */
  readonly serviceName?: string | undefined
  /** Sent with every export (an API key). Default: `OTEL_EXPORTER_OTLP_HEADERS`. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** How often spans are sent. Default: `OTEL_BSP_SCHEDULE_DELAY`, else 5 000 ms. */
  readonly spanIntervalMs?: number | undefined
  /** How often metrics are sent. Default: `OTEL_METRIC_EXPORT_INTERVAL`, else 60 000 ms. */
  readonly metricIntervalMs?: number | undefined
}

/** Where and how to export, once options and environment are resolved. */
export interface TelemetrySettings {
  readonly tracesUrl: string | undefined
  readonly metricsUrl: string | undefined
  readonly protocol: "http/protobuf" | "http/json"
  readonly serviceName: string
  readonly headers: Readonly<Record<string, string>>
  readonly spanIntervalMs: number
  readonly metricIntervalMs: number
}

export interface Telemetry {
  /** The exporting tracer; undefined when only metrics are sent. */
  readonly tracer: Tracer.Tracer | undefined
  /** Sends what is still buffered (for at most a few seconds), then stops exporting. */
  readonly close: () => Promise<void>
}

type Environment = Readonly<Record<string, string | undefined>>

const signalUrl = (base: string | undefined, signal: "traces" | "metrics") =>
  base === undefined ? undefined : `${base.replace(/\/+$/, "")}/v1/${signal}`

/** `key1=value1,key2=value2`, each side percent-decoded, as the OpenTelemetry variables spell headers. */
const parseHeaders = (text: string | undefined): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(
      pair.slice(at + 1).trim(),
    )
  }
  return headers
}

const positiveMs = (name: string, value: number | string | undefined, fallback: number) => {
  if (value === undefined || value === "") return fallback
  const ms = Number(value)
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new Error(`telemetry: ${name} must be a positive number of milliseconds, not ${value}`)
  }
  return ms
}

/**
 * Resolves options against the environment; undefined when nothing is to be exported.
 *
 * @example
 * telemetrySettings({}, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })
 * // { tracesUrl: "http://collector:4318/v1/traces", metricsUrl: "http://collector:4318/v1/metrics", protocol: "http/protobuf", … }
 */
export const telemetrySettings = (
  options: TelemetryOptions,
  env: Environment,
): TelemetrySettings | undefined => {
  if (options.otlpUrl === undefined && env["OTEL_SDK_DISABLED"]?.trim().toLowerCase() === "true") {
    return undefined
  }
  const fromEnvironment = (signal: "TRACES" | "METRICS") => {
    if (env[`OTEL_${signal}_EXPORTER`]?.trim().toLowerCase() === "none") return undefined
    return (
      env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`] ||
      signalUrl(
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] || undefined,
        signal === "TRACES" ? "traces" : "metrics",
      )
    )
  }
  const tracesUrl = signalUrl(options.otlpUrl, "traces") ?? fromEnvironment("TRACES")
  const metricsUrl = signalUrl(options.otlpUrl, "metrics") ?? fromEnvironment("METRICS")
  if (tracesUrl === undefined && metricsUrl === undefined) return undefined
  for (const url of [tracesUrl, metricsUrl]) {
    if (url !== undefined && !/^https?:\/\//.test(url)) {
      throw new Error(`telemetry: the OTLP endpoint must be an http(s) URL, not ${url}`)
    }
  }
  const protocol = options.protocol ?? env["OTEL_EXPORTER_OTLP_PROTOCOL"] ?? "http/protobuf"
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    throw new Error(
      `telemetry: the OTLP protocol must be http/protobuf or http/json, not ${protocol} (akter sends OTLP over HTTP, not gRPC)`,
    )
  }
  return {
    tracesUrl,
    metricsUrl,
    protocol,
    serviceName: options.serviceName ?? (env["OTEL_SERVICE_NAME"] || "akter"),
    headers: options.headers ?? parseHeaders(env["OTEL_EXPORTER_OTLP_HEADERS"]),
    spanIntervalMs: positiveMs(
      "spanIntervalMs",
      options.spanIntervalMs ?? env["OTEL_BSP_SCHEDULE_DELAY"],
      5_000,
    ),
    metricIntervalMs: positiveMs(
      "metricIntervalMs",
      options.metricIntervalMs ?? env["OTEL_METRIC_EXPORT_INTERVAL"],
      60_000,
    ),
  }
}

/**
 * Starts exporting, or resolves undefined when the options and environment ask for nothing.
 *
 * @example
 * const telemetry = await startTelemetry({ otlpUrl: "http://localhost:4318" }, metrics)
 * // ... spans through telemetry.tracer ...
 * await telemetry?.close()
 */
export const startTelemetry = async (
  options: TelemetryOptions,
  metrics: AkterMetrics,
): Promise<Telemetry | undefined> => {
  const settings = telemetrySettings(options, process.env)
  if (settings === undefined) return undefined
  const [
    Context,
    Effect,
    Exit,
    Layer,
    Metric,
    Scope,
    Tracer,
    OtlpTracer,
    OtlpMetrics,
    OtlpSerialization,
    FetchHttpClient,
  ] = await Promise.all([
    import("effect/Context"),
    import("effect/Effect"),
    import("effect/Exit"),
    import("effect/Layer"),
    import("effect/Metric"),
    import("effect/Scope"),
    import("effect/Tracer"),
    import("effect/observability/OtlpTracer"),
    import("effect/observability/OtlpMetrics"),
    import("effect/observability/OtlpSerialization"),
    import("effect/http/FetchHttpClient"),
  ])
  const resource = { serviceName: settings.serviceName }
  const common = { resource, headers: settings.headers }
  const layers = [
    ...(settings.tracesUrl === undefined
      ? []
      : [
          OtlpTracer.layer({
            ...common,
            url: settings.tracesUrl,
            exportInterval: settings.spanIntervalMs,
          }),
        ]),
    ...(settings.metricsUrl === undefined
      ? []
      : [
          OtlpMetrics.layer({
            ...common,
            url: settings.metricsUrl,
            exportInterval: settings.metricIntervalMs,
          }),
        ]),
  ] as const
  const exporters = Layer.mergeAll(layers[0]!, ...layers.slice(1)).pipe(
    Layer.provide(
      settings.protocol === "http/json"
        ? OtlpSerialization.layerJson
        : OtlpSerialization.layerProtobuf,
    ),
    Layer.provide(FetchHttpClient.layer),
  )
  const scope = Scope.makeUnsafe()
  // The metrics exporter reads the registry of the context it is built in: the handle's.
  const built = await Effect.runPromise(
    Layer.buildWithScope(exporters, scope).pipe(
      Effect.provideService(
        Metric.MetricRegistry,
        Context.get(metrics.context, Metric.MetricRegistry),
      ),
    ),
  )
  return {
    tracer: settings.tracesUrl === undefined ? undefined : Context.get(built, Tracer.Tracer),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void)),
  }
}
