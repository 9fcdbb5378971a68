/**
 * Emits an owner's client.ts: the error union of each workflow, the Promise and Effect client
 * interfaces, and the two functions that build them over the runtime's client base.
 */
import { generatedTypeNames } from "../manifest/names.js"
import { typesFileNames } from "./typesFile.js"
import { formatDuration, type OwnerPlan, type WorkflowPlan } from "./ownerPlan.js"
import {
  arrowFunction,
  call,
  identifier,
  keywordType,
  property,
  typeReference,
  unionType,
  type TypeSyntax,
} from "./typeScriptSyntax.js"
import { ModuleBuilder } from "./writer.js"

/** Every name an owner's client.ts declares. */
export const clientFileNames = (plan: OwnerPlan): string[] => [
  ...plan.workflows.map((workflow) => generatedTypeNames.workflowError(workflow.name)),
  generatedTypeNames.ownerClient(plan.owner),
  generatedTypeNames.ownerEffectClient(plan.owner),
  "client",
  "effectClient",
]

/** Lines of a TSDoc example that makes the Promise client and starts the first workflow. */
export const startExample = (plan: OwnerPlan, clientName: string): string[] => {
  const workflow = plan.workflows[0]
  if (workflow === undefined) {
    return [
      `const ${clientName} = ${plan.owner}.client(akter)`,
      `await ${clientName}.emit(ownerId, "Event", payload)`,
    ]
  }
  const input = workflow.input === null ? "" : ", input"
  return [
    `const ${clientName} = ${plan.owner}.client(akter)`,
    `const execution = await ${clientName}.${workflow.name}.start(ownerId${input})`,
    "const result = await execution.result()",
  ]
}

const workflowDocs = (plan: OwnerPlan, workflow: WorkflowPlan): string =>
  [
    `Workflow \`${workflow.name}\` of ${plan.source.file}.`,
    workflow.decl.description,
    workflow.decl.deadlineMs === undefined
      ? undefined
      : `Interrupted ${formatDuration(workflow.decl.deadlineMs)} after its start if still open (a start may ask for less).`,
  ]
    .filter((part) => part !== undefined)
    .join(" ")

export const clientModule = (plan: OwnerPlan): ModuleBuilder => {
  const module = new ModuleBuilder(
    `${plan.folder}/client.ts`,
    { source: plan.source.file, hash: plan.hash },
    clientFileNames(plan),
  )
  module.preferImports("./types.js", typesFileNames(plan))
  const akterType = (name: string, typeArguments: readonly TypeSyntax[] = []) =>
    typeReference(module.importType("akter", name, `Akter${name}`), typeArguments)
  const ownType = (name: string) =>
    typeReference(module.importType("./types.js", name, `${plan.owner}${name}`))
  const registration = identifier(
    module.importValue("./registration.js", "registration", "ownerRegistration"),
  )

  for (const workflow of plan.workflows) {
    module.typeAlias(
      generatedTypeNames.workflowError(workflow.name),
      unionType(Object.keys(workflow.decl.errors).map(ownType)),
      `Errors workflow \`${workflow.name}\` declares: what the result of an execution that failed carries.`,
    )
  }
  const events = ownType(generatedTypeNames.ownerEvents(plan.owner))
  const typeArguments = (workflow: WorkflowPlan) => [
    workflow.input === null ? keywordType("void") : ownType(workflow.input.name),
    workflow.output === null ? keywordType("void") : ownType(workflow.output.name),
    typeReference(generatedTypeNames.workflowError(workflow.name)),
    // A workflow with a deadline takes a shorter one at its start.
    ...(workflow.decl.deadlineMs === undefined ? [] : [akterType("DeadlineStartOptions")]),
  ]
  const emitDocs = `Appends an event to an ${plan.owner}'s log, where the waits of its executions see it. The payload is validated before anything is written.`

  module.interface(generatedTypeNames.ownerClient(plan.owner), {
    docs: `Starts and attaches to \`${plan.owner}\` workflows and emits \`${plan.owner}\` events, with Promises.`,
    properties: [
      ...plan.workflows.map((workflow) =>
        property(workflow.name, akterType("WorkflowClient", typeArguments(workflow)), {
          docs: workflowDocs(plan, workflow),
        }),
      ),
      property("emit", akterType("EmitFunction", [events]), { docs: emitDocs }),
    ],
  })
  module.interface(generatedTypeNames.ownerEffectClient(plan.owner), {
    docs: `The same surface as {@link ${generatedTypeNames.ownerClient(plan.owner)}}, returning Effects with typed failures.`,
    properties: [
      ...plan.workflows.map((workflow) =>
        property(workflow.name, akterType("EffectWorkflowClient", typeArguments(workflow)), {
          docs: workflowDocs(plan, workflow),
        }),
      ),
      property("emit", akterType("EffectEmitFunction", [events]), { docs: emitDocs }),
    ],
  })

  const lower = plan.folder
  /** `(akter: Akter, caller?: Caller): OrderClient => makeOwnerClient<OrderClient>(…)`. */
  const clientFactory = (clientType: string, make: string) => {
    const made = typeReference(clientType)
    return arrowFunction(
      [
        { name: "akter", type: akterType("Akter") },
        { name: "caller", type: akterType("Caller"), optional: true },
      ],
      made,
      call(
        module.importValue("akter", make, `akter${make[0]!.toUpperCase()}${make.slice(1)}`),
        [identifier("akter"), registration, identifier("caller")],
        [made],
      ),
    )
  }
  module.constant(
    "client",
    clientFactory(generatedTypeNames.ownerClient(plan.owner), "makeOwnerClient"),
    {
      docs: [
        `The Promise client of owner \`${plan.owner}\`, acting for \`caller\` (default: the default tenant).`,
        "",
        "@example",
        ...startExample(plan, `${lower}s`),
      ].join("\n"),
    },
  )
  module.constant(
    "effectClient",
    clientFactory(generatedTypeNames.ownerEffectClient(plan.owner), "makeEffectOwnerClient"),
    {
      docs: `The Effect client of owner \`${plan.owner}\`, acting for \`caller\` (default: the default tenant).`,
    },
  )
  return module
}
