/**
 * Checks one manifest's meaning and builds its `OwnerManifest`. Runs after the format check on the
 * same plain data, and stays silent about anything malformed (the format check has reported it):
 * it only reports what the format cannot express, such as unresolved refs, undeclared events and
 * errors, key fields, marker ranges and name collisions.
 */
import { canonicalJson } from "../../runtime/model/canonicalJson.js"
import { canonicalType } from "../../runtime/model/canonicalType.js"
import {
  MANIFEST_FORMAT,
  type EventDecl,
  type MarkerRange,
  type OwnerManifest,
  type StepDecl,
  type StepKind,
  type WorkflowDecl,
} from "../../runtime/model/manifest.js"
import { stepKindModelOf } from "../../runtime/model/stepKinds/stepKinds.js"
import {
  cronProblem,
  DEFAULT_CATCH_UP,
  DEFAULT_OVERLAP,
  DEFAULT_TIME_ZONE,
  MIN_INTERVAL_MS,
  timeZoneProblem,
  type CatchUpPolicy,
  type OverlapPolicy,
  type ScheduleDecl,
} from "../../runtime/model/schedule.js"
import { schemaOf } from "../../runtime/model/schemaOf.js"
import { checkOwnerId } from "../../runtime/model/ownerIds.js"
import type { TypeNode } from "../../runtime/model/typeModel.js"
import type { StartTarget, StepCheckContext } from "../stepKinds/stepKindCodegen.js"
import { stepKindCodegens } from "../stepKinds/stepKinds.js"
import { checkConcurrency } from "./concurrencyChecks.js"
import { didYouMean } from "./didYouMean.js"
import { checkEarlierShapes, splitEarlierShapes, type EarlierEntry } from "./earlierShapeChecks.js"
import { DURATION_FORMAT, DURATION_HINT, parseDuration } from "./durations.js"
import { manifestFormatSchema } from "./formatSchema.js"
import { reportFormatIssues } from "./formatIssues.js"
import type { ManifestReport } from "./manifestReport.js"
import {
  generatedTypeNames,
  generatedValueNames,
  isReservedWord,
  JSON_TYPE_NAME,
  OWNER_NAME,
  RESERVED_STEP_NAMES,
  RESERVED_WORKFLOW_NAMES,
  ROOT_REGISTRATIONS,
  WORKFLOW_NAME,
} from "./names.js"
import { checkNamedTypes, resolveNamedType } from "./namedTypeChecks.js"
import { setEntry, type PlainValue } from "./plainValue.js"
import type { ManifestPath, Position } from "./sourcePositions.js"
import { parseTypeExpression, type RefUse, type TypeContext } from "./typeExpressions.js"
import { usesJson } from "./typeParts.js"

type Mapping = { readonly [key: string]: PlainValue }

/** A name the generated code declares for an owner, and the manifest entry it comes from. */
interface Candidate {
  readonly path: ManifestPath
  readonly name: string
  readonly what: string
  /** Written in the manifest as it is generated (a named type), rather than derived from a name. */
  readonly written?: boolean
  /** The strict schema generated beside a type. */
  readonly schema?: boolean
}

const asMapping = (value: PlainValue | undefined): Mapping | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined

const stringAt = (value: Mapping | undefined, key: string): string | undefined => {
  const found = value?.[key]
  return typeof found === "string" ? found : undefined
}

export interface CheckedManifest {
  /** The model, when this manifest has no error of its own. */
  readonly manifest: OwnerManifest | undefined
  /** The owner name as written, if it is a valid one (for cross-manifest checks). */
  readonly owner: string | undefined
  readonly workflows: ReadonlySet<string>
  readonly startTargets: readonly StartTarget[]
}

/**
 * Validates the plain data of one manifest file and normalizes it.
 *
 * @example
 * const checked = checkManifest(value, report)
 * if (!report.hasErrors) use(checked.manifest!)
 */
export const checkManifest = (value: PlainValue, report: ManifestReport): CheckedManifest => {
  const format = manifestFormatSchema.safeParse(value, { reportInput: true })
  if (!format.success) reportFormatIssues(format.error.issues, value, report)
  const split = splitEarlierShapes(value)
  return new ManifestChecker(split.value, report, split.entries).check()
}

class ManifestChecker {
  private readonly root: Mapping | undefined
  private readonly refUses: RefUse[] = []
  private readonly types: Record<string, TypeNode> = {}
  private readonly typeContext: TypeContext
  private readonly startTargets: StartTarget[] = []
  private owner: string | undefined

