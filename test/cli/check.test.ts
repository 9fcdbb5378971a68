/**
 * `akter check` against the lock file, run as the real CLI in a temporary project: exit 0 when the
 * manifests can run every released manifest's executions, 1 with the exact finding and its location
 * when they cannot, 2 for invalid input, usage errors and crashes; text, JSON and GitHub formats
 * parsed back; ignore entries with reasons; the rollback axis on request.
 */
import { createServer, type Server, type Socket } from "node:net"
import { afterEach, describe, expect, it, vi } from "vitest"
import { appendReleases, EMPTY_LOCK, renderLockFile } from "../../cli/compatibility/lockFile.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { canonicalOwner, ownerHash } from "../../runtime/model/canonicalManifest.js"
import { shopYaml } from "../startup/shopVersions.js"
import { RULES } from "../../runtime/compatibility/finding.js"
import { createCliProject, parseAnnotations, positionOf, type CliProject } from "./cliProject.js"

// Every test runs the real CLI, a few seconds per call on a loaded machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

const projects: CliProject[] = []
afterEach(() => {
  for (const project of projects.splice(0)) project.remove()
})

/**
 * A project whose lock holds release `locked` of the shop and whose manifests are `current`. The
 * lock is written the way `akter lock` writes it (the lock tests run the command itself).
 */
const shopProject = async (locked: 1 | 2 | 3, current: 1 | 2 | 3) => {
  const project = createCliProject()
  projects.push(project)
  const released = loadManifestSources([{ file: "manifests/shop.yaml", text: shopYaml(locked) }])
  const lock = appendReleases(EMPTY_LOCK, [canonicalOwner(released.manifests[0]!.manifest)]).lock
  project.write("manifests/akter.lock.json", renderLockFile(lock))
  const text = project.useShop(current)
  return { project, text }
}

interface JsonReport {
  findings: {
    rule: string
    severity: string
    owner: string
    workflow?: string
    step?: string
    message: string
    location?: { file: string; line: number; column: number }
    ignored?: { reason: string }
  }[]
  ignoreProblems: { kind: string; severity: string; message: string; location: unknown }[]
  summary: { errors: number; warnings: number; infos: number; ignored: number }
  exitCode: number
}

const STEP_REMOVED_MESSAGE =
  'step "reserve" of Shop.fulfill is not declared by this manifest; executions started under the previous manifest may have reached it'

