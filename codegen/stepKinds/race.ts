/**
 * The `race` step kind in code generation: its manifest entry (the winner's output and errors) and
 * `wf.<race>(branches)`, whose branches each return what the race does. It has no settings.
 */
import { z } from "zod"
import type { RaceStep } from "../../runtime/model/stepKinds/race.js"
import { readonlyArrayType } from "../emit/typeScriptSyntax.js"
import { effectType, errorsOf, joinDocs, outputType } from "./methodParts.js"
import { declaredResultChanges } from "./resultChanges.js"
import type { StepKindCodegen } from "./stepKindCodegen.js"

export const raceCodegen: StepKindCodegen<RaceStep> = {
  kind: "race",
  format: ({ type, description, kind, errorList }) =>
    z
      .strictObject({
        kind: kind("race"),
        description: description.optional(),
        output: type.optional().describe("The recorded winner's value."),
        errors: errorList.optional(),
      })
      .describe("The first of several branches; the winner is recorded."),
  check: (_step, context) => ({
    kind: "race",
    ...context.described,
    output: context.type("output", false),
    errors: context.errorList(),
  }),
  settings: () => [],
  method: (step, { imports }) => {
    const branch = effectType(
      imports,
      outputType(step, imports),
      errorsOf(imports, step.decl.errors),
    )
    return {
      name: step.name,
      parameters: [{ name: "branches", type: readonlyArrayType(branch) }],
      returns: branch,
      docs: joinDocs(
        `Race \`${step.name}\`: the first of \`branches\` to finish wins and is recorded; the others are abandoned.`,
        step.decl.description,
      ),
    }
  },
  describe: () => "race",
  changes: declaredResultChanges,
}