  constructor(
    value: PlainValue,
    private readonly report: ManifestReport,
    private readonly earlierEntries: readonly EarlierEntry[] = [],
  ) {
    this.root = asMapping(value)
    const declared = new Set(Object.keys(asMapping(this.root?.["types"]) ?? {}))
    this.typeContext = { report, namedTypes: declared, refUses: this.refUses }
  }

  check(): CheckedManifest {
    const root = this.root
    const owner = stringAt(root, "owner")
    this.owner = owner !== undefined && OWNER_NAME.test(owner) ? owner : undefined
    if (this.owner !== undefined) this.checkOwnerName(this.owner)
    const localDepths = new Map<string, number>()
    for (const [name, body] of Object.entries(asMapping(root?.["types"]) ?? {})) {
      const parsed = parseTypeExpression(body, ["types", name], this.typeContext)
      if (parsed === undefined) continue
      setEntry(this.types, name, parsed.type)
      localDepths.set(name, parsed.depth)
    }
    const events = this.checkEvents()
    const earlier = checkEarlierShapes(this.earlierEntries, this.typeContext, this.report)
    const workflows: Record<string, WorkflowDecl> = {}
    const workflowNames = new Set<string>()
    const workflowsValue = asMapping(root?.["workflows"])
    for (const [name, body] of Object.entries(workflowsValue ?? {})) {
      if (WORKFLOW_NAME.test(name)) workflowNames.add(name)
      const workflow = this.checkWorkflow(name, asMapping(body))
      if (workflow !== undefined) setEntry(workflows, name, workflow)
    }
    // Cycles and resolved depth are decided over all refs at once, before anything resolves one.
    const sound = checkNamedTypes(localDepths, this.refUses, this.report)
    if (sound && !this.report.hasErrors) {
      this.checkErrorConflicts(workflows)
      this.checkNameCollisions(events ?? {}, workflows)
    }
    const schedules = this.checkSchedules(workflows, workflowNames)
    const result = { owner: this.owner, workflows: workflowNames, startTargets: this.startTargets }
    if (this.report.hasErrors || this.owner === undefined || events === undefined) {
      return { ...result, manifest: undefined }
    }
    const description = stringAt(root, "description")
    const manifest: OwnerManifest = {
      format: MANIFEST_FORMAT,
      owner: this.owner,
      ...(description === undefined ? {} : { description }),
      types: this.types,
      events,
      workflows,
      ...(Object.keys(schedules).length === 0 ? {} : { schedules }),
      ...(earlier === undefined || Object.keys(earlier).length === 0 ? {} : { earlier }),
    }
    return { ...result, manifest }
  }

  private parseType(value: PlainValue | undefined, path: ManifestPath): TypeNode | undefined {
    return parseTypeExpression(value, path, this.typeContext)?.type
  }

  /** Reports `not-an-object` unless `type` is an object type, directly or through named types. */
  private requireObject(type: TypeNode, path: ManifestPath, what: string): void {
    const resolved = resolveNamedType(type, this.types)
    if (resolved === undefined || resolved.kind === "object") return // unresolvable: reported elsewhere
    this.report.error(
      path,
      "not-an-object",
      `${what} must be an object type, found ${kindText(resolved)}`,
      {
        hint: "wrap it in a field, e.g. { value: T }",
      },
    )
  }

  private checkEvents(): Record<string, EventDecl> | undefined {
    const events: Record<string, EventDecl> = {}
    let complete = true
    for (const [name, body] of Object.entries(asMapping(this.root?.["events"]) ?? {})) {
      const path = ["events", name]
      const payload = this.parseType(body, path)
      if (payload === undefined) {
        complete = false
        continue
      }
      this.requireObject(payload, path, `the payload of event "${name}"`)
      const description = payload.description
      setEntry(events, name, { payload, ...(description === undefined ? {} : { description }) })
    }
    return complete ? events : undefined
  }

  /** The owner name becomes the generated owner object's name (`export const Order`). */
  private checkOwnerName(owner: string): void {
    if (isReservedWord(owner) || owner === ROOT_REGISTRATIONS) {
      this.report.error(
        ["owner"],
        "reserved-name",
        isReservedWord(owner)
          ? `"${owner}" cannot name an owner: it is a reserved word in TypeScript, so the generated owner object could not be declared`
          : `"${owner}" cannot name an owner: the generated index already exports \`${ROOT_REGISTRATIONS}\`, the list of every owner's registration`,
        { hint: `rename the owner, e.g. "${owner[0]!.toUpperCase()}${owner.slice(1)}Owner"` },
      )
    }
  }

