import { rmSync } from "node:fs"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { loadManifests } from "../../codegen/manifest/loadManifests.js"
import { canonicalOwner, ownerHash, workflowHashes } from "../../runtime/model/canonicalManifest.js"
import { createTempProject, runAkter, startAkter, type TempProject } from "./tempProject.js"
import { REPO } from "./typeCheck.js"

const projects: TempProject[] = []
afterEach(() => {
  for (const project of projects.splice(0)) project.remove()
})

const exampleProject = (akter?: Record<string, unknown>): TempProject => {
  const project = createTempProject({
    manifests: "manifests",
    ...(akter === undefined ? {} : { akter }),
  })
  projects.push(project)
  return project
}

/** Where `needle` first occurs in `text`, as the 1-based line:column a diagnostic prints. */
const locationOf = (text: string, needle: string): string => {
  const lines = text.split("\n")
  const line = lines.findIndex((candidate) => candidate.includes(needle))
  expect(line, `"${needle}" in the manifest`).toBeGreaterThanOrEqual(0)
  return `${line + 1}:${lines[line]!.indexOf(needle) + 1}`
}

describe("akter validate", () => {
  it("reports the example manifests valid with exit 0, in text and in JSON", () => {
    const text = runAkter(REPO, ["validate"])
    expect(text).toMatchObject({ code: 0, stderr: "" })
    expect(text.stdout).toBe("akter validate: 3 manifests in manifests/ valid\n")
    const json = runAkter(REPO, ["validate", "--format", "json"])
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual({ ok: true, diagnostics: [] })
  })

  it("prints every problem located to the character and exits 2", () => {
    const project = exampleProject()
    const order = project
      .read("manifests/order.yaml")
      .replace("timeout: 1d", "timeout: 1 day")
      .replace("output: { score: number }", "output: { score: numbr }")
    project.write("manifests/order.yaml", order)
    const result = runAkter(project.root, ["validate"])
    expect(result.code).toBe(2)
    const lines = result.stdout.split("\n")
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^manifests/order\\.yaml:${locationOf(order, "1 day")}: error\\[invalid-duration\\] `,
        ),
      ),
    )
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^manifests/order\\.yaml:${locationOf(order, "numbr")}: error\\[[a-z-]+\\] .*numbr`,
        ),
      ),
    )
    expect(lines.at(-2)).toBe("akter validate: 2 errors in manifests/")

    const json = runAkter(project.root, ["validate", "--format", "json"])
    expect(json.code).toBe(2)
    const report = JSON.parse(json.stdout) as {
      ok: boolean
      diagnostics: { rule: string; file: string }[]
    }
    expect(report.ok).toBe(false)
    expect(report.diagnostics.map((d) => [d.file, d.rule])).toContainEqual([
      "manifests/order.yaml",
      "invalid-duration",
    ])
  })

  it("refuses names the generated code could not declare, where the manifest writes them", () => {
    const project = exampleProject()
    const order = project
      .read("manifests/order.yaml")
      .replace(
        "  Sku: { type: string",
        "  FulfillSteps: { enum: [a] }\n  MoneySchema: { enum: [b] }\n  Sku: { type: string",
      )
    project.write("manifests/order.yaml", order)
    const user = project.read("manifests/user.yaml").replace("  signUp:", "  emit:")
    project.write("manifests/user.yaml", user)
    const result = runAkter(project.root, ["validate"])
    expect(result.code).toBe(2)
    expect(result.stdout).toContain(
      `manifests/order.yaml:${locationOf(order, "FulfillSteps")}: error[name-collision] type "FulfillSteps" has the name of the steps interface of workflow "fulfill" (line ${locationOf(order, "fulfill:").split(":")[0]})`,
    )
    expect(result.stdout).toContain(
      `manifests/order.yaml:${locationOf(order, "MoneySchema")}: error[name-collision] type "MoneySchema" has the name of the schema of type "Money" (line ${locationOf(order, "Money:").split(":")[0]})`,
    )
    expect(result.stdout).toContain(
      `manifests/user.yaml:${locationOf(user, "emit:")}: error[reserved-name] "emit" cannot name a workflow: the generated client has a member of that name`,
    )
  })
})

