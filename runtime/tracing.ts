/**
 * Spans for passes, steps and client calls, through Effect's tracer — so any OpenTelemetry setup
 * Effect supports (its OTLP exporter, `@effect/opentelemetry`) receives them. Tracing is off unless
 * `createAkter({ tracer })` is given one; then a pass is a span (`akter.pass`), each step call a child
 * of it (`akter.step`), and each client call a span of its own (`akter.client.start`, ...). Off, the
 * hot path does not create a single span object.
 */
import { Cause, Effect, Exit, type Tracer } from "effect"

export type SpanAttributes = Readonly<Record<string, string | number | boolean>>

/** Wraps `effect` in a span when a tracer is configured; otherwise returns it untouched. */
export const traced = <A, E>(
  tracer: Tracer.Tracer | undefined,
  name: string,
  attributes: SpanAttributes,
  effect: Effect.Effect<A, E>,
): Effect.Effect<A, E> =>
  tracer === undefined
    ? effect
    : effect.pipe(Effect.withSpan(name, { attributes }), Effect.withTracer(tracer))

/** Runs a Promise-returning client call in a span when a tracer is configured. */
export const tracedCall = <A>(
  tracer: Tracer.Tracer | undefined,
  name: string,
  attributes: SpanAttributes,
  call: () => Promise<A>,
): Promise<A> =>
  tracer === undefined
    ? call()
    : Effect.runPromiseExit(
        traced(tracer, name, attributes, Effect.tryPromise({ try: call, catch: (error) => error })),
      ).then((exit) => {
        if (Exit.isSuccess(exit)) return exit.value
        // The caller sees the original rejection, not Effect's wrapping of it.
        throw Cause.squash(exit.cause)
      })
