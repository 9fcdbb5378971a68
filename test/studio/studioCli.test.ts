/**
 * `akter studio` from the command line: its help, its usage errors (exit 2), a missing database
 * refused without creating one, and a served studio on a PGlite directory that opens with the
 * printed URL, shows the execution recorded there and the schedules of the manifests on disk, and
 * exits 0 on SIGTERM.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAkter, makeOwnerClient } from "../../runtime/index.js"
import { makeVault, VAULT_YAML } from "../hostile/vaultWorkflows.js"
import { startStudioProcess } from "./studioProcess.js"

const BIN = fileURLToPath(new URL("../../bin/akter.js", import.meta.url))
const akterCli = (args: readonly string[], cwd: string) =>
  // These runs read PGlite directories: DATABASE_URL (set by the full suite) would take precedence.
  spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, DATABASE_URL: "" },
  })

describe("akter studio", () => {
  let dir: string
  let executionId: string

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "akter-studio-cli-"))
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "studio-cli", private: true }))
    mkdirSync(join(dir, "manifests"))
    writeFileSync(join(dir, "manifests", "vault.yaml"), VAULT_YAML)
    const akter = await createAkter({ dataDir: join(dir, "db") })
    const vault = await makeVault()
    const run = await makeOwnerClient<
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      any
    >(akter, vault.vault).listen.start("o-1", { name: "cli-1" })
    executionId = run.executionId
    await akter.close()
  })

  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("prints its options with --help and exits 0", () => {
    const result = akterCli(["studio", "--help"], dir)
    expect(result.status).toBe(0)
    expect(result.stdout).toContain("--read-only")
    expect(result.stdout).toContain("--database-url URL")
  })

  it("exits 2 naming a bad option", () => {
    const result = akterCli(["studio", "--port", "http"], dir)
    expect(result.status).toBe(2)
    expect(result.stderr).toContain("--port must be a port number")
  })

  it("refuses a PGlite directory that holds no database, and creates none", () => {
    const result = akterCli(["studio", "--data-dir", join(dir, "nothing")], dir)
    expect(result.status).toBe(2)
    expect(result.stderr).toContain("holds no database")
    expect(existsSync(join(dir, "nothing"))).toBe(false)
  })

  it("serves the studio at the printed URL until SIGTERM", async () => {
    const studio = await startStudioProcess(["--data-dir", join(dir, "db")], dir, {
      DATABASE_URL: "",
    })
    try {
      expect(studio.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/)
      const signIn = await fetch(studio.url, { redirect: "manual" })
      expect(signIn.status).toBe(303)
      const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!
      const base = new URL(studio.url).origin
      const list = await fetch(`${base}/executions`, { headers: { cookie } })
      expect(list.status).toBe(200)
      expect(await list.text()).toContain(executionId)
      expect((await fetch(`${base}/executions`)).status).toBe(401)
      // The Compatibility page checks manifests/ against the open listen execution, as akter
      // check --database-url does: compatible as it is, breaking once its wait is declared a sleep.
      const verdict = async () =>
        (await fetch(`${base}/compatibility`, { headers: { cookie } })).text()
      const before = await verdict()
      expect(before).toContain('data-verdict="compatible"')
      expect(before).toContain("Vault.listen")
      writeFileSync(
        join(dir, "manifests", "vault.yaml"),
        VAULT_YAML.replace(
          "heard: { kind: wait, event: Said }",
          "heard: { kind: sleep, duration: 1h }",
        ),
      )
      const after = await verdict()
      expect(after).toContain('data-verdict="breaking"')
      expect(after).toMatch(/data-rule="step-kind-changed"/)
      // The Schedules page reads the declarations from manifests/ on each visit: a schedule no
      // runner has declared shows with its workflow and timing, not ticked.
      writeFileSync(
        join(dir, "manifests", "vault.yaml"),
        `${VAULT_YAML}\nschedules:\n  weekly:\n    workflow: hold\n    cron: "0 6 * * 1"\n    timeZone: Asia/Tokyo\n    ownerId: v-1\n`,
      )
      const schedules = await (await fetch(`${base}/schedules`, { headers: { cookie } })).text()
      expect(schedules).toMatch(/data-schedule="Vault\.weekly"/)
      expect(schedules).toContain("<code>0 6 * * 1</code>")
      expect(schedules).toContain("Asia/Tokyo")
      expect(schedules).toContain('data-state="undeclared"')
    } finally {
      expect(await studio.stop()).toBe(0)
    }
  })
})
