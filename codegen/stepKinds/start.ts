/**
 * The `start` step kind in code generation: its manifest entry (a workflow, optionally of another
 * owner, whether it awaits the child's result, and what the child does when the parent ends), the
 * target recorded for the check across manifests, the target's input schema and registration
 * passed to the engine, and `wf.<start>(ownerId, input?)`, which resolves to the child's id, or to
 * its output (failing with its declared errors) when the step awaits it.
 */
import { z } from "zod"
import type { StartStep } from "../../runtime/model/stepKinds/start.js"
import type { StepPlan } from "../emit/ownerPlan.js"
import type { ProjectPlan } from "../emit/projectPlan.js"
import {
  arrowFunction,
  keywordType,
  unionType,
  type ValueSyntax,
} from "../emit/typeScriptSyntax.js"
import { OWNER_NAME } from "../manifest/names.js"
import { defaultParentClose, parentCloseOf } from "../../runtime/model/stepKinds/start.js"
import { effectType, joinDocs, NEVER, VOID } from "./methodParts.js"
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
        await: z
          .boolean()
          .describe(
            "Whether the step waits for the child to finish and resolves to its result (default false: it resolves to the child's execution id).",
          )
          .optional(),
        parentClose: z
          .enum(["interrupt", "leave"])
          .describe(
            "What the child does when this workflow ends before it: interrupt (it is interrupted, once) or leave (it runs on). Default: interrupt for an awaited child, leave otherwise.",
          )
          .optional(),
      })
      .describe("Starts another workflow exactly once, and optionally awaits its result."),
  check: (step, context) => {
    const target = typeof step["workflow"] === "string" ? step["workflow"] : undefined
    const owner = (typeof step["owner"] === "string" ? step["owner"] : undefined) ?? context.owner
    if (target === undefined || owner === undefined) return undefined
    context.startTarget({ path: [...context.path, "workflow"], owner, workflow: target })
    const awaits = step["await"] === true
    const parentClose =
      step["parentClose"] === "interrupt" || step["parentClose"] === "leave"
        ? step["parentClose"]
        : defaultParentClose(awaits)
    return { kind: "start", ...context.described, owner, workflow: target, awaits, parentClose }
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
    const typeOf = (name: string) =>
      target.owner === owner ? imports.own(name) : imports.foreign(target.owner, name)
    const inputType = input === null ? undefined : typeOf(input.name)
    const policy =
      decl.parentClose === "interrupt"
        ? "If this workflow ends first, the child is interrupted."
        : "If this workflow ends first, the child runs on."
    const parameters = [
      { name: "ownerId", type: keywordType("string") },
      ...(inputType === undefined ? [] : [{ name: "input", type: inputType }]),
    ]
    if (decl.awaits) {
      const output = target.workflow.output
      return {
        name: step.name,
        parameters,
        returns: effectType(
          imports,
          output === null ? VOID : typeOf(output.name),
          unionType(Object.keys(target.workflow.decl.errors).map(typeOf)),
        ),
        docs: joinDocs(
          `Starts workflow \`${decl.owner}.${decl.workflow}\` for \`ownerId\`, exactly once, and waits for it to finish; resolves to its output, or fails with its declared error. ${policy}`,
          decl.description,
        ),
      }
    }
    return {
      name: step.name,
      parameters,
      returns: effectType(imports, keywordType("string"), NEVER),
      docs: joinDocs(
        `Starts workflow \`${decl.owner}.${decl.workflow}\` for \`ownerId\`, exactly once; resolves to the started execution's id.${decl.parentClose === "interrupt" ? ` ${policy}` : ""}`,
        decl.description,
      ),
    }
  },
  describe: (step) =>
    step.target === undefined
      ? "start"
      : `${step.awaits === true ? "awaited start" : "start"} of ${targetText(step)}`,
  changes: (before, after, diff) => [
    ...(targetText(before) === targetText(after)
      ? []
      : [diff.changed("starts", targetText(before), targetText(after), "workflow")]),
    ...((before.awaits === true) === (after.awaits === true)
      ? []
      : [
          diff.changed(
            "awaits",
            String(before.awaits === true),
            String(after.awaits === true),
            "await",
          ),
        ]),
    ...(parentCloseOf(before) === parentCloseOf(after)
      ? []
      : [diff.changed("parent-close", parentCloseOf(before), parentCloseOf(after), "parentClose")]),
  ],
}
