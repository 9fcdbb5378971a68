/**
 * The `wait` step kind in code generation: its manifest entry (an event, an optional default
 * timeout), the check that the event is declared, the timeout passed to the engine, and
 * `wf.<wait>(options?)`, which resolves to the payload, or to an `Option` of it when the wait has a
 * timeout.
 */
import { z } from "zod"
import type { WaitStep } from "../../runtime/model/stepKinds/wait.js"
import { formatDuration } from "../emit/ownerPlan.js"
import { numberValue, typeReference } from "../emit/typeScriptSyntax.js"
import { didYouMean } from "../manifest/didYouMean.js"
import { generatedTypeNames } from "../manifest/names.js"
import { effectType, joinDocs, NEVER } from "./methodParts.js"
import type { StepKindCodegen } from "./stepKindCodegen.js"

export const waitCodegen: StepKindCodegen<WaitStep> = {
  kind: "wait",
  format: ({ description, kind, duration }) =>
    z
      .strictObject({
        kind: kind("wait"),
        description: description.optional(),
        event: z.string().describe("An event declared under events:."),
        timeout: duration("Default timeout; without one the wait waits forever.").optional(),
      })
      .describe("Waits for an event of the owner."),
  check: (step, context) => {
    const event = typeof step["event"] === "string" ? step["event"] : undefined
    const declared = context.declaredEvents
    if (event !== undefined && !declared.includes(event)) {
      context.report.error(
        [...context.path, "event"],
        "unknown-event",
        `event "${event}" is not declared`,
        {
          hint: didYouMean(event, declared) ?? "declare it under events:",
        },
      )
    }
    return event === undefined
      ? undefined
      : {
          kind: "wait",
          ...context.described,
          event,
          timeoutMs: context.optionalDuration("timeout"),
        }
  },
  settings: ({ decl }) =>
    decl.timeoutMs === null ? [] : [["timeoutMs", numberValue(decl.timeoutMs)]],
  method: ({ name, decl }, { imports }) => {
    const payload = imports.own(generatedTypeNames.eventPayload(decl.event))
    const timed = decl.timeoutMs !== null
    return {
      name,
      parameters: [
        {
          name: "options",
          type: typeReference(imports.akter(timed ? "TimedWaitOptions" : "WaitOptions"), [payload]),
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
  },
  describe: (step) => (step.event !== undefined ? `wait for ${step.event}` : "wait"),
  changes: (before, after, diff) =>
    before.event === after.event
      ? []
      : [diff.changed("waits-for", before.event ?? "", after.event ?? "", "event")],
}
