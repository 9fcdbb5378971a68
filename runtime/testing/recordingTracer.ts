/**
 * An in-memory tracer for tests: every span akter makes, with its parent, attributes and how it
 * ended. Pass it to `createAkter({ tracer })` (or `testAkter({ tracer })`).
 */
import { randomBytes } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import type { Context } from "effect"

export interface RecordedSpan {
  readonly name: string
  readonly spanId: string
  readonly traceId: string
  /** The parent's span id, if the span has a parent. */
  readonly parentId: string | undefined
  readonly attributes: Readonly<Record<string, unknown>>
  /** `ok`; `error` (a failure or defect); `interrupted` (e.g. a pass that suspended). */
  readonly outcome: "ok" | "error" | "interrupted"
  readonly durationMs: number
}

export interface RecordingTracer {
  readonly tracer: Tracer.Tracer
  /** Spans that ended, in the order they ended. */
  readonly spans: RecordedSpan[]
}

class RecordingSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly spanId = randomBytes(8).toString("hex")
  readonly traceId: string
  readonly attributes = new Map<string, unknown>()
  status: Tracer.SpanStatus

  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly annotations: Context.Context<never>,
    readonly links: Array<Tracer.SpanLink>,
    readonly sampled: boolean,
    readonly kind: Tracer.SpanKind,
    startTime: bigint,
    private readonly record: (span: RecordedSpan) => void,
  ) {
    this.traceId = Option.getOrUndefined(parent)?.traceId ?? randomBytes(16).toString("hex")
    this.status = { _tag: "Started", startTime }
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    const startTime = this.status.startTime
    this.status = { _tag: "Ended", startTime, endTime, exit }
    this.record({
      name: this.name,
      spanId: this.spanId,
      traceId: this.traceId,
      parentId: Option.getOrUndefined(this.parent)?.spanId,
      attributes: Object.fromEntries(this.attributes),
      outcome: Exit.isSuccess(exit)
        ? "ok"
        : Cause.hasInterruptsOnly(exit.cause)
          ? "interrupted"
          : "error",
      durationMs: Number(endTime - startTime) / 1e6,
    })
  }

  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
  }

  event(): void {}

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.links.push(...links)
  }
}

/**
 * @example
 * const { tracer, spans } = recordingTracer()
 * const akter = await testAkter({ tracer })
 * // ... run a workflow ...
 * expect(spans.map((span) => span.name)).toContain("akter.pass")
 */
export const recordingTracer = (): RecordingTracer => {
  const spans: RecordedSpan[] = []
  const tracer = Tracer.make({
    span: (options) =>
      new RecordingSpan(
        options.name,
        options.parent,
        options.annotations,
        [...options.links],
        options.sampled,
        options.kind,
        options.startTime,
        (span) => spans.push(span),
      ),
  })
  return { tracer, spans }
}
