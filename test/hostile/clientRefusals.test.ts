/**
 * The client refuses bad input before it writes anything: inputs and event payloads failing their
 * schema (naming the field path), payloads over the size limit, keys over 256 bytes, owner and
 * command ids that cannot be stored, and ids of another tenant, owner type or workflow — each with
 * its own typed error, in the Promise client and in the Effect client's error channel. Every test
 * counts the rows of every table a client writes, before and after.
 */
import { Effect, Exit } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeEffectOwnerClient, makeOwnerClient } from "../../runtime/index.js"
import { DEFAULT_MAX_PAYLOAD_BYTES } from "../../runtime/akter.js"
import {
  ForeignTenant,
  ForeignWorkflow,
  InvalidExecutionId,
  InvalidExecutionKey,
  InvalidPayload,
  PayloadTooLarge,
  UnknownEvent,
} from "../../runtime/errors.js"
import { encodeExecutionId } from "../../runtime/model/executionId.js"
import type { TestAkter } from "../../runtime/testing/index.js"
import { describeEachBackend, openTestAkter } from "../support/backends.js"
import { makeVault, tableCounts, type TableCounts, type Vault } from "./vaultWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

const NOTHING: TableCounts = {
  owners: 0,
  executions: 0,
  steps: 0,
  events: 0,
  outbox: 0,
  receipts: 0,
  manifests: 0,
}

/** The JSON the client measures: what `JSON.stringify` makes of the validated value. */
const jsonLength = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8")

/** A valid `Vault.store` input whose JSON is exactly `bytes` long. */
const storeInputOfBytes = (bytes: number) => {
  const shape = (note: string) => ({
    name: "big",
    amount: 1,
    entry: { name: "n", note, tags: [] },
  })
  const padding = bytes - jsonLength(shape(""))
  return shape("x".repeat(padding))
}

const refusalOf = async (call: () => Promise<unknown> | unknown): Promise<unknown> => {
  try {
    await call()
  } catch (error) {
    return error
  }
  throw new Error("the call was not refused")
}