  private checkWorkflow(name: string, body: Mapping | undefined): WorkflowDecl | undefined {
    const path = ["workflows", name]
    const holder = RESERVED_WORKFLOW_NAMES.get(name)
    if (holder !== undefined) {
      this.report.error(
        path,
        "reserved-name",
        `"${name}" cannot name a workflow: ${holder} has a member of that name`,
        {
          at: "key",
          hint: `rename the workflow; ${[...RESERVED_WORKFLOW_NAMES.keys()].join(", ")} are reserved`,
        },
      )
    } else if (isReservedWord(name)) {
      this.report.error(
        path,
        "reserved-name",
        `"${name}" cannot name a workflow: it is a reserved word in TypeScript, so its generated builder could not be declared`,
        { at: "key", hint: `rename the workflow, e.g. "${name}Workflow"` },
      )
    }
    if (body === undefined) return undefined
    let complete = true
    /** The type under `key`, null when absent; `objectWhat` names it when it must be an object. */
    const optionalType = (key: string, objectWhat?: string): TypeNode | null => {
      if (!Object.hasOwn(body, key)) return null
      const type = this.parseType(body[key], [...path, key])
      if (type === undefined) {
        complete = false
        return null
      }
      if (objectWhat !== undefined) this.requireObject(type, [...path, key], objectWhat)
      return type
    }
    const input = optionalType("input", `the input of workflow "${name}"`)
    const output = optionalType("output")

    const errors: Record<string, TypeNode> = {}
    const errorsValue = asMapping(body["errors"])
    for (const [errorName, payloadValue] of Object.entries(errorsValue ?? {})) {
      const payload = this.parseType(payloadValue, [...path, "errors", errorName])
      if (payload === undefined) {
        complete = false
        continue
      }
      this.requireObject(
        payload,
        [...path, "errors", errorName],
        `the payload of error "${errorName}"`,
      )
      setEntry(errors, errorName, payload)
    }

    const key = stringAt(body, "key") ?? null
    if (key !== null && complete) this.checkKeyField(key, input, [...path, "key"])
    const concurrency = complete
      ? checkConcurrency(body["concurrency"], input, this.types, this.report, [
          ...path,
          "concurrency",
        ])
      : undefined

    const versions: Record<string, MarkerRange> = {}
    for (const [marker, rangeValue] of Object.entries(asMapping(body["versions"]) ?? {})) {
      const range = asMapping(rangeValue)
      const min = range?.["min"]
      const current = range?.["current"]
      if (!Number.isInteger(min) || !Number.isInteger(current)) continue // format reported it
      const low = min as number
      const high = current as number
      if (low >= 0 && high >= 1 && low > high) {
        this.report.error(
          [...path, "versions", marker, "min"],
          "invalid-marker-range",
          `marker "${marker}" has min ${low} above current ${high}`,
          {
            hint: "a marker's range needs 0 ≤ min ≤ current; raise current or lower min",
          },
        )
      }
      versions[marker] = { min: low, current: high }
    }

    const deadlineMs = this.duration(body, "deadline", path)
    if (deadlineMs === undefined) complete = false

    const steps: Record<string, StepDecl> = {}
    const stepsValue = asMapping(body["steps"])
    const declaredErrors =
      errorsValue === undefined ? new Set<string>() : new Set(Object.keys(errorsValue))
    for (const [stepName, stepValue] of Object.entries(stepsValue ?? {})) {
      const step = this.checkStep(name, stepName, asMapping(stepValue), declaredErrors)
      if (step === undefined) complete = false
      else setEntry(steps, stepName, step)
    }
    if (!complete) return undefined
    const description = stringAt(body, "description")
    return {
      ...(description === undefined ? {} : { description }),
      input,
      output,
      errors,
      key,
      ...(concurrency === undefined ? {} : { concurrency }),
      versions,
      steps,
      ...(deadlineMs === null || deadlineMs === undefined ? {} : { deadlineMs }),
    }
  }

