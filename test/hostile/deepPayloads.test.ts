/**
 * Payloads nested past the depth limit (64 levels of objects and arrays, the payload itself being
 * level 1) and execution keys Postgres text cannot hold: a start is refused with the typed
 * `InvalidPayload` naming the path where the value goes too deep — at 65 levels, at 3,000 (where
 * validation used to overflow the stack with a bare `RangeError`), at 100,000, and for a cycle —
 * and writes nothing; a key with a NUL says so. An activity that returns a value too deep to record
 * makes its execution a defect that names the path, and the runner goes on.
 */
import { Effect, Exit } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import {
  implementWorkflow,
  makeEffectOwnerClient,
  makeOwnerClient,
  startRunner,
} from "../../runtime/index.js"
import { InvalidExecutionKey, InvalidPayload } from "../../runtime/errors.js"
import { MAX_PAYLOAD_DEPTH } from "../../runtime/model/payloadDepth.js"
import { runUntilIdle, type TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { makeVault, tableCounts, type Vault } from "./vaultWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

/** `{ a: { a: … 1 } }` with `levels` objects. */
const nested = (levels: number): unknown => {
  let value: unknown = 1
  for (let level = 0; level < levels; level++) value = { a: value }
  return value
}

/**
 * A `Vault.store` input whose `entry.extra` nests `extraLevels` objects: the input is level 1,
 * `entry` level 2, so the whole payload nests `extraLevels + 2` levels.
 */
const storeInput = (name: string, extraLevels: number) => ({
  name,
  amount: 1,
  entry: { name: "n", note: "", tags: [], extra: nested(extraLevels) },
})

/** The path of the first object at level 65 of `storeInput`: entry (2), extra (3), then `a`s. */
const FIRST_TOO_DEEP = `entry.extra${".a".repeat(MAX_PAYLOAD_DEPTH + 1 - 3)}`

const MESSAGE = `nested deeper than ${MAX_PAYLOAD_DEPTH} levels of objects and arrays (flatten it, or store it as a string)`

const refusalOf = async (call: () => Promise<unknown>): Promise<unknown> => {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error("the call was not refused")
}

const NOTHING = {
  owners: 0,
  executions: 0,
  steps: 0,
  events: 0,
  outbox: 0,
  receipts: 0,
  manifests: 0,
}

describeEachBackend("payloads nested past the depth limit, and keys holding NUL", (backend) => {
  let vault: Vault
  let akter: TestAkter
  let client: AnyClient

  beforeAll(async () => {
    vault = await makeVault()
    akter = await openTestAkter(backend)
    client = makeOwnerClient<AnyClient>(akter, vault.vault, { tenant: "acme" })
  })

  afterAll(async () => {
    await akter?.close()
  })

  it("refuses a start nested one level past the limit, and at 3,000 and 100,000 levels, naming the path", async () => {
    const refused: Record<string, [string, string, string]> = {}
    for (const levels of [MAX_PAYLOAD_DEPTH + 1, 3_000, 100_000]) {
      const error = await refusalOf(() =>
        client.store.start("o-1", storeInput(`deep-${levels}`, levels - 2)),
      )
      expect(error).toBeInstanceOf(InvalidPayload)
      const payload = error as InvalidPayload
      refused[levels] = [payload._tag, payload.path, payload.message]
    }
    const expected = [
      "InvalidPayload",
      FIRST_TOO_DEEP,
      `input of Vault.store is invalid at ${FIRST_TOO_DEEP}: ${MESSAGE}`,
    ]
    expect(refused).toEqual({ 65: expected, 3000: expected, 100000: expected })
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("refuses a cyclic payload as too deep instead of overflowing the stack", async () => {
    const extra: Record<string, unknown> = {}
    extra["a"] = extra
    const error = (await refusalOf(() =>
      client.store.start("o-1", {
        name: "cycle",
        amount: 1,
        entry: { name: "n", note: "", tags: [], extra },
      }),
    )) as InvalidPayload
    expect([error._tag, error.path]).toEqual(["InvalidPayload", FIRST_TOO_DEEP])
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("refuses a deep array and a deep event payload with their paths", async () => {
    let array: unknown = []
    for (let level = 0; level < 5_000; level++) array = [array]
    const inArray = (await refusalOf(() =>
      client.store.start("o-1", {
        name: "arrays",
        amount: 1,
        entry: { name: "n", note: "", tags: [], extra: array },
      }),
    )) as InvalidPayload
    expect(inArray.path).toBe(`entry.extra${"[0]".repeat(MAX_PAYLOAD_DEPTH + 1 - 3)}`)
    const event = (await refusalOf(() =>
      client.emit("o-1", "Said", { text: nested(4_000) }),
    )) as InvalidPayload
    expect(event).toBeInstanceOf(InvalidPayload)
    expect(event.message).toBe(
      `payload of event Said is invalid at text${".a".repeat(MAX_PAYLOAD_DEPTH - 1)}: ${MESSAGE}`,
    )
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("puts the refusal in the Effect client's error channel as InvalidPayload", async () => {
    const effects = makeEffectOwnerClient<AnyClient>(akter, vault.vault, { tenant: "acme" })
    const exit = await Effect.runPromiseExit(
      effects.store.start("o-1", storeInput("effect", 3_000)) as Effect.Effect<unknown, unknown>,
    )
    expect(Exit.isFailure(exit)).toBe(true)
    const failure = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
    expect(failure?._tag).toBe("Fail")
    const error = (failure as { error: InvalidPayload }).error
    expect([error._tag, error.path]).toEqual(["InvalidPayload", FIRST_TOO_DEEP])
  })

  it("refuses an execution key holding NUL or a lone surrogate with a message that says so", async () => {
    const entry = { name: "n", note: "", tags: [] }
    const nul = (await refusalOf(() =>
      client.store.start("o-1", { name: "k\0", amount: 1, entry }),
    )) as InvalidExecutionKey
    expect(nul).toBeInstanceOf(InvalidExecutionKey)
    expect([nul.bytes, nul.problem, nul.message]).toEqual([
      2,
      "holds a NUL character at index 1",
      "execution key holds a NUL character at index 1, which Postgres text cannot store exactly; a key must be well-formed Unicode without NUL (clean the key field, or hash it)",
    ])
    const surrogate = (await refusalOf(() =>
      client.store.start("o-1", { name: "ok\ud800x", amount: 1, entry }),
    )) as InvalidExecutionKey
    expect(surrogate.problem).toBe("holds a lone surrogate at index 2")
    const trailing = (await refusalOf(() =>
      client.store.start("o-1", { name: "\udc00", amount: 1, entry }),
    )) as InvalidExecutionKey
    expect(trailing.problem).toBe("holds a lone surrogate at index 0")
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("accepts a payload nested exactly to the limit, and stores it whole", async () => {
    const runner = await startRunner({ akter, workflows: vault.workflows, pollMs: 20 })
    try {
      const input = storeInput("at-limit", MAX_PAYLOAD_DEPTH - 2)
      const execution = await client.store.start("o-1", input)
      await runUntilIdle(akter, runner)
      expect(await execution.result()).toEqual({
        _tag: "Success",
        value: { name: "at-limit", entry: input.entry },
      })
    } finally {
      await runner.close()
    }
  })

  it("records an activity result too deep to store as a defect naming the path, and runs on", async () => {
    const deepVault = await makeVault()
    const keep = implementWorkflow(deepVault.vault, "store", {
      activities: {
        keep: ({ entry }: { entry: { note: string } }) =>
          Promise.resolve({
            entry: entry.note === "deep" ? { ...entry, extra: nested(3_000) } : entry,
          }),
      },
      body: (input: { name: string; entry: unknown }, wf: AnyClient) =>
        Effect.map(wf.keep({ entry: input.entry }), (kept: { entry: unknown }) => ({
          name: input.name,
          entry: kept.entry,
        })),
    } as never)
    const runner = await startRunner({ akter, workflows: [keep], pollMs: 20 })
    try {
      const deepInput = storeInput("result-too-deep", 1)
      const deep = await client.store.start("o-2", {
        ...deepInput,
        entry: { ...deepInput.entry, note: "deep" },
      })
      await runUntilIdle(akter, runner, { timeoutMs: 30_000 })
      const result = (await deep.result()) as { _tag: string; message?: string }
      expect(result._tag).toBe("Defect")
      expect(JSON.stringify(result)).toContain(
        `activity keep returned a value that does not match its declared output type at ${`entry.extra${".a".repeat(MAX_PAYLOAD_DEPTH + 1 - 3)}`}: ${MESSAGE}`,
      )
      // The runner is alive and serves the next execution.
      const shallow = await client.store.start("o-2", storeInput("after", 1))
      await runUntilIdle(akter, runner, { timeoutMs: 30_000 })
      expect(await shallow.result()).toEqual({
        _tag: "Success",
        value: { name: "after", entry: storeInput("after", 1).entry },
      })
    } finally {
      await runner.close()
    }
  })
})
