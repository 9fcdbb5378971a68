/**
 * Emits an owner's workflows.ts: per workflow, the typed `wf` a body calls (one method per step),
 * the activities an implementation must provide, and `implement`, which pairs them with the
 * registration. A missing activity, a wrong input or an undeclared event is a compile error here.
 */
import { generatedTypeNames, pascalCase } from "../manifest/names.js"
import type {
  EarlierShapeDeclaration,
  MigrationsPlan,
  OwnerPlan,
  StepPlan,
  WorkflowPlan,
} from "./ownerPlan.js"
import type { ProjectPlan } from "./projectPlan.js"
import { typesFileNames } from "./typesFile.js"
import { propertyKey } from "./literals.js"
import {
  arrowFunction,
  call,
  identifier,
  keywordType,
  objectLiteral,
  objectType,
  property,
  stringLiteralType,
  stringValue,
  typeReference,
  unionType,
  type PropertySyntax,
  type TypeSyntax,
} from "./typeScriptSyntax.js"
import { ModuleBuilder, type MethodDeclaration } from "./writer.js"
import type { MethodContext, WorkflowsImports } from "../stepKinds/stepKindCodegen.js"
import { stepKindCodegenOf } from "../stepKinds/stepKinds.js"

/** Every name an owner's workflows.ts declares. */
export const workflowsFileNames = (plan: OwnerPlan): string[] =>
  plan.workflows.flatMap((workflow) => [
    generatedTypeNames.workflowSteps(workflow.name),
    generatedTypeNames.workflowActivities(workflow.name),
    ...(workflow.migrations === undefined
      ? []
      : [generatedTypeNames.workflowMigrations(workflow.name)]),
    generatedTypeNames.workflowDefinition(workflow.name),
    workflow.name,
  ])

const VOID = keywordType("void")

const stepMethod = (step: StepPlan, context: MethodContext): MethodDeclaration =>
  stepKindCodegenOf(step.decl.kind).method(step, context)

const activityProperty = (step: StepPlan, imports: WorkflowsImports): PropertySyntax[] => {
  if (step.decl.kind !== "activity") return []
  const output = step.output === null ? VOID : imports.own(step.output.name)
  const errors = unionType(step.decl.errors.map(imports.own))
  return [
    property(
      step.name,
      step.input === null
        ? typeReference(imports.akter("InputlessActivity"), [output, errors])
        : typeReference(imports.akter("Activity"), [imports.own(step.input.name), output, errors]),
      { docs: step.decl.description },
    ),
  ]
}

/** `{ readonly v1: Migration<FulfillScreenOutputV1, FulfillScreenOutput> }`: one per earlier shape. */
const migrationFunctions = (
  shapes: readonly EarlierShapeDeclaration[],
  imports: WorkflowsImports,
): TypeSyntax =>
  objectType(
    shapes.map((shape) =>
      property(
        shape.migration,
        typeReference(imports.akter("Migration"), [
          imports.own(shape.name),
          imports.own(shape.current),
        ]),
      ),
    ),
  )

const migrationGroups = (
  migrations: MigrationsPlan,
  imports: WorkflowsImports,
): PropertySyntax[] => {
  const grouped = (
    name: string,
    groups: readonly (readonly [string, readonly EarlierShapeDeclaration[]])[],
    docs: string,
  ) =>
    groups.length === 0
      ? []
      : [
          property(
            name,
            objectType(
              groups.map(([key, shapes]) => property(key, migrationFunctions(shapes, imports))),
            ),
            { docs },
          ),
        ]
  return [
    ...(migrations.input.length === 0
      ? []
      : [
          property("input", migrationFunctions(migrations.input, imports), {
            docs: "Of the start input, applied when an execution started with an earlier shape runs.",
          }),
        ]),
    ...grouped(
      "steps",
      migrations.steps,
      "Of activity results, applied when a recorded result of an earlier shape is replayed.",
    ),
    ...grouped(
      "events",
      migrations.events,
      "Of event payloads, applied when a wait reads an event of an earlier shape.",
    ),
    ...grouped(
      "errors",
      migrations.errors,
      "Of declared errors' payloads, applied when a recorded failure of an earlier shape is replayed; each returns the error as it is declared now.",
    ),
  ]
}

const implementExample = (owner: OwnerPlan, workflow: WorkflowPlan): string => {
  const activities = workflow.steps
    .filter((step) => step.decl.kind === "activity")
    .map(
      (step) =>
        `${propertyKey(step.name)}: ${step.input === null ? "async ()" : "async (input)"} => …`,
    )
  return [
    "@example",
    `export const ${workflow.name}Worker = ${owner.owner}.${workflow.name}.implement({`,
    "  activities: {",
    ...activities.map((activity) => `    ${activity},`),
    "  },",
    "  body: (input, wf) => Effect.gen(function* () { … }),",
    ...(workflow.migrations === undefined
      ? []
      : ["  migrations: { … }, // one per earlier shape: (old) => current"]),
    "})",
  ].join("\n")
}

