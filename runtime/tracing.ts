/**
 * Spans for passes, steps and client calls, through Effect's tracer — so any OpenTelemetry setup
 * Effect supports (its OTLP exporter, which `createAkter({ telemetry })` configures, or a tracer of
 * the application's own) receives them. Tracing is off unless the handle has a tracer; then a pass
 * is a span (`akter.pass`), each step call a child of it (`akter.step`), and each client call a span
 * of its own (`akter.client.start`, ...). Off, the hot path does not create a single span object.
 *
 * An execution's spans form one trace across processes: a traced start records its span's W3C
 * `traceparent` with the execution's caller, and every pass, on whichever runner, is a child of it.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>

/** Wraps `effect` in a span when a tracer is configured; otherwise returns it untouched. */
export const traced = <A, E>(
  tracer: Tracer.Tracer | undefined,
  name: string,
  attributes: SpanAttributes,
  effect: Effect.Effect<A, E>,
  parent?: Tracer.AnySpan,
): Effect.Effect<A, E> =>
  tracer === undefined
    ? effect
    : effect.pipe(
        Effect.withSpan(name, parent === undefined ? { attributes } : { attributes, parent }),
        Effect.withTracer(tracer),
      )

/**
 * Runs a Promise-returning client call in a span when a tracer is configured; the call is given
 * that span, to record it where other spans should find it.
 */
export const tracedCall = <A>(
  tracer: Tracer.Tracer | undefined,
  name: string,
  attributes: SpanAttributes,
  call: (span: Tracer.Span | undefined) => Promise<A>,
): Promise<A> =>
  tracer === undefined
    ? call(undefined)
    : Effect.runPromiseExit(
        traced(
          tracer,
          name,
          attributes,
          Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
            Effect.tryPromise({
              try: () => call(Option.getOrUndefined(span)),
              catch: (error) => error,
            }),
          ),
        ),
      ).then((exit) => {
        if (Exit.isSuccess(exit)) return exit.value
        // The caller sees the original rejection, not Effect's wrapping of it.
        throw Cause.squash(exit.cause)
      })

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/**
 * A span's W3C trace context (`00-<trace id>-<span id>-<flags>`), or undefined when its tracer
 * uses ids of another shape.
 */
export const traceparentOf = (span: Tracer.AnySpan): string | undefined => {
  const text = `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
  return TRACEPARENT.test(text) ? text : undefined
}

/** The span a recorded `traceparent` names, as a parent for spans made elsewhere, later. */
export const parentSpanOf = (traceparent: unknown): Tracer.AnySpan | undefined => {
  const match = typeof traceparent === "string" ? TRACEPARENT.exec(traceparent) : null
  if (match === null) return undefined
  return Tracer.externalSpan({
    traceId: match[1]!,
    spanId: match[2]!,
    sampled: (Number.parseInt(match[3]!, 16) & 1) === 1,
  })
}

/**
 * The caller as a start records it: with the trace context of the span that starts it, if any, so
 * that the execution's passes — on any runner, at any later time — join that trace.
 */
export const withTraceparent = <C extends object>(
  caller: C,
  span: Tracer.AnySpan | undefined,
): C | (C & { readonly traceparent: string }) => {
  const traceparent = span === undefined ? undefined : traceparentOf(span)
  return traceparent === undefined ? caller : { ...caller, traceparent }
}

/** `withTraceparent` with the current span of the running effect (a `start` step's span). */
export const withCurrentTraceparent = <C extends object>(caller: C) =>
  Effect.map(Effect.option(Effect.currentSpan), (span) =>
    withTraceparent(caller, Option.getOrUndefined(span)),
  )
