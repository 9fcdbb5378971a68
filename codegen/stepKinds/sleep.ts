/**
 * The `sleep` step kind in code generation: its manifest entry (an optional default duration), the
 * default passed to the engine, and `wf.<sleep>(duration?)`.
 */
import { z } from "zod"
import type { SleepStep } from "../../runtime/model/stepKinds/sleep.js"
import { formatDuration } from "../emit/ownerPlan.js"
import { numberValue, typeReference } from "../emit/typeScriptSyntax.js"
import { effectType, joinDocs, NEVER, VOID } from "./methodParts.js"
import type { StepKindCodegen } from "./stepKindCodegen.js"

export const sleepCodegen: StepKindCodegen<SleepStep> = {
  kind: "sleep",
  format: ({ description, kind, duration }) =>
    z
      .strictObject({
        kind: kind("sleep"),
        description: description.optional(),
        duration: duration("Default duration when the body passes none.").optional(),
      })
      .describe("A durable timer."),
  check: (_step, context) => ({
    kind: "sleep",
    ...context.described,
    durationMs: context.optionalDuration("duration"),
  }),
  settings: ({ decl }) =>
    decl.durationMs === null ? [] : [["durationMs", numberValue(decl.durationMs)]],
  method: ({ name, decl }, { imports }) => ({
    name,
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
  }),
  describe: () => "sleep",
  changes: () => [],
}
