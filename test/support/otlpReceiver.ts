/**
 * A real OTLP/HTTP receiver on loopback, as an OpenTelemetry collector's would be: it accepts
 * `POST /v1/traces` and `POST /v1/metrics` in either encoding the specification allows — JSON, or
 * protobuf, decoded here from the wire format (field numbers of opentelemetry-proto's
 * `ExportTraceServiceRequest`) — and keeps every span and metric it was sent.
 */
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedSpan {
  readonly serviceName: string | undefined
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  /** Empty for a root span. */
  readonly parentSpanId: string
  readonly attributes: Readonly<Record<string, unknown>>
  /** How the request carried it. */
  readonly encoding: "json" | "protobuf"
}

export interface ReceivedMetric {
  readonly serviceName: string | undefined
  readonly name: string
  readonly kind: "sum" | "gauge" | "histogram" | "summary"
  readonly points: readonly {
    readonly attributes: Readonly<Record<string, unknown>>
    /** A sum's or gauge's value; a histogram's count. */
    readonly value: number
  }[]
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  readonly url: string
  readonly spans: ReceivedSpan[]
  readonly metrics: ReceivedMetric[]
  /** Every request: its path and content type. */
  readonly requests: { readonly path: string; readonly contentType: string }[]
  close(): Promise<void>
}

// --- protobuf wire format --------------------------------------------------------------------

type Field = { readonly number: number } & (
  | { readonly wire: 0; readonly value: bigint }
  | { readonly wire: 1 | 5; readonly value: Buffer }
  | { readonly wire: 2; readonly value: Buffer }
)

const readVarint = (bytes: Buffer, at: number): [bigint, number] => {
  let value = 0n
  let shift = 0n
  for (;;) {
    const byte = bytes[at++]!
    value |= BigInt(byte & 0x7f) << shift
    if ((byte & 0x80) === 0) return [value, at]
    shift += 7n
  }
}