  private checkKeyField(key: string, input: TypeNode | null, path: ManifestPath): void {
    const hint = "key names a required string field of the workflow's input"
    const object = input === null ? undefined : resolveNamedType(input, this.types)
    if (input === null) {
      this.report.error(
        path,
        "invalid-key-field",
        `key "${key}" names an input field, but the workflow has no input`,
        { hint },
      )
      return
    }
    if (object?.kind !== "object") return // not-an-object reported
    const field = object.fields[key]
    if (field === undefined) {
      this.report.error(path, "invalid-key-field", `key "${key}" is not a field of the input`, {
        hint: didYouMean(key, Object.keys(object.fields)) ?? hint,
      })
      return
    }
    if (field.optional) {
      this.report.error(
        path,
        "invalid-key-field",
        `key "${key}" names an optional field; every start needs a key`,
        {
          hint: `make the field required: write "${key}:" instead of "${key}?:"`,
        },
      )
    }
    const type = resolveNamedType(field.type, this.types)
    if (type !== undefined && type.kind !== "string") {
      this.report.error(
        path,
        "invalid-key-field",
        `key "${key}" names a field of type ${kindText(type)}; a key is a string`,
        { hint },
      )
    }
  }

  private duration(step: Mapping, key: string, path: ManifestPath): number | null | undefined {
    const text = step[key]
    if (typeof text !== "string") return text === undefined ? null : undefined
    if (!DURATION_FORMAT.test(text)) return undefined // format reported it
    const parsed = parseDuration(text)
    if ("ms" in parsed) return parsed.ms
    this.report.error([...path, key], "invalid-duration", parsed.problem, { hint: DURATION_HINT })
    return undefined
  }

  private checkStep(
    workflow: string,
    name: string,
    step: Mapping | undefined,
    declaredErrors: ReadonlySet<string>,
  ): StepDecl | undefined {
    const path = ["workflows", workflow, "steps", name]
    if (RESERVED_STEP_NAMES.includes(name)) {
      this.report.error(
        path,
        "reserved-name",
        `"${name}" cannot name a step: the workflow body's context has a member of that name`,
        {
          at: "key",
          hint: `rename the step; ${RESERVED_STEP_NAMES.join(", ")} are reserved`,
        },
      )
    }
    if (step === undefined) return undefined
    const description = stringAt(step, "description")
    const described = description === undefined ? {} : { description }
    let complete = true
    const type = (key: string, object: boolean): TypeNode | null => {
      if (!Object.hasOwn(step, key)) return null
      const parsed = this.parseType(step[key], [...path, key])
      if (parsed === undefined) {
        complete = false
        return null
      }
      if (object) this.requireObject(parsed, [...path, key], `the input of step "${name}"`)
      return parsed
    }
    const errorList = (): string[] => {
      const list = step["errors"]
      if (!Array.isArray(list)) return []
      const names: string[] = []
      list.forEach((item, index) => {
        if (typeof item !== "string") return
        if (names.includes(item)) {
          this.report.error(
            [...path, "errors", index],
            "duplicate-key",
            `error "${item}" is listed twice`,
            { hint: "list each error once" },
          )
        } else if (!declaredErrors.has(item)) {
          this.report.error(
            [...path, "errors", index],
            "undeclared-error",
            `error "${item}" is not declared by workflow "${workflow}"`,
            {
              hint:
                didYouMean(item, declaredErrors) ?? `declare it under workflows.${workflow}.errors`,
            },
          )
        }
        names.push(item)
      })
      return names
    }
    const kind = step["kind"]
    if (typeof kind !== "string" || !Object.hasOwn(stepKindCodegens, kind)) return undefined
    const context: StepCheckContext = {
      report: this.report,
      workflow,
      name,
      path,
      described,
      // Declared names, not parsed payloads: a broken payload must not hide a misspelt event.
      declaredEvents: Object.keys(asMapping(this.root?.["events"]) ?? {}),
      owner: this.owner,
      type,
      errorList,
      optionalDuration: (key) => {
        const ms = this.duration(step, key, path)
        if (ms === undefined) complete = false
        return ms ?? null
      },
      duration: (within, key, at) => this.duration(within, key, at),
      startTarget: (target) => this.startTargets.push(target),
    }
    const decl = stepKindCodegens[kind as StepKind].check(step, context)
    return complete ? decl : undefined
  }

