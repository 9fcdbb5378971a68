/**
 * Emits an owner's workflows.ts: per workflow, the typed `wf` a body calls (one method per step),
 * the activities an implementation must provide, and `implement`, which pairs them with the
 * registration. A missing activity, a wrong input or an undeclared event is a compile error here.
 */
import { generatedTypeNames, pascalCase } from "../manifest/names.js"
import { formatDuration, type OwnerPlan, type StepPlan, type WorkflowPlan } from "./ownerPlan.js"
import type { ProjectPlan } from "./projectPlan.js"
import { typesFileNames } from "./typesFile.js"
import { propertyKey } from "./literals.js"
import {
  arrowFunction,
  call,
  identifier,
  keywordType,
  objectLiteral,
  property,
  readonlyArrayType,
  stringLiteralType,
  stringValue,
  typeReference,
  unionType,
  type PropertySyntax,
  type TypeSyntax,
} from "./typeScriptSyntax.js"
import { ModuleBuilder, type MethodDeclaration } from "./writer.js"

/** Every name an owner's workflows.ts declares. */
export const workflowsFileNames = (plan: OwnerPlan): string[] =>
  plan.workflows.flatMap((workflow) => [
    generatedTypeNames.workflowSteps(workflow.name),
    generatedTypeNames.workflowActivities(workflow.name),
    generatedTypeNames.workflowDefinition(workflow.name),
    workflow.name,
  ])

/** Imports what workflows.ts refers to, by the name it can use. */
interface WorkflowsImports {
  akter(name: string): string
  akterValue(name: string): string
  effect(name: string): string
  /** A type of this owner's types.ts. */
  own(name: string): TypeSyntax
  /** A type of this owner's client.ts (the workflow's error union). */
  client(name: string): TypeSyntax
  /** A type of another owner's types.ts (`start` steps pass the target's input). */
  foreign(owner: OwnerPlan, name: string): TypeSyntax
}

const joinDocs = (generated: string, description: string | undefined): string =>
  description === undefined ? generated : `${generated}\n\n${description.trim()}`

const VOID = keywordType("void")
const NEVER = keywordType("never")

/** `Effect.Effect<A>`, or `Effect.Effect<A, E>` when something can fail. */
const effectType = (imports: WorkflowsImports, value: TypeSyntax, error: TypeSyntax): TypeSyntax =>
  typeReference(
    `${imports.effect("Effect")}.Effect`,
    error.kind === "keyword" && error.name === "never" ? [value] : [value, error],
  )

const retryDocs = (plan: StepPlan): string => {
  if (plan.decl.kind !== "activity" || plan.decl.retry === null) return ""
  const { attempts, initialMs, factor, maxMs } = plan.decl.retry
  return ` Up to ${attempts} attempts, ${formatDuration(initialMs)} apart at first, growing ×${factor} to at most ${formatDuration(maxMs)}.`
}

const stepMethod = (
  step: StepPlan,
  owner: OwnerPlan,
  project: ProjectPlan,
  imports: WorkflowsImports,
): MethodDeclaration => {
  const { decl } = step
  const errorsOf = (names: readonly string[]) => unionType(names.map(imports.own))
  switch (decl.kind) {
    case "activity": {
      const output = step.output === null ? VOID : imports.own(step.output.name)
      return {
        name: step.name,
        parameters:
          step.input === null ? [] : [{ name: "input", type: imports.own(step.input.name) }],
        returns: effectType(imports, output, errorsOf(decl.errors)),
        docs: joinDocs(
          `Activity \`${step.name}\`: runs its implementation and records the result, once per attempt.${retryDocs(step)}`,
          decl.description,
        ),
      }
    }
    case "sleep":
      return {
        name: step.name,
        parameters: [
          {
            name: "duration",
            type: typeReference(`${imports.effect("Duration")}.Input`),
            optional: decl.durationMs !== null,
          },
        ],
        returns: effectType(imports, VOID, NEVER),
        docs: joinDocs(
          `Sleeps durably for \`duration\`${decl.durationMs === null ? "" : ` (default ${formatDuration(decl.durationMs)})`}; the wake-up time is fixed when the step is first reached.`,
          decl.description,
        ),
      }
    case "wait": {
      const payload = imports.own(generatedTypeNames.eventPayload(decl.event))
      const timed = decl.timeoutMs !== null
      return {
        name: step.name,
        parameters: [
          {
            name: "options",
            type: typeReference(imports.akter(timed ? "TimedWaitOptions" : "WaitOptions"), [
              payload,
            ]),
            optional: true,
          },
        ],
        returns: effectType(
          imports,
          timed ? typeReference(`${imports.effect("Option")}.Option`, [payload]) : payload,
          NEVER,
        ),
        docs: joinDocs(
          timed
            ? `Waits for event \`${decl.event}\` (one emitted after the execution started, passing \`where\`); \`Option.none()\` after the timeout (default ${formatDuration(decl.timeoutMs)}).`
            : `Waits for event \`${decl.event}\` (one emitted after the execution started, passing \`where\`), however long it takes.`,
          decl.description,
        ),
      }
    }
    case "race": {
      const value = step.output === null ? VOID : imports.own(step.output.name)
      const branch = effectType(imports, value, errorsOf(decl.errors))
      return {
        name: step.name,
        parameters: [{ name: "branches", type: readonlyArrayType(branch) }],
        returns: branch,
        docs: joinDocs(
          `Race \`${step.name}\`: the first of \`branches\` to finish wins and is recorded; the others are abandoned.`,
          decl.description,
        ),
      }
    }
    case "start": {
      const target = project.startTarget(decl)
      if (target === undefined) {
        throw new Error(
          `start step ${step.name} names ${decl.owner}.${decl.workflow}, which no manifest declares`,
        )
      }
      const input = target.workflow.input
      const inputType =
        input === null
          ? undefined
          : target.owner === owner
            ? imports.own(input.name)
            : imports.foreign(target.owner, input.name)
      return {
        name: step.name,
        parameters: [
          { name: "ownerId", type: keywordType("string") },
          ...(inputType === undefined ? [] : [{ name: "input", type: inputType }]),
        ],
        returns: effectType(imports, keywordType("string"), NEVER),
        docs: joinDocs(
          `Starts workflow \`${decl.owner}.${decl.workflow}\` for \`ownerId\`, exactly once; resolves to the started execution's id.`,
          decl.description,
        ),
      }
    }
  }
}

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
    methods: workflow.steps.map((step) => stepMethod(step, owner, project, imports)),
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
  module.typeAlias(
    generatedTypeNames.workflowDefinition(workflow.name),
    typeReference(imports.akter("WorkflowDefinition"), definition),
    `An implementation of workflow \`${workflow.name}\`: its activities and its body.`,
  )
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
