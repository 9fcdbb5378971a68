/**
 * The README's "Schedules" section: its manifest (the fenced block tagged `schedules`) loads
 * without a problem and declares what the prose says — a cron schedule in Berlin that queues and
 * catches up every missed tick, and an interval schedule with the defaults (UTC, skip, latest).
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { expect, it } from "vitest"
import { formatDiagnostic } from "../../codegen/manifest/diagnostics.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { canonicalOwner } from "../../runtime/model/canonicalManifest.js"
import { REPO } from "../codegen/typeCheck.js"

const readme = readFileSync(join(REPO, "README.md"), "utf8")

it("the README's schedules manifest loads and declares what its prose says", () => {
  const block = /```yaml schedules file=(\S+)\n([\s\S]*?)\n```/.exec(readme)
  expect(block).not.toBeNull()
  const { manifests, diagnostics } = loadManifestSources([{ file: block![1]!, text: block![2]! }])
  expect(diagnostics.map(formatDiagnostic)).toEqual([])
  expect(canonicalOwner(manifests[0]!.manifest).schedules).toEqual({
    nightly: {
      workflow: "compile",
      cron: "30 2 * * *",
      timeZone: "Europe/Berlin",
      everyMs: null,
      ownerId: "eu",
      input: { region: "eu" },
      overlap: "queue",
      catchUp: "all",
    },
    cleanup: {
      workflow: "sweep",
      cron: null,
      timeZone: "UTC",
      everyMs: 900_000,
      ownerId: "maintenance",
      input: null,
      overlap: "skip",
      catchUp: "latest",
    },
  })
})