  /**
   * Each schedule names a workflow of this manifest that takes its key from the start's command id
   * (a tick's key is derived from the schedule and the tick), a readable cron expression in a known
   * time zone or an interval of at least a second (exactly one of them), and an input of the
   * workflow's input type. Reports what is wrong; returns the schedules that are right.
   */
  private checkSchedules(
    workflows: Readonly<Record<string, WorkflowDecl>>,
    workflowNames: ReadonlySet<string>,
  ): Record<string, ScheduleDecl> {
    const schedules: Record<string, ScheduleDecl> = {}
    for (const [name, value] of Object.entries(asMapping(this.root?.["schedules"]) ?? {})) {
      const body = asMapping(value)
      if (body === undefined) continue // format reported it
      const path = ["schedules", name]
      let complete = true
      const fail = (key: string, rule: string, message: string, hint: string) => {
        this.report.error([...path, key], rule, message, { hint })
        complete = false
      }
      const workflowName = stringAt(body, "workflow")
      const workflow = workflowName === undefined ? undefined : workflows[workflowName]
      if (workflowName !== undefined && !workflowNames.has(workflowName)) {
        fail(
          "workflow",
          "unknown-workflow",
          `schedule "${name}" starts workflow "${workflowName}", which this manifest does not declare`,
          didYouMean(workflowName, workflowNames) ??
            "a schedule starts a workflow of its own manifest",
        )
      } else if (workflow !== undefined && workflow.key !== null) {
        fail(
          "workflow",
          "schedule-keyed-workflow",
          `workflow "${workflowName}" takes its execution key from input field "${workflow.key}", so every tick of schedule "${name}" would name the same execution`,
          `remove key: from workflow "${workflowName}" (a tick's key is derived from the schedule and the tick time), or schedule a workflow without one`,
        )
      }
      const cron = stringAt(body, "cron")
      const every = stringAt(body, "every")
      const timeZone = stringAt(body, "timeZone")
      const hasCron = Object.hasOwn(body, "cron")
      if (hasCron === Object.hasOwn(body, "every")) {
        this.report.error(
          hasCron ? [...path, "every"] : path,
          "schedule-timing",
          hasCron
            ? `schedule "${name}" declares both cron: and every:`
            : `schedule "${name}" declares neither cron: nor every:`,
          {
            at: "key",
            hint: "write exactly one: cron: '30 2 * * *' (with timeZone:) or every: 15m",
          },
        )
        complete = false
      }
      if (timeZone !== undefined && cron === undefined && every !== undefined) {
        fail(
          "timeZone",
          "schedule-timing",
          `timeZone applies to a cron expression; schedule "${name}" runs every ${every}`,
          "remove timeZone:, or use cron:",
        )
      }
      const zoneProblem = timeZone === undefined ? undefined : timeZoneProblem(timeZone)
      if (zoneProblem !== undefined) {
        fail(
          "timeZone",
          "invalid-time-zone",
          zoneProblem,
          "write an IANA time zone name such as UTC, Europe/Berlin or America/New_York",
        )
      }
      if (cron !== undefined && zoneProblem === undefined) {
        const problem = cronProblem(cron, timeZone ?? DEFAULT_TIME_ZONE)
        if (problem !== undefined) {
          fail(
            "cron",
            "invalid-cron",
            `"${cron}" is not a cron expression: ${problem.replace(/^CronPattern: /, "")}`,
            "write five fields: minute hour day-of-month month day-of-week, e.g. '30 2 * * *' (every day at 02:30)",
          )
        }
      }
      let everyMs: number | null = null
      if (every !== undefined) {
        const ms = this.duration(body, "every", path)
        if (ms === undefined || ms === null) complete = false
        else if (ms < MIN_INTERVAL_MS) {
          fail(
            "every",
            "schedule-timing",
            `schedule "${name}" ticks every ${every}; the shortest interval is 1s`,
            "write every: 1s or longer",
          )
        } else everyMs = ms
      }
      const ownerId = stringAt(body, "ownerId")
      const ownerProblem = ownerId === undefined ? undefined : checkOwnerId(ownerId)
      if (ownerProblem !== undefined) {
        fail(
          "ownerId",
          "invalid-owner-id",
          `ownerId ${ownerProblem.issues[0]?.message ?? "is not an owner id"}`,
          "write the id of the owner each tick's execution belongs to",
        )
      }
      const input = Object.hasOwn(body, "input") ? body["input"] : undefined
      if (workflow !== undefined) {
        if (workflow.input === null && input !== undefined) {
          fail(
            "input",
            "schedule-input",
            `workflow "${workflowName}" takes no input, but schedule "${name}" gives one`,
            "remove input:",
          )
        } else if (workflow.input !== null) {
          const schema = schemaOf(canonicalType(workflow.input, this.types), "strict")
          const parsed = schema.safeParse(input)
          if (!parsed.success) {
            complete = false
            for (const issue of parsed.error.issues) {
              const at = issue.path.map((segment) =>
                typeof segment === "number" ? segment : String(segment),
              )
              this.report.error(
                [...path, "input", ...at],
                "schedule-input",
                input === undefined
                  ? `schedule "${name}" gives no input; workflow "${workflowName}" takes one`
                  : `the input of schedule "${name}"${at.length === 0 ? "" : ` at ${at.join(".")}`} does not fit the input of workflow "${workflowName}": ${issue.message}`,
                { hint: `write an input: of workflow "${workflowName}"'s input type` },
              )
            }
          }
        }
      }
      if (!complete || workflow === undefined || ownerId === undefined) continue
      if (cron === undefined && everyMs === null) continue
      const description = stringAt(body, "description")
      setEntry(schedules, name, {
        ...(description === undefined ? {} : { description }),
        workflow: workflowName!,
        cron: cron ?? null,
        timeZone: cron === undefined ? DEFAULT_TIME_ZONE : (timeZone ?? DEFAULT_TIME_ZONE),
        everyMs,
        ownerId,
        input: input ?? null,
        overlap: (stringAt(body, "overlap") ?? DEFAULT_OVERLAP) as OverlapPolicy,
        catchUp: (stringAt(body, "catchUp") ?? DEFAULT_CATCH_UP) as CatchUpPolicy,
      })
    }
    return schedules
  }