/** The fields of one message, in order. */
const fieldsOf = (bytes: Buffer): Field[] => {
  const fields: Field[] = []
  let at = 0
  while (at < bytes.length) {
    const [tag, next] = readVarint(bytes, at)
    at = next
    const number = Number(tag >> 3n)
    const wire = Number(tag & 7n)
    if (wire === 0) {
      const [value, after] = readVarint(bytes, at)
      fields.push({ number, wire, value })
      at = after
    } else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4
      fields.push({ number, wire, value: bytes.subarray(at, at + size) })
      at += size
    } else if (wire === 2) {
      const [length, after] = readVarint(bytes, at)
      const end = after + Number(length)
      fields.push({ number, wire, value: bytes.subarray(after, end) })
      at = end
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`)
    }
  }
  return fields
}

const messages = (fields: readonly Field[], number: number): Buffer[] =>
  fields.flatMap((field) => (field.number === number && field.wire === 2 ? [field.value] : []))

const text = (fields: readonly Field[], number: number): string =>
  messages(fields, number)[0]?.toString("utf8") ?? ""

const hex = (fields: readonly Field[], number: number): string =>
  messages(fields, number)[0]?.toString("hex") ?? ""

/** AnyValue: string 1, bool 2, int 3, double 4. */
const anyValue = (bytes: Buffer): unknown => {
  const [field] = fieldsOf(bytes)
  if (field === undefined) return undefined
  if (field.number === 1 && field.wire === 2) return field.value.toString("utf8")
  if (field.number === 2 && field.wire === 0) return field.value !== 0n
  if (field.number === 3 && field.wire === 0) return Number(BigInt.asIntN(64, field.value))
  if (field.number === 4 && field.wire === 1) return field.value.readDoubleLE(0)
  return undefined
}

/** KeyValue: key 1, value 2. */
const protobufAttributes = (encoded: readonly Buffer[]): Record<string, unknown> =>
  Object.fromEntries(
    encoded.map((bytes) => {
      const fields = fieldsOf(bytes)
      const value = messages(fields, 2)[0]
      return [text(fields, 1), value === undefined ? undefined : anyValue(value)]
    }),
  )

/** ExportTraceServiceRequest → ResourceSpans 1 → (Resource 1, ScopeSpans 2 → Span 2). */
const protobufSpans = (body: Buffer): ReceivedSpan[] =>
  messages(fieldsOf(body), 1).flatMap((resourceSpans) => {
    const resourceFields = fieldsOf(resourceSpans)
    const resource = messages(resourceFields, 1)[0]
    const serviceName = resource
      ? protobufAttributes(messages(fieldsOf(resource), 1))["service.name"]
      : undefined
    return messages(resourceFields, 2).flatMap((scopeSpans) =>
      messages(fieldsOf(scopeSpans), 2).map((span) => {
        const fields = fieldsOf(span)
        return {
          serviceName: serviceName as string | undefined,
          name: text(fields, 5),
          traceId: hex(fields, 1),
          spanId: hex(fields, 2),
          parentSpanId: hex(fields, 4),
          attributes: protobufAttributes(messages(fields, 9)),
          encoding: "protobuf" as const,
        }
      }),
    )
  })

// --- JSON ------------------------------------------------------------------------------------

interface JsonKeyValue {
  readonly key: string
  readonly value: Record<string, unknown>
}

const jsonAttributes = (list: readonly JsonKeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries(
    (list ?? []).map(({ key, value }) => {
      const [kind, raw] = Object.entries(value)[0] ?? []
      return [key, kind === "intValue" ? Number(raw) : raw]
    }),
  )

interface JsonResource {
  readonly resource?: { readonly attributes?: readonly JsonKeyValue[] }
}

const serviceOf = (resource: JsonResource) =>
  jsonAttributes(resource.resource?.attributes)["service.name"] as string | undefined

const jsonSpans = (body: Buffer): ReceivedSpan[] => {
  const request = JSON.parse(body.toString("utf8")) as {
    resourceSpans: (JsonResource & {
      scopeSpans: {
        spans: {
          name: string
          traceId: string
          spanId: string
          parentSpanId?: string
          attributes?: JsonKeyValue[]
        }[]
      }[]
    })[]
  }
  return request.resourceSpans.flatMap((resourceSpans) =>
    resourceSpans.scopeSpans.flatMap((scope) =>
      scope.spans.map((span) => ({
        serviceName: serviceOf(resourceSpans),
        name: span.name,
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? "",
        attributes: jsonAttributes(span.attributes),
        encoding: "json" as const,
      })),
    ),
  )
}

interface JsonPoint {
  readonly attributes?: JsonKeyValue[]
  readonly asInt?: string | number
  readonly asDouble?: number
  readonly count?: string | number
}

const jsonMetrics = (body: Buffer): ReceivedMetric[] => {
  const request = JSON.parse(body.toString("utf8")) as {
    resourceMetrics: (JsonResource & {
      scopeMetrics: { metrics: (Record<string, unknown> & { name: string })[] }[]
    })[]
  }
  return request.resourceMetrics.flatMap((resourceMetrics) =>
    resourceMetrics.scopeMetrics.flatMap((scope) =>
      scope.metrics.flatMap((metric) => {
        const kind = (["sum", "gauge", "histogram", "summary"] as const).find(
          (candidate) => metric[candidate] !== undefined,
        )
        if (kind === undefined) return []
        const points = (metric[kind] as { dataPoints: JsonPoint[] }).dataPoints
        return [
          {
            serviceName: serviceOf(resourceMetrics),
            name: metric.name,
            kind,
            points: points.map((point) => ({
              attributes: jsonAttributes(point.attributes),
              value: Number(point.asInt ?? point.asDouble ?? point.count ?? Number.NaN),
            })),
          },
        ]
      }),
    ),
  )
}

// --- the server ------------------------------------------------------------------------------

const bodyOf = (request: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

/** Starts a receiver on 127.0.0.1, on a free port. */
export const startOtlpReceiver = async (): Promise<OtlpReceiver> => {
  const spans: ReceivedSpan[] = []
  const metrics: ReceivedMetric[] = []
  const requests: { path: string; contentType: string }[] = []
  const server = createServer((request, response) => {
    bodyOf(request)
      .then((body) => {
        const path = request.url ?? ""
        const contentType = request.headers["content-type"] ?? ""
        requests.push({ path, contentType })
        const json = contentType.includes("json")
        if (path === "/v1/traces") spans.push(...(json ? jsonSpans(body) : protobufSpans(body)))
        else if (path === "/v1/metrics" && json) metrics.push(...jsonMetrics(body))
        response.writeHead(200, { "content-type": json ? "application/json" : contentType })
        response.end(json ? "{}" : "")
      })
      .catch((error: unknown) => {
        response.writeHead(400).end(String(error))
      })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    metrics,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
