/**
 * Internal operations — resuming an execution, relaying a staged start, running a pass, claiming
 * timers — are not reachable through the public API: the `akter` entry exports none of them, the
 * package exports no other path, the handle hides its internals, and a client object has exactly
 * `start`/`attach` per workflow and `emit`, none of which lets a caller choose an execution id, a
 * tenant or a caller.
 */
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as entry from "../../runtime/index.js"
import * as errors from "../../runtime/errors.js"
import * as testing from "../../runtime/testing/index.js"
import * as studio from "../../studio/index.js"
import { decodeExecutionId, encodeExecutionId } from "../../runtime/model/executionId.js"
import { testAkter, type TestAkter } from "../../runtime/testing/index.js"
import { createTempProject } from "../codegen/tempProject.js"
import { makeVault, tableCounts, type Vault } from "./vaultWorkflows.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyClient = any

/** What an internal operation would be called if it leaked. */
const INTERNAL = /resume|relay|stage|pass|claim|internal|lease|fence|activate|insert|settle|arm/i

describe("the public surface", () => {
  let vault: Vault
  let akter: TestAkter

  beforeAll(async () => {
    vault = await makeVault()
    akter = await testAkter()
  })

  afterAll(async () => {
    await akter?.close()
  })

  it("the akter entry exports the documented functions and the errors, and nothing internal", () => {
    const errorNames = Object.keys(errors)
    const rest = Object.keys(entry)
      .filter((name) => !errorNames.includes(name))
      .sort()
    expect(rest).toEqual([
      "AkterHandle",
      "AkterRunner",
      "StaleRegistration",
      "countExecutions",
      "createAkter",
      "defineOwner",
      "implementWorkflow",
      "inspectExecution",
      "listExecutions",
      "makeEffectOwnerClient",
      "makeLogger",
      "makeOwnerClient",
      "prometheusMetrics",
      "startRunner",
    ])
    expect(Object.keys(entry).filter((name) => INTERNAL.test(name))).toEqual([])
    expect(Object.keys(testing).sort()).toEqual([
      "inspectExecution",
      "recordingTracer",
      "runUntilIdle",
      "testAkter",
    ])
    // The studio's entry: the handler and the node:http glue, nothing of its queries or actions.
    expect(Object.keys(studio).sort()).toEqual(["serveFetchHandler", "studioHandler"])
  })

  it("the package exports only the akter, akter/testing and akter/studio entries (and its package.json)", () => {
    const manifest = JSON.parse(
      readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
    ) as { exports: Record<string, string> }
    expect(Object.keys(manifest.exports)).toEqual([".", "./testing", "./studio", "./package.json"])
    const project = createTempProject()
    try {
      const resolve = (specifier: string, conditions: readonly string[] = []) =>
        spawnSync(
          process.execPath,
          [
            ...conditions.map((condition) => `--conditions=${condition}`),
            "--input-type=module",
            "-e",
            `console.log(import.meta.resolve(${JSON.stringify(specifier)}))`,
          ],
          { cwd: project.root, encoding: "utf8" },
        )
      // A user's Node resolves the compiled entries; this repository's tools ask for the sources.
      expect(resolve("akter").stdout).toContain("/dist/runtime/index.js")
      expect(resolve("akter/testing").stdout).toContain("/dist/runtime/testing/index.js")
      expect(resolve("akter/studio").stdout).toContain("/dist/studio/index.js")
      expect(resolve("akter", ["akter-source"]).stdout).toContain("/runtime/index.ts")
      for (const deep of [
        "akter/runtime/client/startExecution.ts",
        "akter/runtime/engine/pass.ts",
        "akter/runtime/akter.ts",
      ]) {
        const result = resolve(deep)
        expect(result.status).not.toBe(0)
        expect(result.stderr).toContain("ERR_PACKAGE_PATH_NOT_EXPORTED")
      }
    } finally {
      project.remove()
    }
  })

  it("the handle shows only its backend and close(); its internals are not reachable from it", async () => {
    const plain = await entry.createAkter({ dataDir: "memory" })
    try {
      expect(Reflect.ownKeys(plain)).toEqual(["backend", "close"])
      expect(Object.getPrototypeOf(plain)).toBe(Object.prototype)
    } finally {
      await plain.close()
    }
    expect(Reflect.ownKeys(akter).sort()).toEqual(["advance", "backend", "close", "now"])
  })

  it("a client has exactly start and attach per workflow, and emit; an execution only its four members", async () => {
    for (const make of [entry.makeOwnerClient, entry.makeEffectOwnerClient]) {
      const client = make<AnyClient>(akter, vault.vault)
      expect(Reflect.ownKeys(client).sort()).toEqual(["emit", "hold", "listen", "store"])
      for (const workflow of ["hold", "listen", "store"]) {
        expect(Reflect.ownKeys(client[workflow]).sort()).toEqual(["attach", "start"])
      }
    }
    const client = entry.makeOwnerClient<AnyClient>(akter, vault.vault)
    const run = await client.hold.start("o-surface")
    expect(Reflect.ownKeys(run).sort()).toEqual(["executionId", "interrupt", "result", "status"])
    expect(Reflect.ownKeys(client.hold.attach(run.executionId)).sort()).toEqual([
      "executionId",
      "interrupt",
      "result",
      "status",
    ])
  })

  it("a start ignores options that would choose the id, the tenant or the caller", async () => {
    const client = entry.makeOwnerClient<AnyClient>(akter, vault.vault, { tenant: "acme" })
    const forged = encodeExecutionId({
      tenant: "globex",
      ownerType: "Vault",
      ownerId: "victim",
      workflow: "hold",
      key: "k",
    })
    const before = await tableCounts(akter)
    const run = await client.hold.start("o-forge", undefined, {
      commandId: "c-1",
      executionId: forged,
      tenant: "globex",
      caller: { tenant: "globex" },
      key: "k",
    })
    expect(decodeExecutionId(run.executionId)).toEqual({
      tenant: "acme",
      ownerType: "Vault",
      ownerId: "o-forge",
      workflow: "hold",
      key: "c-1",
    })
    const after = await tableCounts(akter)
    expect(after.executions - before.executions).toBe(1)
    const globex = entry.makeOwnerClient<AnyClient>(akter, vault.vault, { tenant: "globex" })
    expect(await globex.hold.attach(forged).status()).toEqual({ status: "unknown" })
  })
})