  /** One owner has one class per error name, so equal names must mean equal payloads. */
  private checkErrorConflicts(workflows: Readonly<Record<string, WorkflowDecl>>): void {
    const first = new Map<string, { workflow: string; form: string }>()
    for (const declaration of this.inDocumentOrder(
      Object.entries(workflows).flatMap(([workflow, decl]) =>
        Object.keys(decl.errors).map((error) => ({
          path: ["workflows", workflow, "errors", error],
          workflow,
          error,
          payload: decl.errors[error]!,
        })),
      ),
    )) {
      const form = canonicalJson(canonicalType(declaration.payload, this.types))
      const seen = first.get(declaration.error)
      if (seen === undefined) first.set(declaration.error, { workflow: declaration.workflow, form })
      else if (seen.form !== form) {
        this.report.error(
          declaration.path,
          "error-conflict",
          `error "${declaration.error}" is declared by workflow "${seen.workflow}" with a different payload`,
          {
            at: "key",
            hint: "an owner has one error class per name: give both the same payload, or rename one",
          },
        )
      }
    }
  }

  /**
   * Every name generated for this owner must be declared once: the types of `generatedTypeNames`,
   * their schemas, the owner object and the `Json` type. A name the manifest writes is reported,
   * not the generated one it meets, since that is the one to rename.
   */
  private checkNameCollisions(
    events: Readonly<Record<string, EventDecl>>,
    workflows: Readonly<Record<string, WorkflowDecl>>,
  ): void {
    const names = generatedTypeNames
    const candidates: Candidate[] = []
    /** A type with a strict schema beside it: both names are generated. */
    const typed = (path: ManifestPath, name: string, what: string, written = false) => {
      candidates.push({ path, name, what, written })
      candidates.push({
        path,
        name: generatedValueNames.schema(name),
        what: `the schema of ${what}`,
        schema: true,
      })
    }
    for (const type of Object.keys(this.types)) {
      typed(["types", type], names.namedType(type), `type "${type}"`, true)
    }
    for (const event of Object.keys(asMapping(this.root?.["events"]) ?? {}))
      typed(["events", event], names.eventPayload(event), `the payload type of event "${event}"`)
    const errorsSeen = new Set<string>()
    for (const [workflow, decl] of Object.entries(workflows)) {
      const path = ["workflows", workflow]
      if (decl.input !== null)
        typed(path, names.workflowInput(workflow), `the input type of workflow "${workflow}"`)
      if (decl.output !== null)
        typed(path, names.workflowOutput(workflow), `the output type of workflow "${workflow}"`)
      for (const [name, what] of [
        [names.workflowError(workflow), "error union"],
        [names.workflowSteps(workflow), "steps interface"],
        [names.workflowActivities(workflow), "activities interface"],
        [names.workflowDefinition(workflow), "definition type"],
      ] as const)
        candidates.push({ path, name, what: `the ${what} of workflow "${workflow}"` })
      for (const error of Object.keys(decl.errors)) {
        if (errorsSeen.has(error)) continue
        errorsSeen.add(error)
        candidates.push({
          path: [...path, "errors", error],
          name: names.errorClass(error),
          what: `the class of error "${error}"`,
        })
      }
      for (const [step, stepDecl] of Object.entries(decl.steps)) {
        const stepPath = [...path, "steps", step]
        const declared = stepKindModelOf(stepDecl.kind).declaredTypes(stepDecl)
        if (declared.input !== null)
          typed(
            stepPath,
            names.stepInput(workflow, step),
            `the input type of step "${step}" of "${workflow}"`,
          )
        if (declared.output !== null)
          typed(
            stepPath,
            names.stepOutput(workflow, step),
            `the output type of step "${step}" of "${workflow}"`,
          )
      }
    }
    const owner = this.owner!
    candidates.push({
      path: ["owner"],
      name: generatedValueNames.ownerObject(owner),
      what: `the owner object "${owner}"`,
    })
    candidates.push({
      path: ["owner"],
      name: names.ownerEvents(owner),
      what: `the events type of owner "${owner}"`,
    })
    candidates.push({
      path: ["owner"],
      name: names.ownerClient(owner),
      what: `the client of owner "${owner}"`,
    })
    candidates.push({
      path: ["owner"],
      name: names.ownerEffectClient(owner),
      what: `the Effect client of owner "${owner}"`,
    })
    const taken = new Map<string, { what: string; at: Position | undefined; schema: boolean }>()
    if (this.usesJson(events, workflows)) {
      taken.set(JSON_TYPE_NAME, {
        what: "the generated type of `json` values",
        at: undefined,
        schema: false,
      })
    }
    // Derived names first, so that a collision with a name the manifest writes as it is (a named
    // type) is reported there: that is the name to change.
    const ordered = [
      ...this.inDocumentOrder(candidates.filter((c) => c.written !== true)),
      ...this.inDocumentOrder(candidates.filter((c) => c.written === true)),
    ]
    for (const candidate of ordered) {
      const earlier = taken.get(candidate.name)
      const at = this.report.position(candidate.path, "key")
      if (earlier === undefined) {
        taken.set(candidate.name, { what: candidate.what, at, schema: candidate.schema === true })
      } else if (earlier.schema && candidate.schema === true) {
        // Two schemas meet only where the types they validate do, which is reported.
        continue
      } else {
        const where = earlier.at === undefined ? "" : ` (line ${earlier.at.line})`
        const collides =
          candidate.written === true
            ? `${candidate.what} has the name of ${earlier.what}${where}`
            : `${candidate.what} would be generated as "${candidate.name}", which is already ${earlier.what}${where}`
        this.report.error(candidate.path, "name-collision", collides, {
          at: "key",
          hint: "rename one of them; generated names are the PascalCase of manifest names",
        })
      }
    }
  }

