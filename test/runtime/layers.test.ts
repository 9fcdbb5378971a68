/**
 * The handle and a runner as Effect layers: built, used by an Effect program through the Effect
 * client, and released (runner drained, database closed) when the scope ends.
 */
import { randomUUID } from "node:crypto"
import { Effect, Layer } from "effect"
import { expect, it } from "vitest"
import {
  AkterHandle,
  AkterRunner,
  makeEffectOwnerClient,
  type EffectWorkflowClient,
} from "../../runtime/index.js"
import { makeProbe } from "./probeWorkflows.js"

it("runs a workflow through AkterHandle and AkterRunner layers and releases both at scope end", async () => {
  const probe = await makeProbe()
  const live = AkterRunner.layer({ workflows: probe.workflows, pollMs: 20 }).pipe(
    Layer.provideMerge(AkterHandle.layer({ dataDir: "memory" })),
  )
  let runnerAfter: { live: number; buckets: readonly number[] } | undefined
  const value = await Effect.runPromise(
    Effect.gen(function* () {
      const akter = yield* AkterHandle
      const runner = yield* AkterRunner
      const client = makeEffectOwnerClient<{
        readonly quick: EffectWorkflowClient<{ id: string }, { id: string }, never>
      }>(akter, probe.registration)
      const run = yield* client.quick.start(`o-${randomUUID()}`, { id: "layered" })
      const result = yield* run.result({ timeout: "10 seconds" })
      runnerAfter = runner
      return result
    }).pipe(Effect.provide(live)),
  )
  expect(value).toEqual({ id: "layered" })
  // The runner drained when the layer's scope closed: it gave every bucket back.
  expect(runnerAfter?.buckets).toEqual([])
})
