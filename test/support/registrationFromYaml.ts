/**
 * Registrations straight from manifest text, for tests that need a workflow the example manifests
 * do not have. The path is the one the generator takes (load, validate, canonical form, hashes),
 * minus printing TypeScript: the runtime builds strict schemas from the canonical types itself.
 */
import { formatDiagnostic } from "../../codegen/manifest/diagnostics.js"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { canonicalOwner, ownerHash, workflowHashes } from "../../runtime/model/canonicalManifest.js"
import type { OwnerManifest } from "../../runtime/model/manifest.js"
import {
  defineOwner,
  type ErrorConstructor,
  type OwnerRegistration,
  type StepSettings,
} from "../../runtime/model/registration.js"
import { schemaOf } from "../../runtime/model/schemaOf.js"
import { canonicalType } from "../../runtime/model/canonicalType.js"
import { canonicalEarlierShapes } from "../../runtime/model/earlierShapes.js"
import { Data } from "effect"

/** A declared error class, as the generator would emit it. */
const errorClass = (tag: string): ErrorConstructor =>
  class extends Data.TaggedError(tag)<Record<string, unknown>> {} as unknown as ErrorConstructor

const registrationOf = (
  manifest: OwnerManifest,
  file: string,
  all: ReadonlyMap<string, () => OwnerRegistration>,
): OwnerRegistration => {
  const canonical = canonicalOwner(manifest)
  const events: Record<string, ReturnType<typeof schemaOf>> = {}
  for (const [name, type] of Object.entries(canonical.events))
    events[name] = schemaOf(type, "strict")
  const workflows: Record<string, Parameters<typeof defineOwner>[0]["workflows"][string]> = {}
  for (const [name, workflow] of Object.entries(manifest.workflows)) {
    const steps: Record<string, StepSettings> = {}
    for (const [stepName, step] of Object.entries(workflow.steps)) {
      const settings: { -readonly [K in keyof StepSettings]: StepSettings[K] } = {}
      if (step.kind === "activity") {
        if (step.retry !== null) settings.retry = step.retry
        if (step.timeoutMs !== null) settings.timeoutMs = step.timeoutMs
        if (step.input !== null)
          settings.input = schemaOf(canonicalType(step.input, manifest.types), "strict")
      }
      if (step.kind === "sleep" && step.durationMs !== null) settings.durationMs = step.durationMs
      if (step.kind === "wait" && step.timeoutMs !== null) settings.timeoutMs = step.timeoutMs
      if (step.kind === "start") {
        const target = all.get(step.owner)
        if (target !== undefined) settings.target = target
      }
      steps[stepName] = settings
    }
    const errors: Record<string, ErrorConstructor> = {}
    for (const tag of Object.keys(workflow.errors)) errors[tag] = errorClass(tag)
    workflows[name] = {
      hashes: workflowHashes(canonical.workflows[name]!),
      key: workflow.key,
      ...(workflow.input === null
        ? {}
        : { input: schemaOf(canonicalType(workflow.input, manifest.types), "strict") }),
      errors,
      steps,
      ...(workflow.deadlineMs === undefined ? {} : { deadlineMs: workflow.deadlineMs }),
    }
  }
  return defineOwner({
    source: file,
    hash: ownerHash(canonical),
    canonical,
    events,
    workflows,
    earlier: canonicalEarlierShapes(manifest),
  })
}

/**
 * Loads manifests from text and returns one registration per owner type, keyed by owner name.
 * Throws with every located problem if a manifest is invalid.
 */
export const registrationsFromYaml = async (
  sources: Readonly<Record<string, string>>,
): Promise<Record<string, OwnerRegistration>> => {
  const { manifests, diagnostics } = loadManifestSources(
    Object.entries(sources).map(([file, text]) => ({ file, text })),
  )
  const errors = diagnostics.filter((d) => d.severity === "error")
  if (errors.length > 0) throw new Error(errors.map(formatDiagnostic).join("\n"))
  const registrations: Record<string, OwnerRegistration> = {}
  const lazy = new Map<string, () => OwnerRegistration>()
  for (const loaded of manifests)
    lazy.set(loaded.manifest.owner, () => registrations[loaded.manifest.owner]!)
  for (const loaded of manifests) {
    registrations[loaded.manifest.owner] = registrationOf(loaded.manifest, loaded.file, lazy)
  }
  return registrations
}

/** The registration of a single manifest's owner. */
export const registrationFromYaml = async (text: string, file = "manifests/test.yaml") => {
  const registrations = await registrationsFromYaml({ [file]: text })
  const only = Object.values(registrations)[0]
  if (only === undefined) throw new Error("no manifest")
  return only
}
