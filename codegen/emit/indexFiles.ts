/**
 * Emits the entry points: each owner's index.ts (its types and the owner object `Order`, with the
 * client factories and one builder per workflow) and the output folder's index.ts (every owner and
 * the list of their registrations, for a runner that serves them all).
 */
import { hashOf } from "../../runtime/model/hash.js"
import { clientFileNames, startExample } from "./clientFile.js"
import { OWNER_MEMBERS, ROOT_REGISTRATIONS } from "../manifest/names.js"
import type { OwnerPlan } from "./ownerPlan.js"
import type { ProjectPlan } from "./projectPlan.js"
import { workflowsFileNames } from "./workflowsFile.js"
import { arrayLiteral, asConst, identifier, member, objectLiteral } from "./typeScriptSyntax.js"
import { ModuleBuilder, type GeneratedHeader } from "./writer.js"

const ownerObjectDocs = (plan: OwnerPlan): string => {
  const lines = [
    `Owner \`${plan.owner}\`, generated from ${plan.source.file}.${plan.source.manifest.description === undefined ? "" : ` ${plan.source.manifest.description.trim()}`}`,
    "",
    `- \`${plan.owner}.client(akter)\`, \`${plan.owner}.effectClient(akter)\`: start and attach to executions, emit events.`,
    ...plan.workflows.map(
      (workflow) =>
        `- \`${plan.owner}.${workflow.name}.implement({ activities, body })\`: the implementation of workflow \`${workflow.name}\` a runner serves.`,
    ),
    `- \`${plan.owner}.registration\`: what the runtime knows about this owner, checked against its hashes.`,
    "",
    "@example",
    ...startExample(plan, `${plan.folder}s`),
  ]
  return lines.join("\n")
}

export const ownerIndexModule = (plan: OwnerPlan): ModuleBuilder => {
  const module = new ModuleBuilder(
    `${plan.folder}/index.ts`,
    { source: plan.source.file, hash: plan.hash },
    [plan.owner],
  )
  const registration = module.importValue("./registration.js", "registration", "ownerRegistration")
  const client = module.importValue("./client.js", "client", "ownerClient")
  const effectClient = module.importValue("./client.js", "effectClient", "ownerEffectClient")
  const workflows = plan.workflows.map(
    (workflow) =>
      [
        workflow.name,
        identifier(module.importValue("./workflows.js", workflow.name, `${workflow.name}Workflow`)),
      ] as const,
  )
  module.reexportAll("./types.js")
  const values = new Set<string>(OWNER_MEMBERS)
  module.reexport(
    "./client.js",
    clientFileNames(plan).filter((name) => !values.has(name)),
    true,
  )
  const workflowValues = new Set(plan.workflows.map((workflow) => workflow.name))
  module.reexport(
    "./workflows.js",
    workflowsFileNames(plan).filter((name) => !workflowValues.has(name)),
    true,
  )
  module.constant(
    plan.owner,
    asConst(
      objectLiteral([
        ["registration", identifier(registration)],
        ["client", identifier(client)],
        ["effectClient", identifier(effectClient)],
        ...workflows,
      ]),
    ),
    { docs: ownerObjectDocs(plan) },
  )
  return module
}

/** The header of the root index: it comes from the whole manifest folder. */
export const rootHeader = (project: ProjectPlan, manifestsFolder: string): GeneratedHeader => {
  const hashes: Record<string, string> = {}
  for (const owner of project.owners) hashes[owner.owner] = owner.hash
  return { source: `${manifestsFolder}/`, hash: hashOf(hashes) }
}

export const rootIndexModule = (project: ProjectPlan, header: GeneratedHeader): ModuleBuilder => {
  const module = new ModuleBuilder("index.ts", header, [ROOT_REGISTRATIONS])
  const owners = project.owners.map((owner) =>
    module.importValue(`./${owner.folder}/index.js`, owner.owner, `${owner.owner}Owner`),
  )
  module.exportImported(owners)
  module.constant(
    ROOT_REGISTRATIONS,
    asConst(arrayLiteral(owners.map((owner) => member(owner, "registration")))),
    { docs: "The registration of every owner, for a runner that serves all of them." },
  )
  return module
}