  /** Whether some type of the owner uses `json`, so its types.ts declares the `Json` type. */
  private usesJson(
    events: Readonly<Record<string, EventDecl>>,
    workflows: Readonly<Record<string, WorkflowDecl>>,
  ): boolean {
    const types: (TypeNode | null)[] = [
      ...Object.values(this.types),
      ...Object.values(events).map((event) => event.payload),
    ]
    for (const workflow of Object.values(workflows)) {
      types.push(workflow.input, workflow.output, ...Object.values(workflow.errors))
      for (const step of Object.values(workflow.steps)) {
        const declared = stepKindModelOf(step.kind).declaredTypes(step)
        types.push(declared.input, declared.output)
      }
    }
    return types.some((type) => type !== null && usesJson(type))
  }

  private inDocumentOrder<T extends { path: ManifestPath }>(items: readonly T[]): T[] {
    const keyed = items.map((item, index) => ({
      item,
      index,
      at: this.report.position(item.path, "key"),
    }))
    keyed.sort((a, b) => a.at.line - b.at.line || a.at.column - b.at.column || a.index - b.index)
    return keyed.map(({ item }) => item)
  }
}

const kindText = (type: TypeNode): string => {
  switch (type.kind) {
    case "array":
      return "a list type"
    case "enum":
      return "an enum"
    case "oneOf":
      return "a oneOf union"
    case "record":
      return "a record type"
    default:
      return type.kind
  }
}
