/**
 * Test apps whose manifests live in the test (no generated SDK) write bodies against an untyped
 * `wf`; `step` gives each step call the type its manifest declares, so the body's Effect is typed.
 */
import type { Effect } from "effect"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type UntypedSteps = any

/**
 * @example
 * const ready = yield* step<{ n: number }>(wf.ready())
 */
export const step = <A = unknown>(effect: unknown) => effect as Effect.Effect<A>
