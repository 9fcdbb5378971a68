/**
 * The handle and a runner as Effect services, for applications built of layers: the database opens
 * when the layer is built and closes when its scope ends; a runner drains on scope end.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createAkter, type Akter, type AkterOptions } from "./akter.js"
import type { Runner, RunnerOptions } from "./runner/runner.js"
import { startRunner } from "./runner/lazyRunner.js"

/**
 * An akter handle as a service.
 *
 * @example
 * const program = Effect.gen(function* () {
 *   const akter = yield* AkterHandle
 *   const run = yield* Order.effectClient(akter).fulfill.start("o-1", input)
 * })
 * Effect.runPromise(program.pipe(Effect.provide(AkterHandle.layer({ databaseUrl }))))
 */
export class AkterHandle extends Context.Service<AkterHandle, Akter>()("akter/AkterHandle") {
  static readonly layer = (options: AkterOptions = {}) =>
    Layer.effect(
      AkterHandle,
      Effect.acquireRelease(
        Effect.promise(() => createAkter(options)),
        (akter) => Effect.promise(() => akter.close()),
      ),
    )
}

/**
 * A runner as a service, on the handle of `AkterHandle`; it drains when the layer's scope ends.
 *
 * @example
 * const live = AkterRunner.layer({ workflows: [fulfill] }).pipe(Layer.provide(AkterHandle.layer()))
 */
export class AkterRunner extends Context.Service<AkterRunner, Runner>()("akter/AkterRunner") {
  static readonly layer = (options: Omit<RunnerOptions, "akter">) =>
    Layer.effect(
      AkterRunner,
      Effect.gen(function* () {
        const akter = yield* AkterHandle
        return yield* Effect.acquireRelease(
          Effect.promise(() => startRunner({ ...options, akter })),
          (runner) => Effect.promise(() => runner.close()),
        )
      }),
    )
}