describeEachBackend("client refusals", (backend) => {
  let vault: Vault
  let akter: TestAkter
  let client: AnyClient

  const openAkter = (options: { maxPayloadBytes?: number } = {}) => openTestAkter(backend, options)

  beforeAll(async () => {
    vault = await makeVault()
    akter = await openAkter()
    client = makeOwnerClient<AnyClient>(akter, vault.vault, { tenant: "acme" })
  })

  afterAll(async () => {
    await akter?.close()
  })

  it("refuses an input failing its schema with the field path, and writes nothing", async () => {
    const good = { name: "a", amount: 1, entry: { name: "n", note: "", tags: ["x"] } }
    const cases = {
      wrongType: { ...good, entry: { ...good.entry, tags: ["x", 2] } },
      missing: { name: "a", entry: good.entry },
      extraKey: { ...good, entry: { ...good.entry, colour: "red" } },
      fraction: { ...good, amount: 1.5 },
      notAnObject: "store me",
    }
    const refused: Record<string, [string, string, string]> = {}
    for (const [name, input] of Object.entries(cases)) {
      const error = await refusalOf(() => client.store.start("o-1", input))
      expect(error).toBeInstanceOf(InvalidPayload)
      const payload = error as InvalidPayload
      refused[name] = [payload._tag, payload.path, payload.message.split(":")[0]!]
    }
    expect(refused).toEqual({
      wrongType: [
        "InvalidPayload",
        "entry.tags[1]",
        "input of Vault.store is invalid at entry.tags[1]",
      ],
      missing: ["InvalidPayload", "amount", "input of Vault.store is invalid at amount"],
      extraKey: ["InvalidPayload", "entry", "input of Vault.store is invalid at entry"],
      fraction: ["InvalidPayload", "amount", "input of Vault.store is invalid at amount"],
      notAnObject: ["InvalidPayload", "", "input of Vault.store is invalid at the top level"],
    })
    const extra = (await refusalOf(() =>
      client.store.start("o-1", cases.extraKey),
    )) as InvalidPayload
    expect(extra.message).toContain("colour")
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("refuses an event payload failing its schema, and an undeclared event, writing nothing", async () => {
    const wrong = (await refusalOf(() =>
      client.emit("o-1", "Deposit", { amount: "10", memo: "m" }),
    )) as InvalidPayload
    expect(wrong).toBeInstanceOf(InvalidPayload)
    expect([wrong.path, wrong.message.split(":")[0]]).toEqual([
      "amount",
      "payload of event Deposit is invalid at amount",
    ])
    const unknown = await refusalOf(() => client.emit("o-1", "Withdraw", { amount: 1 }))
    expect(unknown).toBeInstanceOf(UnknownEvent)
    expect((unknown as UnknownEvent).message).toBe(
      'owner Vault declares no event "Withdraw" (see test/fixtures/hostile/vault.yaml)',
    )
    // An inherited property is not an event.
    const inherited = await refusalOf(() => client.emit("o-1", "constructor", {}))
    expect(inherited).toBeInstanceOf(UnknownEvent)
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("refuses a key over 256 UTF-8 bytes, counting bytes not characters", async () => {
    const entry = { name: "n", note: "", tags: [] }
    const tooLong = (await refusalOf(() =>
      client.store.start("o-1", { name: "é".repeat(129), amount: 1, entry }),
    )) as InvalidExecutionKey
    expect(tooLong).toBeInstanceOf(InvalidExecutionKey)
    expect(tooLong.bytes).toBe(258)
    expect(tooLong.message).toBe(
      "execution key is 258 bytes; a key must be 1 to 256 UTF-8 bytes (shorten the key field, or hash it)",
    )
    const empty = (await refusalOf(() =>
      client.store.start("o-1", { name: "", amount: 1, entry }),
    )) as InvalidExecutionKey
    expect(empty.bytes).toBe(0)
    const keyless = (await refusalOf(() =>
      client.hold.start("o-1", undefined, { commandId: "c".repeat(257) }),
    )) as InvalidPayload
    expect([keyless._tag, keyless.message]).toEqual([
      "InvalidPayload",
      "command id is invalid at the top level: must be at most 256 UTF-8 bytes",
    ])
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("refuses owner ids and command ids that Postgres text cannot hold as given", async () => {
    const entry = { name: "n", note: "", tags: [] }
    const input = { name: "k", amount: 1, entry }
    const ownerIds: Record<string, unknown> = {
      empty: "",
      nul: "o\0",
      loneSurrogate: "o\ud800",
      tooLong: "é".repeat(129),
      notAString: 42,
    }
    const messages: Record<string, string> = {}
    for (const [name, ownerId] of Object.entries(ownerIds)) {
      const started = (await refusalOf(() => client.store.start(ownerId, input))) as InvalidPayload
      const emitted = (await refusalOf(() =>
        client.emit(ownerId, "Said", { text: "t" }),
      )) as InvalidPayload
      expect(started).toBeInstanceOf(InvalidPayload)
      expect(emitted.message).toBe(started.message)
      messages[name] = started.message
    }
    expect(messages).toEqual({
      empty: "owner id is invalid at the top level: must not be empty",
      nul: "owner id is invalid at the top level: must be well-formed Unicode without NUL characters",
      loneSurrogate:
        "owner id is invalid at the top level: must be well-formed Unicode without NUL characters",
      tooLong: "owner id is invalid at the top level: must be at most 256 UTF-8 bytes",
      notAString: "owner id is invalid at the top level: must be a string",
    })
    const key = (await refusalOf(() =>
      client.store.start("o-1", { ...input, name: "k\0" }),
    )) as InvalidExecutionKey
    expect(key).toBeInstanceOf(InvalidExecutionKey)
    const command = (await refusalOf(() =>
      client.emit("o-1", "Said", { text: "t" }, { commandId: "c\0" }),
    )) as InvalidPayload
    expect(command.message).toBe(
      "command id is invalid at the top level: must be well-formed Unicode without NUL characters",
    )
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("refuses a caller tenant that cannot be part of an id when the client is made", () => {
    for (const [tenant, problem] of [
      ["", "must not be empty"],
      ["t".repeat(129), "must be at most 128 UTF-8 bytes"],
      ["t\0", "must be well-formed Unicode without NUL characters"],
    ] as const) {
      expect(() => makeOwnerClient(akter, vault.vault, { tenant })).toThrow(
        `caller tenant is invalid at the top level: ${problem}`,
      )
    }
  })

  it("refuses ids of another tenant, owner type or workflow, and malformed ids, reading nothing", async () => {
    const address = { ownerType: "Vault", ownerId: "o-1", workflow: "store", key: "k" }
    const ids = {
      otherTenant: encodeExecutionId({ ...address, tenant: "globex" }),
      otherOwnerType: encodeExecutionId({ ...address, tenant: "acme", ownerType: "Ledger" }),
      otherWorkflow: encodeExecutionId({ ...address, tenant: "acme", workflow: "listen" }),
      malformed: "ak1.not-an-id",
      notAString: 7,
    }
    const refused: Record<string, [string, string]> = {}
    for (const [name, id] of Object.entries(ids)) {
      const error = (await refusalOf(() => client.store.attach(id))) as {
        _tag: string
        message: string
      }
      refused[name] = [error._tag, error.message]
    }
    expect(refused).toEqual({
      otherTenant: ["ForeignTenant", `execution ${ids.otherTenant} belongs to another tenant`],
      otherOwnerType: [
        "ForeignWorkflow",
        `execution ${ids.otherOwnerType} is a Ledger.store execution, not Vault.store; attach it with the Ledger.store client`,
      ],
      otherWorkflow: [
        "ForeignWorkflow",
        `execution ${ids.otherWorkflow} is a Vault.listen execution, not Vault.store; attach it with the Vault.listen client`,
      ],
      malformed: [
        "InvalidExecutionId",
        'invalid execution id "ak1.not-an-id": does not decode to JSON',
      ],
      notAString: ["InvalidExecutionId", 'invalid execution id "(number)": not a string'],
    })
    expect(await refusalOf(() => client.store.attach(ids.otherTenant))).toBeInstanceOf(
      ForeignTenant,
    )
    expect(await refusalOf(() => client.store.attach(ids.otherOwnerType))).toBeInstanceOf(
      ForeignWorkflow,
    )
    expect(await refusalOf(() => client.store.attach(ids.malformed))).toBeInstanceOf(
      InvalidExecutionId,
    )
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("puts every refusal in the Effect client's error channel with its tag", async () => {
    const effects = makeEffectOwnerClient<AnyClient>(akter, vault.vault, { tenant: "acme" })
    const entry = { name: "n", note: "", tags: [] }
    const tagOf = async (effect: Effect.Effect<unknown, { _tag: string }>) => {
      const exit = await Effect.runPromiseExit(effect)
      if (Exit.isSuccess(exit)) return "succeeded"
      const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
      return failure === undefined
        ? "died"
        : (failure as unknown as { error: { _tag: string } }).error._tag
    }
    expect({
      schema: await tagOf(effects.store.start("o-1", { name: "a", amount: "1", entry })),
      key: await tagOf(effects.store.start("o-1", { name: "k".repeat(300), amount: 1, entry })),
      size: await tagOf(
        effects.store.start("o-1", storeInputOfBytes(DEFAULT_MAX_PAYLOAD_BYTES + 1)),
      ),
      event: await tagOf(effects.emit("o-1", "Nope", {})),
      tenant: await tagOf(
        effects.store.attach(
          encodeExecutionId({
            tenant: "globex",
            ownerType: "Vault",
            ownerId: "o",
            workflow: "store",
            key: "k",
          }),
        ),
      ),
      workflow: await tagOf(
        effects.store.attach(
          encodeExecutionId({
            tenant: "acme",
            ownerType: "Ledger",
            ownerId: "o",
            workflow: "store",
            key: "k",
          }),
        ),
      ),
      id: await tagOf(effects.store.attach("nope")),
    }).toEqual({
      schema: "InvalidPayload",
      key: "InvalidExecutionKey",
      size: "PayloadTooLarge",
      event: "UnknownEvent",
      tenant: "ForeignTenant",
      workflow: "ForeignWorkflow",
      id: "InvalidExecutionId",
    })
    expect(await tableCounts(akter)).toEqual(NOTHING)
  })

  it("accepts an input of exactly 1 MiB of JSON by default and refuses one byte more", async () => {
    const limit = 1024 * 1024
    expect(DEFAULT_MAX_PAYLOAD_BYTES).toBe(limit)
    const over = storeInputOfBytes(limit + 1)
    expect(jsonLength(over)).toBe(limit + 1)
    const error = (await refusalOf(() => client.store.start("o-big", over))) as PayloadTooLarge
    expect(error).toBeInstanceOf(PayloadTooLarge)
    expect([error.bytes, error.limit, error.message]).toEqual([
      limit + 1,
      limit,
      `input of Vault.store is ${limit + 1} bytes of JSON, over the limit of ${limit} (raise maxPayloadBytes in createAkter, or store the data elsewhere and pass a reference)`,
    ])
    const eventOver = { amount: 1, memo: "m".repeat(limit) }
    const eventError = (await refusalOf(() =>
      client.emit("o-big", "Deposit", eventOver),
    )) as PayloadTooLarge
    expect([eventError._tag, eventError.bytes]).toEqual(["PayloadTooLarge", jsonLength(eventOver)])
    expect(await tableCounts(akter)).toEqual(NOTHING)

    const exact = storeInputOfBytes(limit)
    const run = await client.store.start("o-big", exact)
    expect(run.executionId).toMatch(/^ak1\./)
    expect((await tableCounts(akter)).executions).toBe(1)
  })

  it("applies a configured maxPayloadBytes to inputs and event payloads alike", async () => {
    const small = await openAkter({ maxPayloadBytes: 200 })
    try {
      const smallClient = makeOwnerClient<AnyClient>(small, vault.vault, { tenant: "acme" })
      const input = (await refusalOf(() =>
        smallClient.store.start("o-1", storeInputOfBytes(201)),
      )) as PayloadTooLarge
      expect([input._tag, input.bytes, input.limit]).toEqual(["PayloadTooLarge", 201, 200])
      const memo = "m".repeat(200 - jsonLength({ amount: 1, memo: "" }) + 1)
      const event = (await refusalOf(() =>
        smallClient.emit("o-1", "Deposit", { amount: 1, memo }),
      )) as PayloadTooLarge
      expect([event.bytes, event.limit]).toEqual([201, 200])
      expect(await tableCounts(small)).toEqual(NOTHING)
      await smallClient.store.start("o-1", storeInputOfBytes(200))
      await smallClient.emit("o-1", "Deposit", { amount: 1, memo: memo.slice(1) })
      const counts = await tableCounts(small)
      expect([counts.executions, counts.events]).toEqual([1, 1])
    } finally {
      await small.close()
    }
  })
})
