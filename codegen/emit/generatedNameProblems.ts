/**
 * Problems only code generation can see: two manifest names that would become the same generated
 * name, a workflow or owner named like a reserved word or a member the generated client already
 * has, two owners that would share a folder. The manifest checker guards the type names it derives
 * itself (`generatedTypeNames`, with `name-collision`); this adds the names the emitters introduce
 * on top (schemas, builders, error unions, owner objects, folders).
 */
import type { Diagnostic } from "../manifest/diagnostics.js"
import type { ManifestPath, Position } from "../manifest/loadManifests.js"
import { renderPath } from "../manifest/manifestReport.js"
import { generatedTypeNames } from "../manifest/names.js"
import {
  CLIENT_MEMBERS,
  isDeclarableIdentifier,
  JSON_TYPE_NAME,
  OWNER_MEMBERS,
  ROOT_REGISTRATIONS,
  workflowActivitiesName,
  workflowDefinitionName,
  workflowErrorName,
  workflowStepsName,
} from "./names.js"
import type { OwnerPlan } from "./ownerPlan.js"
import type { ProjectPlan } from "./projectPlan.js"

/** A name an owner's index.ts exports, and what in the manifest it comes from. */
interface ExportedName {
  readonly name: string
  readonly what: string
  /** Where the manifest declares it; `null` for names every owner has. */
  readonly origin: ManifestPath | null
  /** Whether the manifest checker already refuses two of these being equal. */
  readonly checkedByManifest: boolean
}

const exportedNames = (plan: OwnerPlan): ExportedName[] => {
  const fixed = (name: string, what: string): ExportedName => ({
    name,
    what,
    origin: null,
    checkedByManifest: false,
  })
  const names: ExportedName[] = [
    ...OWNER_MEMBERS.map((name) => fixed(name, `the generated \`${name}\``)),
    ...(plan.usesJson ? [fixed(JSON_TYPE_NAME, "the generated type of `json` values")] : []),
    ...[
      generatedTypeNames.ownerEvents(plan.owner),
      generatedTypeNames.ownerClient(plan.owner),
      generatedTypeNames.ownerEffectClient(plan.owner),
    ].map((name) => ({
      name,
      what: `the generated type \`${name}\``,
      origin: ["owner"],
      checkedByManifest: true,
    })),
    {
      name: plan.owner,
      what: `the owner object \`${plan.owner}\``,
      origin: ["owner"],
      checkedByManifest: false,
    },
  ]
  for (const declaration of plan.types) {
    const what = describeOrigin(declaration.origin)
    names.push({
      name: declaration.name,
      what,
      origin: declaration.origin,
      checkedByManifest: true,
    })
    names.push({
      name: declaration.schema,
      what: `the schema of ${what}`,
      origin: declaration.origin,
      checkedByManifest: false,
    })
  }
  for (const error of plan.errors) {
    names.push({
      name: error.name,
      what: `error ${error.name}`,
      origin: error.origin,
      checkedByManifest: true,
    })
  }
  for (const workflow of plan.workflows) {
    const generated = (name: string, what: string): ExportedName => ({
      name,
      what: `the ${what} of workflow ${workflow.name}`,
      origin: workflow.origin,
      checkedByManifest: false,
    })
    names.push(
      generated(workflowErrorName(workflow.name), "error union"),
      generated(workflowStepsName(workflow.name), "steps interface"),
      generated(workflowActivitiesName(workflow.name), "activities interface"),
      generated(workflowDefinitionName(workflow.name), "definition type"),
      generated(workflow.name, "builder"),
    )
  }
  return names
}

const describeOrigin = (origin: ManifestPath): string => {
  const [section, name, third, step, fifth] = origin
  if (section === "types") return `named type ${String(name)}`
  if (section === "events") return `the payload of event ${String(name)}`
  if (third === "steps")
    return `the ${String(fifth)} of step ${String(step)} of workflow ${String(name)}`
  return `the ${String(third)} of workflow ${String(name)}`
}

/** Where `path` is written in the manifest, or its nearest ancestor that is. */
const locate = (plan: OwnerPlan, path: ManifestPath): Position => {
  for (let length = path.length; length > 0; length--) {
    const found = plan.source.positions.locate(path.slice(0, length))
    if (found !== undefined) return found
  }
  return plan.source.positions.start
}

const problem = (
  plan: OwnerPlan,
  path: ManifestPath,
  rule: string,
  message: string,
  hint: string,
): Diagnostic => ({
  file: plan.source.file,
  ...locate(plan, path),
  rule,
  severity: "error",
  message,
  hint,
  path: renderPath(path),
})

const ownerProblems = (plan: OwnerPlan): Diagnostic[] => {
  const problems: Diagnostic[] = []
  const seen = new Map<string, ExportedName>()
  for (const entry of exportedNames(plan)) {
    const earlier = seen.get(entry.name)
    if (earlier === undefined) {
      seen.set(entry.name, entry)
      continue
    }
    if (earlier.checkedByManifest && entry.checkedByManifest) continue
    // Located at the name the manifest declares itself: that is the one to rename.
    const [declared, other] =
      entry.checkedByManifest || !earlier.checkedByManifest ? [entry, earlier] : [earlier, entry]
    problems.push(
      problem(
        plan,
        declared.origin ?? other.origin ?? [],
        "generated-name-conflict",
        `${declared.what} and ${other.what} would both be generated as \`${entry.name}\``,
        "rename one of them",
      ),
    )
  }
  for (const workflow of plan.workflows) {
    if (!isDeclarableIdentifier(workflow.name)) {
      problems.push(
        problem(
          plan,
          workflow.origin,
          "reserved-name",
          `workflow name "${workflow.name}" is a reserved word in TypeScript, so its builder cannot be declared`,
          `rename it, e.g. "${workflow.name}Workflow"`,
        ),
      )
    }
    if ((CLIENT_MEMBERS as readonly string[]).includes(workflow.name)) {
      problems.push(
        problem(
          plan,
          workflow.origin,
          "reserved-name",
          `workflow name "${workflow.name}" is taken by the generated client's \`${workflow.name}\``,
          `rename it, e.g. "${workflow.name}Workflow"`,
        ),
      )
    }
  }
  if (!isDeclarableIdentifier(plan.owner) || plan.owner === ROOT_REGISTRATIONS) {
    problems.push(
      problem(
        plan,
        ["owner"],
        "reserved-name",
        `owner name "${plan.owner}" cannot be declared as the generated owner object`,
        "rename the owner",
      ),
    )
  }
  return problems
}

/** Every problem of this kind in a set of manifests, in manifest order. */
export const generatedNameProblems = (project: ProjectPlan): Diagnostic[] => {
  const problems = project.owners.flatMap(ownerProblems)
  const folders = new Map<string, OwnerPlan>()
  for (const owner of project.owners) {
    const earlier = folders.get(owner.folder.toLowerCase())
    if (earlier === undefined) {
      folders.set(owner.folder.toLowerCase(), owner)
      continue
    }
    problems.push(
      problem(
        owner,
        ["owner"],
        "generated-name-conflict",
        `owners ${earlier.owner} (${earlier.source.file}) and ${owner.owner} would share the generated folder "${owner.folder}" on a case-insensitive file system`,
        "rename one of the owners",
      ),
    )
  }
  return problems
}
