/**
 * The `start` step kind in code generation: its manifest entry (a workflow, optionally of another
 * owner), the target recorded for the check across manifests, the target's input schema and
 * registration passed to the engine, and `wf.<start>(ownerId, input?)`.
 */
import { z } from "zod"
import type { StartStep } from "../../runtime/model/stepKinds/start.js"
import type { StepPlan } from "../emit/ownerPlan.js"
import type { ProjectPlan } from "../emit/projectPlan.js"
import { arrowFunction, keywordType, type ValueSyntax } from "../emit/typeScriptSyntax.js"
import { OWNER_NAME } from "../manifest/names.js"
import { effectType, joinDocs, NEVER } from "./methodParts.js"
import type { StepKindCodegen } from "./stepKindCodegen.js"

/** The owner and workflow a start step starts; every manifest has been checked to declare it. */
const targetOf = (step: StepPlan<StartStep>, project: ProjectPlan) => {
  const target = project.startTarget(step.decl)
  if (target === undefined) {
    throw new Error(
      `start step ${step.name} names ${step.decl.owner}.${step.decl.workflow}, which no manifest declares`,
    )
  }
  return target
}

const targetText = (step: {
  readonly target?: { readonly owner: string; readonly workflow: string }
}) => (step.target === undefined ? "" : `${step.target.owner}.${step.target.workflow}`)

export const startCodegen: StepKindCodegen<StartStep> = {
  kind: "start",
  format: ({ description, kind, name }) =>
    z
      .strictObject({
        kind: kind("start"),
        description: description.optional(),
        workflow: z.string().describe("The workflow to start."),
        owner: name(
          OWNER_NAME,
          "an owner name",
          "Owner type of the started workflow (default: this owner).",
        ).optional(),
      })
      .describe("Starts another workflow exactly once."),
  check: (step, context) => {
    const target = typeof step["workflow"] === "string" ? step["workflow"] : undefined
    const owner = (typeof step["owner"] === "string" ? step["owner"] : undefined) ?? context.owner
    if (target === undefined || owner === undefined) return undefined
    context.startTarget({ path: [...context.path, "workflow"], owner, workflow: target })
    return { kind: "start", ...context.described, owner, workflow: target }
  },
  settings: (step, { project, owner, imports, ownRegistration }) => {
    const target = targetOf(step, project)
    const own = target.owner === owner
    const input = target.workflow.input
    const settings: (readonly [string, ValueSyntax])[] = []
    if (input !== null) {
      settings.push([
        "input",
        own ? imports.own(input.schema) : imports.foreign(target.owner, input.schema),
      ])
    }
    // a thunk: owners may start each other, and a module cycle is fine when nothing is read at load
    settings.push([
      "target",
      arrowFunction([], undefined, own ? ownRegistration : imports.registrationOf(target.owner)),
    ])
    return settings
  },
  method: (step, { project, owner, imports }) => {
    const { decl } = step
    const target = targetOf(step, project)
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
  },
  describe: (step) => (step.target !== undefined ? `start of ${targetText(step)}` : "start"),
  changes: (before, after, diff) =>
    targetText(before) === targetText(after)
      ? []
      : [diff.changed("starts", targetText(before), targetText(after), "workflow")],
}