describe("akter check against the lock file", () => {
  it("exits 0 when a step was added behind a marker", async () => {
    const { project } = await shopProject(1, 2)

    const text = await project.akter(["check"])
    const json = await project.akter(["check", "--format", "json"])

    expect(text.code).toBe(0)
    expect(text.stdout).toBe("0 errors, 0 warnings, 0 infos, 0 ignored\n")
    expect(text.stderr).toBe("akter check: 1 manifest against 1 locked manifest: compatible\n")
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual({
      findings: [],
      ignoreProblems: [],
      summary: { errors: 0, warnings: 0, infos: 0, ignored: 0 },
      exitCode: 0,
    })
  })

  it("exits 1 naming the removed step at the steps map it was removed from, in every format", async () => {
    const { project, text: manifest } = await shopProject(1, 3)
    const at = positionOf(manifest, "steps:")

    const text = await project.akter(["check"])
    const json = await project.akter(["check", "--format", "json"])
    const github = await project.akter(["check", "--format", "github"])

    expect(text.code).toBe(1)
    expect(text.stdout.split("\n")).toEqual([
      `manifests/shop.yaml:${at.line}:${at.column}: error[step-removed] ${STEP_REMOVED_MESSAGE}`,
      `  fix: ${RULES["step-removed"].fix}`,
      "1 error, 0 warnings, 0 infos, 0 ignored",
      "",
    ])
    expect(text.stderr).toBe("akter check: 1 manifest against 1 locked manifest: breaking\n")

    expect(json.code).toBe(1)
    const report = JSON.parse(json.stdout) as JsonReport
    expect(report.exitCode).toBe(1)
    expect(report.findings).toEqual([
      {
        rule: "step-removed",
        axis: "replay",
        severity: "error",
        owner: "Shop",
        workflow: "fulfill",
        step: "reserve",
        message: STEP_REMOVED_MESSAGE,
        fix: RULES["step-removed"].fix,
        location: { file: "manifests/shop.yaml", ...at },
      },
    ])

    expect(github.code).toBe(1)
    expect(parseAnnotations(github.stdout)).toEqual([
      {
        level: "error",
        properties: {
          file: "manifests/shop.yaml",
          line: String(at.line),
          col: String(at.column),
          title: "step-removed",
        },
        message: `${STEP_REMOVED_MESSAGE}\nfix: ${RULES["step-removed"].fix}`,
      },
    ])
  })

  it("compares against every locked release, not only the newest", async () => {
    // Locked: release 1 (with reserve), then release 3 (without); the manifests are release 3.
    const { project } = await shopProject(1, 3)
    expect((await project.akter(["lock"])).code).toBe(0)
    expect(
      Object.keys(JSON.parse(project.read("manifests/akter.lock.json")).owners.Shop),
    ).toHaveLength(2)

    const json = await project.akter(["check", "--format", "json"])

    expect(json.code).toBe(1)
    const report = JSON.parse(json.stdout) as JsonReport
    expect(report.findings.map((f) => [f.rule, f.step])).toEqual([["step-removed", "reserve"]])
  })

  it("passes over a break an ignore entry accepts with a reason, keeping it in the report", async () => {
    const { project } = await shopProject(1, 3)
    const ignores = [
      "ignore:",
      "  - rule: step-removed",
      "    owner: Shop",
      "    workflow: fulfill",
      "    step: reserve",
      "    reason: release 1 never started an execution in production",
      "  - rule: marker-removed",
      "    owner: Shop",
      "    reason: left over",
      "",
    ].join("\n")
    project.write("akter.ignore.yaml", ignores)

    const json = await project.akter(["check", "--format", "json"])

    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout) as JsonReport
    expect(report.findings.map((f) => [f.rule, f.ignored])).toEqual([
      ["step-removed", { reason: "release 1 never started an execution in production" }],
    ])
    expect(report.summary).toEqual({ errors: 0, warnings: 0, infos: 0, ignored: 1 })
    const stale = positionOf(ignores, "rule: marker-removed")
    expect(report.ignoreProblems).toEqual([
      {
        kind: "stale",
        severity: "warning",
        index: 1,
        message: `akter.ignore.yaml:${stale.line}:${stale.column}: ignore entry 2 (marker-removed Shop) matches no finding; remove it`,
        location: { file: "akter.ignore.yaml", ...stale },
      },
    ])
  })

  it("refuses an ignore entry without a reason or with an unknown rule, located, with exit 2", async () => {
    const { project } = await shopProject(1, 3)
    const ignores = [
      "ignore:",
      "  - rule: step-removed",
      "    owner: Shop",
      "  - rule: step-remuved",
      "    owner: Shop",
      "    reason: typo",
      "",
    ].join("\n")
    project.write("akter.ignore.yaml", ignores)

    const json = await project.akter(["check", "--format", "json"])
    const text = await project.akter(["check"])

    expect(json.code).toBe(2)
    const first = positionOf(ignores, "rule: step-removed")
    const unknown = positionOf(ignores, "step-remuved")
    expect(JSON.parse(json.stdout)).toEqual({
      exitCode: 2,
      diagnostics: [
        {
          file: "akter.ignore.yaml",
          ...first,
          rule: "ignore-missing-reason",
          severity: "error",
          message: "ignore entry 1 has no reason",
          hint: 'write why this break is accepted, e.g. reason: "no execution of it was ever started"',
          path: "ignore.[0]",
        },
        {
          file: "akter.ignore.yaml",
          ...unknown,
          rule: "ignore-unknown-rule",
          severity: "error",
          message: '"step-remuved" is not a rule akter check reports',
          hint: 'did you mean "step-removed"?',
          path: "ignore.[1].rule",
        },
      ],
    })
    expect(text.code).toBe(2)
    expect(text.stdout).toContain(
      `akter.ignore.yaml:${first.line}:${first.column}: error[ignore-missing-reason] ignore entry 1 has no reason`,
    )
  })

  it("reports the rollback axis only when asked for", async () => {
    // Widening the Paid amount from integer to number is safe forward, but release 1 reads integers.
    const { project } = await shopProject(1, 1)
    const widened = project
      .read("manifests/shop.yaml")
      .replace("Paid: { amount: integer }", "Paid: { amount: number }")
    project.write("manifests/shop.yaml", widened)

    const forward = await project.akter(["check", "--format", "json"])
    const rollback = await project.akter(["check", "--rollback", "--format", "json"])

    expect(forward.code).toBe(0)
    const waitResult = positionOf(widened, "paid:")
    expect(
      (JSON.parse(forward.stdout) as JsonReport).findings.map((f) => [
        f.rule,
        f.severity,
        f.location,
      ]),
    ).toEqual([["step-result-changed", "info", { file: "manifests/shop.yaml", ...waitResult }]])
    expect(rollback.code).toBe(1)
    const at = positionOf(widened, "amount: number")
    expect(
      (JSON.parse(rollback.stdout) as JsonReport).findings.map((f) => [
        f.rule,
        f.severity,
        f.location,
      ]),
    ).toEqual([
      ["rollback-event-payload-incompatible", "error", { file: "manifests/shop.yaml", ...at }],
      ["rollback-step-result-incompatible", "error", { file: "manifests/shop.yaml", ...at }],
      ["step-result-changed", "info", { file: "manifests/shop.yaml", ...waitResult }],
    ])
  })

  it("exits 2 with every manifest problem located, never 1", async () => {
    const { project } = await shopProject(1, 1)
    const broken = project.read("manifests/shop.yaml").replace("kind: wait", "kind: wiat")
    project.write("manifests/shop.yaml", broken)

    const json = await project.akter(["check", "--format", "json"])
    const github = await project.akter(["check", "--format", "github"])

    expect(json.code).toBe(2)
    const at = positionOf(broken, "wiat")
    const report = JSON.parse(json.stdout) as {
      exitCode: number
      diagnostics: { file: string; line: number; column: number }[]
    }
    expect(report.exitCode).toBe(2)
    expect(report.diagnostics.map((d) => [d.file, d.line, d.column])).toEqual([
      ["manifests/shop.yaml", at.line, at.column],
    ])
    expect(github.code).toBe(2)
    expect(parseAnnotations(github.stdout)).toEqual([
      expect.objectContaining({
        level: "error",
        properties: expect.objectContaining({
          file: "manifests/shop.yaml",
          line: String(at.line),
          col: String(at.column),
        }),
      }),
    ])
  })

  it("exits 2, not 1, when it crashes on a lock entry whose manifest is not one", async () => {
    const { project } = await shopProject(1, 1)
    const bogus = { format: 1, owner: "Shop", events: {}, workflows: { fulfill: { steps: 7 } } }
    const hash = ownerHash(bogus as never)
    project.write(
      "manifests/akter.lock.json",
      `${JSON.stringify({ format: 1, owners: { Shop: { [hash]: { release: 1, manifest: bogus } } } }, null, 2)}\n`,
    )

    const text = await project.akter(["check"])
    const json = await project.akter(["check", "--format", "json"])

    expect(text.code).toBe(2)
    expect(text.stderr).toMatch(/^akter check: /)
    expect(json.code).toBe(2)
    const report = JSON.parse(json.stdout) as { exitCode: number; error: string }
    expect(report.exitCode).toBe(2)
    expect(report.error).not.toBe("")
  })

  it("exits 2 on usage errors, in the format asked for", async () => {
    const { project } = await shopProject(1, 1)

    const format = await project.akter(["check", "--format", "xml"])
    const unknown = await project.akter(["check", "--frmat", "json"])
    const url = await project.akter(["check", "--database-url", "mysql://db/x", "--format", "json"])
    const lock = await project.akter(["check", "--lock", "elsewhere.json"])

    expect(format.code).toBe(2)
    expect(format.stderr).toMatch(/^akter check: --format must be text, json, github, not "xml"/)
    expect(format.stderr).toContain("usage: akter check [options]")
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("--frmat")
    expect(url.code).toBe(2)
    expect(JSON.parse(url.stdout)).toEqual({
      exitCode: 2,
      error: "--database-url must start with postgres:// or postgresql://, not mysql://",
    })
    expect(lock.code).toBe(2)
    expect(lock.stderr).toMatch(/^akter check: there is no lock file elsewhere\.json/)
  })

  it("says on stderr that it is still connecting when the database takes more than a moment, then exits 2", async () => {
    const { project } = await shopProject(1, 1)
    // A server that accepts connections and never answers, then hangs up after two seconds.
    const sockets = new Set<Socket>()
    const server: Server = createServer((socket) => {
      sockets.add(socket)
      setTimeout(() => socket.destroy(), 2000)
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as { port: number }).port
    try {
      const result = await project.akter([
        "check",
        "--database-url",
        `postgres://postgres:secret@127.0.0.1:${port}/shop`,
      ])

      expect(result.code).toBe(2)
      const lines = result.stderr.split("\n")
      expect(lines[0]).toBe(
        `akter check: connecting to postgres://postgres:***@127.0.0.1:${port}/shop…`,
      )
      expect(lines[1]).toMatch(
        new RegExp(
          `^akter check: cannot connect to postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${port}/shop: `,
        ),
      )
      expect(result.stderr).not.toContain("secret")
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it("prints its options with --help", async () => {
    const { project } = await shopProject(1, 1)
    const result = await project.akter(["check", "--help"])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("usage: akter check [options]")
    expect(result.stdout).toContain("--format text|json|github")
  })
})