describe("akter hash", () => {
  it("prints the manifest hash and every workflow fingerprint, as the runtime computes them", async () => {
    const { manifests } = await loadManifests({ dir: "manifests", root: REPO })
    const expected = manifests.map(({ file, manifest }) => {
      const canonical = canonicalOwner(manifest)
      return {
        owner: manifest.owner,
        file,
        hash: ownerHash(canonical),
        workflows: Object.fromEntries(
          Object.entries(canonical.workflows).map(([name, workflow]) => [
            name,
            workflowHashes(workflow),
          ]),
        ),
      }
    })
    const json = runAkter(REPO, ["hash", "--format", "json"])
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual({ ok: true, owners: expected })

    const text = runAkter(REPO, ["hash"])
    expect(text.code).toBe(0)
    const order = expected.find((owner) => owner.owner === "Order")!
    const fulfill = order.workflows["fulfill"]!
    expect(text.stdout).toContain(
      `Order (manifests/order.yaml)\n  manifest  ${order.hash}\n  workflow fulfill\n`,
    )
    expect(text.stdout).toMatch(new RegExp(`\\n    compatibility +${fulfill.compatibility}\\n`))
    expect(text.stdout).toMatch(new RegExp(`\\n    step reserve +${fulfill.steps["reserve"]}\\n`))
  })

  it("exits 2 with the diagnostics when a manifest is invalid", () => {
    const project = exampleProject()
    project.write(
      "manifests/user.yaml",
      project.read("manifests/user.yaml").replace("kind: race", "kind: rase"),
    )
    const result = runAkter(project.root, ["hash"])
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(
      /^manifests\/user\.yaml:\d+:\d+: error\[unknown-step-kind\] "rase"/m,
    )
    expect(result.stdout).toBe("")
  })
})

describe("every command", () => {
  it.each(["validate", "generate", "hash"])("%s --help prints its usage and exits 0", (command) => {
    const result = runAkter(REPO, [command, "--help"])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(new RegExp(`^usage: akter ${command} \\[options\\]\\n`))
    expect(result.stdout).toContain("--manifests DIR")
    expect(result.stdout).toContain("--format text|json")
  })

  it("exits 2 on a usage error, naming what was wrong and showing the usage", () => {
    const unknown = runAkter(REPO, ["generate", "--chek"])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("akter generate: Unknown option '--chek'")
    expect(unknown.stderr).toContain("usage: akter generate [options]")

    const format = runAkter(REPO, ["validate", "--format", "xml"])
    expect(format.code).toBe(2)
    expect(format.stderr).toContain('akter validate: --format must be text or json, not "xml"')

    const both = runAkter(REPO, ["generate", "--check", "--watch"])
    expect(both.code).toBe(2)
    expect(both.stderr).toContain("--check and --watch exclude each other")

    const positional = runAkter(REPO, ["hash", "manifests"])
    expect(positional.code).toBe(2)
    expect(positional.stderr).toContain("akter hash: Unexpected argument 'manifests'")

    const command = runAkter(REPO, ["generat"])
    expect(command.code).toBe(2)
    expect(command.stderr).toContain('akter: unknown command "generat"')
  })

  it("exits 2 naming a bad setting in the project's package.json", () => {
    const project = exampleProject({ manifest: "manifests" })
    const result = runAkter(project.root, ["validate"])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('unknown setting "akter.manifest" (known: manifests, out, app)')
  })

  it("exits 2 when the manifest folder does not exist", () => {
    const project = exampleProject()
    rmSync(join(project.root, "manifests"), { recursive: true })
    const result = runAkter(project.root, ["generate"])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain("manifest-folder-missing")
  })
})

describe("akter generate --watch", { timeout: 240_000 }, () => {
  it("regenerates on a change, reports an invalid manifest without stopping, and recovers", async () => {
    const project = exampleProject()
    const watcher = startAkter(project.root, ["generate", "--watch"])
    let stdout = ""
    let stderr = ""
    watcher.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    watcher.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const until = async (condition: () => boolean, what: string) => {
      for (let waited = 0; !condition(); waited += 50) {
        if (waited > 90_000 || watcher.exitCode !== null) {
          throw new Error(`gave up waiting for ${what}; stdout: ${stdout}; stderr: ${stderr}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    try {
      await until(() => stdout.includes("watching manifests/"), "the first generation")
      expect(project.read("generated/order/registration.ts")).toContain("attempts: 5")

      const order = project.read("manifests/order.yaml")
      project.write("manifests/order.yaml", order.replace("attempts: 5", "attempts: 7"))
      await until(
        () => stdout.includes("1 changed") || stdout.includes("2 changed"),
        "a regeneration",
      )
      expect(project.read("generated/order/registration.ts")).toContain("attempts: 7")

      project.write("manifests/order.yaml", order.replace("kind: sleep", "kind: nap"))
      await until(() => stderr.includes("left unchanged"), "the error report")
      expect(stderr).toContain('error[unknown-step-kind] "nap" is not a step kind')
      expect(watcher.exitCode).toBeNull()

      project.write("manifests/order.yaml", order)
      await until(
        () => project.read("generated/order/registration.ts").includes("attempts: 5"),
        "the recovery",
      )
    } finally {
      watcher.kill("SIGTERM")
    }
    const code = await new Promise<number | null>((resolve) => watcher.on("exit", resolve))
    expect(code).toBe(0)
  })
})
