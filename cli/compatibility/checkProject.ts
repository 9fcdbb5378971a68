/**
 * What `akter check` decides, given what it read: the manifests of `manifests/` compared against
 * every locked manifest and, when a database was read, against its open executions, with the
 * accepted breaks of the ignore file applied. Pure: reading files and databases is the command's.
 */
import { compareManifests } from "../../runtime/compatibility/compareManifests.js"
import {
  mergeFindings,
  type Finding,
  type FindingLocation,
} from "../../runtime/compatibility/finding.js"
import { applyIgnores, type IgnoreProblem } from "../../runtime/compatibility/ignores.js"
import {
  checkOpenExecutions,
  type OpenExecutionAggregates,
} from "../../runtime/compatibility/openExecutions.js"
import type { CheckReport } from "../../runtime/compatibility/report.js"
import type { ManifestPath } from "../../runtime/compatibility/rules.js"
import {
  canonicalOwner,
  ownerHash,
  type CanonicalOwner,
} from "../../runtime/model/canonicalManifest.js"
import type { LoadedManifest } from "../../codegen/manifest/loadManifests.js"
import {
  canonicalEarlierShapes,
  type OwnerEarlierShapes,
} from "../../runtime/model/earlierShapes.js"
import type { IgnoreReading } from "./ignoreFile.js"
import type { LockFile } from "./lockFile.js"

/** The manifests of `manifests/` by owner type, with a locator into each one's file. */
export interface CurrentManifests {
  readonly owners: ReadonlyMap<string, CanonicalOwner>
  /** The earlier shapes each owner type's manifest declares, canonical. */
  readonly earlier?: ReadonlyMap<string, OwnerEarlierShapes>
  readonly locate: (owner: string, path: ManifestPath) => FindingLocation | undefined
}

/**
 * @example
 * const current = currentManifests((await loadManifests({ dir: "manifests" })).manifests)
 * current.locate("Order", ["workflows", "fulfill"]) // { file: "manifests/order.yaml", line: 17, column: 3 }
 */
export const currentManifests = (loaded: readonly LoadedManifest[]): CurrentManifests => {
  const byOwner = new Map(loaded.map((manifest) => [manifest.manifest.owner, manifest]))
  return {
    owners: new Map(loaded.map((m) => [m.manifest.owner, canonicalOwner(m.manifest)])),
    earlier: new Map(loaded.map((m) => [m.manifest.owner, canonicalEarlierShapes(m.manifest)])),
    locate: (owner, path) => {
      const manifest = byOwner.get(owner)
      const at = manifest?.positions.locate(path)
      return manifest === undefined || at === undefined ? undefined : { file: manifest.file, ...at }
    },
  }
}

export interface CheckInputs {
  readonly current: CurrentManifests
  readonly lock: LockFile
  /** Also report what the previous release would misread after a rollback. */
  readonly rollback: boolean
  /** The open executions of a database, when one was given. */
  readonly open?: OpenExecutionAggregates
  /** The accepted breaks, and the file they were read from. */
  readonly ignores?: IgnoreReading & { readonly file: string }
}

/** An ignore problem with the place of its entry. */
export interface LocatedIgnoreProblem extends IgnoreProblem {
  readonly location: FindingLocation
}

const earlierOf = (current: CurrentManifests, owner: string) => {
  const earlier = current.earlier?.get(owner)
  return earlier === undefined ? {} : { earlier }
}

/**
 * The lock-file findings: every locked manifest of an owner type against its manifest now. With
 * `rollback`, the `rollback-*` findings against the release a rollback would return to: the newest
 * locked manifest that is not the current one.
 */
const lockFindings = (inputs: CheckInputs): { forward: Finding[]; rollback: Finding[] } => {
  const { current, lock } = inputs
  const forward = lock.entries.flatMap((entry) =>
    compareManifests(entry.manifest, current.owners.get(entry.owner), {
      locate: (path) => current.locate(entry.owner, path),
      released: `release ${entry.release}`,
      ...earlierOf(current, entry.owner),
    }),
  )
  const rollback: Finding[] = []
  if (inputs.rollback) {
    for (const [owner, next] of current.owners) {
      const hash = ownerHash(next)
      const target = lock.entries
        .filter((entry) => entry.owner === owner && entry.hash !== hash)
        .sort((a, b) => b.release - a.release)[0]
      if (target === undefined) continue
      rollback.push(
        ...compareManifests(target.manifest, next, {
          rollback: true,
          locate: (path) => current.locate(owner, path),
        }).filter((finding) => finding.axis === "rollback"),
      )
    }
  }
  return { forward: mergeFindings(forward), rollback: mergeFindings(rollback) }
}

/**
 * Every finding of a check, merged and sorted, with ignore entries applied. Against a database,
 * lock-file findings no open execution observes are kept as warnings; rollback findings concern
 * executions the new manifests will start, so a database never downgrades them.
 *
 * @example
 * const report = checkProject({ current, lock, rollback: false, open })
 * process.exitCode = exitCodeOf({ status: "checked", ...report })
 */
export const checkProject = (
  inputs: CheckInputs,
): CheckReport & {
  readonly ignoreProblems: readonly LocatedIgnoreProblem[]
} => {
  const { forward, rollback } = lockFindings(inputs)
  const findings =
    inputs.open === undefined
      ? mergeFindings([...forward, ...rollback])
      : mergeFindings([
          ...checkOpenExecutions(inputs.open, [...inputs.current.owners.values()], {
            locate: inputs.current.locate,
            ...(inputs.current.earlier === undefined
              ? {}
              : { earlier: (owner: string) => inputs.current.earlier?.get(owner) }),
            lockFindings: forward,
          }),
          ...rollback,
        ])
  const ignores = inputs.ignores
  if (ignores === undefined || ignores.entries.length === 0) {
    return { findings, ignoreProblems: [] }
  }
  const applied = applyIgnores(findings, ignores.entries)
  return {
    findings: applied.findings,
    ignoreProblems: applied.problems.map((problem) => {
      const at = ignores.positions[problem.index] ?? { line: 1, column: 1 }
      const location = { file: ignores.file, ...at }
      return {
        ...problem,
        message: `${location.file}:${location.line}:${location.column}: ${problem.message}`,
        location,
      }
    }),
  }
}
