/**
 * `akter diff`, run as the real CLI: every change between the newest locked release and the
 * manifests, breaking or not, each located in the manifest, in text and JSON.
 */
import { afterEach, describe, expect, it, vi } from "vitest"
import { createCliProject, positionOf, type CliProject } from "./cliProject.js"

// Every test runs the real CLI, a few seconds per call on a loaded machine.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 })

const projects: CliProject[] = []
afterEach(() => {
  for (const project of projects.splice(0)) project.remove()
})

const lockedShop = async (version: 1 | 2) => {
  const project = createCliProject()
  projects.push(project)
  project.useShop(version)
  expect((await project.akter(["lock"])).code).toBe(0)
  return project
}

const FILE = "manifests/shop.yaml"

describe("akter diff", () => {
  it("lists steps and markers added and removed, located, against the newest release", async () => {
    const project = await lockedShop(1)
    const v3 = project.useShop(3)

    const [json, text] = await Promise.all([
      project.akter(["diff", "--format", "json"]),
      project.akter(["diff"]),
    ])

    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout) as {
      lockFile: string
      owners: { owner: string; file: string; locked: { release: number }; changes: unknown[] }[]
    }
    expect(report.lockFile).toBe("manifests/akter.lock.json")
    expect(report.owners.map((o) => [o.owner, o.file, o.locked.release])).toEqual([
      ["Shop", FILE, 1],
    ])
    const audit = positionOf(v3, "audit:", "steps:")
    const steps = positionOf(v3, "steps:")
    const marker = positionOf(v3, "audit:", "versions:")
    expect(report.owners[0]!.changes).toEqual([
      {
        change: "added",
        part: "step",
        owner: "Shop",
        workflow: "fulfill",
        step: "audit",
        after: "activity",
        subject: "Shop.fulfill step audit",
        location: { file: FILE, ...audit },
      },
      {
        change: "removed",
        part: "step",
        owner: "Shop",
        workflow: "fulfill",
        step: "reserve",
        before: "activity",
        subject: "Shop.fulfill step reserve",
        location: { file: FILE, ...steps },
      },
      {
        change: "added",
        part: "marker",
        owner: "Shop",
        workflow: "fulfill",
        marker: "audit",
        after: "0..1",
        subject: "Shop.fulfill marker audit",
        location: { file: FILE, ...marker },
      },
    ])
    expect(text.code).toBe(0)
    const hash = Object.keys(JSON.parse(project.read("manifests/akter.lock.json")).owners.Shop)[0]
    expect(text.stdout.split("\n")).toEqual([
      `Shop: ${FILE} against release 1 (${hash}) of manifests/akter.lock.json: 3 changes`,
      `  ${FILE}:${audit.line}:${audit.column}: + Shop.fulfill step audit (activity)`,
      `  ${FILE}:${steps.line}:${steps.column}: - Shop.fulfill step reserve (activity)`,
      `  ${FILE}:${marker.line}:${marker.column}: + Shop.fulfill marker audit (0..1)`,
      "",
    ])
  })

  it("shows type changes down to the field, compatible ones included", async () => {
    const project = await lockedShop(1)
    const changed = project
      .read(FILE)
      .replace(
        "Paid: { amount: integer }",
        "Paid: { amount: number, currency?: { enum: [EUR, USD] } }",
      )
      .replace("input: { orderId: string }", "input: { orderId: string, note?: string }")
      .replace(
        "ship: { kind: activity, output: { trackingId: string } }",
        "ship: { kind: activity, output: { trackingId: integer, carrier?: string } }",
      )
    project.write(FILE, changed)

    const text = await project.akter(["diff"])

    expect(text.code).toBe(0)
    const at = (needle: string, after?: string) => {
      const { line, column } = positionOf(changed, needle, after)
      return `${FILE}:${line}:${column}`
    }
    expect(text.stdout.split("\n").slice(1, -1)).toEqual([
      `  ${at("amount:")}: ~ Shop event Paid payload amount: integer → number`,
      `  ${at("currency?:")}: + Shop event Paid payload currency (enum [EUR, USD], optional)`,
      `  ${at("note?:")}: + Shop.fulfill input note (string, optional)`,
      `  ${at("carrier?:")}: + Shop.fulfill step ship output carrier (string, optional)`,
      `  ${at("trackingId:", "ship:")}: ~ Shop.fulfill step ship output trackingId: string → integer`,
    ])
  })

  it("says when nothing changed, and when there is no lock file yet", async () => {
    const project = await lockedShop(2)
    const unchanged = await project.akter(["diff"])
    expect(unchanged.code).toBe(0)
    expect(unchanged.stdout).toMatch(
      /^Shop: manifests\/shop\.yaml against release 1 .*: no changes\n$/,
    )

    const fresh = createCliProject()
    projects.push(fresh)
    fresh.useShop(1)
    const [unlocked, help] = await Promise.all([
      fresh.akter(["diff"]),
      fresh.akter(["diff", "--help"]),
    ])
    expect(unlocked.code).toBe(0)
    expect(unlocked.stdout.split("\n").slice(0, 3)).toEqual([
      "no lock file manifests/akter.lock.json: every manifest is new (`akter lock` records a release)",
      "Shop: manifests/shop.yaml not locked yet: 3 changes",
      `  ${FILE}:3:1: + owner Shop (workflows fulfill)`,
    ])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("usage: akter diff [options]")
  })
})