const declareWorkflow = (
  module: ModuleBuilder,
  workflow: WorkflowPlan,
  owner: OwnerPlan,
  project: ProjectPlan,
  imports: WorkflowsImports,
  registration: string,
): void => {
  const markers = Object.keys(workflow.decl.versions).map(stringLiteralType)
  module.interface(generatedTypeNames.workflowSteps(workflow.name), {
    extends: typeReference(imports.akter("WorkflowSteps"), [unionType(markers)]),
    docs: `What the body of workflow \`${workflow.name}\` calls: one method per step of ${owner.source.file}.`,
    methods: workflow.steps.map((step) => stepMethod(step, { project, owner, imports })),
  })
  module.interface(generatedTypeNames.workflowActivities(workflow.name), {
    docs: `The activities of workflow \`${workflow.name}\`: an implementation provides every one.`,
    properties: workflow.steps.flatMap((step) => activityProperty(step, imports)),
  })
  const definition = [
    workflow.input === null ? VOID : imports.own(workflow.input.name),
    workflow.output === null ? VOID : imports.own(workflow.output.name),
    imports.client(generatedTypeNames.workflowError(workflow.name)),
    typeReference(generatedTypeNames.workflowSteps(workflow.name)),
    typeReference(generatedTypeNames.workflowActivities(workflow.name)),
  ]
  if (workflow.migrations === undefined) {
    module.typeAlias(
      generatedTypeNames.workflowDefinition(workflow.name),
      typeReference(imports.akter("WorkflowDefinition"), definition),
      `An implementation of workflow \`${workflow.name}\`: its activities and its body.`,
    )
  } else {
    const migrations = generatedTypeNames.workflowMigrations(workflow.name)
    module.interface(migrations, {
      docs: `The migrations of workflow \`${workflow.name}\`: one per earlier shape ${owner.source.file} declares of what it reads.`,
      properties: migrationGroups(workflow.migrations, imports),
    })
    module.typeAlias(
      generatedTypeNames.workflowDefinition(workflow.name),
      typeReference(imports.akter("MigratingWorkflowDefinition"), [
        ...definition,
        typeReference(migrations),
      ]),
      `An implementation of workflow \`${workflow.name}\`: its activities, its body and its migrations.`,
    )
  }
  const implementation = imports.akter("WorkflowImplementation")
  const implementWorkflow = imports.akterValue("implementWorkflow")
  module.constant(
    workflow.name,
    objectLiteral([
      [
        "implement",
        arrowFunction(
          [
            {
              name: "definition",
              type: typeReference(generatedTypeNames.workflowDefinition(workflow.name)),
            },
          ],
          typeReference(implementation),
          call(implementWorkflow, [
            identifier(registration),
            stringValue(workflow.name),
            identifier("definition"),
          ]),
        ),
      ],
    ]),
    {
      docs: [
        `Workflow \`${workflow.name}\` of owner \`${owner.owner}\`.${workflow.decl.description === undefined ? "" : ` ${workflow.decl.description.trim()}`}`,
        "",
        implementExample(owner, workflow),
      ].join("\n"),
    },
  )
}

export const workflowsModule = (plan: OwnerPlan, project: ProjectPlan): ModuleBuilder => {
  const module = new ModuleBuilder(
    `${plan.folder}/workflows.ts`,
    { source: plan.source.file, hash: plan.hash },
    workflowsFileNames(plan),
  )
  module.preferImports("./types.js", typesFileNames(plan))
  const imports: WorkflowsImports = {
    akter: (name) => module.importType("akter", name, `Akter${name}`),
    akterValue: (name) => module.importValue("akter", name, `akter${pascalCase(name)}`),
    effect: (name) => module.importType("effect", name, `Effect${name}`),
    own: (name) => typeReference(module.importType("./types.js", name, `${plan.owner}${name}`)),
    client: (name) => typeReference(module.importType("./client.js", name, `${plan.owner}${name}`)),
    foreign: (owner, name) =>
      typeReference(
        module.importType(`../${owner.folder}/types.js`, name, `${owner.owner}${name}`),
      ),
  }
  const registration = module.importValue("./registration.js", "registration", "ownerRegistration")
  for (const workflow of plan.workflows) {
    declareWorkflow(module, workflow, plan, project, imports, registration)
  }
  return module
}
