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
  type RetryPolicy,
  type StepDecl,
  type WorkflowDecl,
} from "../../runtime/model/manifest.js"
import type { TypeNode } from "../../runtime/model/typeModel.js"
import { didYouMean } from "./didYouMean.js"
import { DURATION_FORMAT, DURATION_HINT, parseDuration } from "./durations.js"
import { manifestFormatSchema } from "./formatSchema.js"
import { reportFormatIssues } from "./formatIssues.js"
import type { ManifestReport } from "./manifestReport.js"
import {
  generatedTypeNames,
  OWNER_NAME,
  RESERVED_STEP_NAMES,
  RESERVED_WORKFLOW_NAMES,
  WORKFLOW_NAME,
} from "./names.js"
import { checkNamedTypes, resolveNamedType } from "./namedTypeChecks.js"
import { setEntry, type PlainValue } from "./plainValue.js"
import type { ManifestPath, Position } from "./sourcePositions.js"
import { parseTypeExpression, type RefUse, type TypeContext } from "./typeExpressions.js"

type Mapping = { readonly [key: string]: PlainValue }

const asMapping = (value: PlainValue | undefined): Mapping | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined

const stringAt = (value: Mapping | undefined, key: string): string | undefined => {
  const found = value?.[key]
  return typeof found === "string" ? found : undefined
}

/** A `start` step, to be checked against the whole set of manifests. */
export interface StartTarget {
  readonly path: ManifestPath
  readonly owner: string
  readonly workflow: string
}

export interface CheckedManifest {
  /** The model, when this manifest has no error of its own. */
  readonly manifest: OwnerManifest | undefined
  /** The owner name as written, if it is a valid one (for cross-manifest checks). */
  readonly owner: string | undefined
  readonly workflows: ReadonlySet<string>
  readonly startTargets: readonly StartTarget[]
}

const DEFAULT_RETRY_INITIAL_MS = 1_000
const DEFAULT_RETRY_FACTOR = 2
const DEFAULT_RETRY_MAX_MS = 60_000

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
  return new ManifestChecker(value, report).check()
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
  ) {
    this.root = asMapping(value)
    const declared = new Set(Object.keys(asMapping(this.root?.["types"]) ?? {}))
    this.typeContext = { report, namedTypes: declared, refUses: this.refUses }
  }

  check(): CheckedManifest {
    const root = this.root
    const owner = stringAt(root, "owner")
    this.owner = owner !== undefined && OWNER_NAME.test(owner) ? owner : undefined
    const localDepths = new Map<string, number>()
    for (const [name, body] of Object.entries(asMapping(root?.["types"]) ?? {})) {
      const parsed = parseTypeExpression(body, ["types", name], this.typeContext)
      if (parsed === undefined) continue
      setEntry(this.types, name, parsed.type)
      localDepths.set(name, parsed.depth)
    }
    const events = this.checkEvents()
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
      this.checkNameCollisions(workflows)
    }
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

  private checkWorkflow(name: string, body: Mapping | undefined): WorkflowDecl | undefined {
    const path = ["workflows", name]
    if (RESERVED_WORKFLOW_NAMES.includes(name)) {
      this.report.error(
        path,
        "reserved-name",
        `"${name}" cannot name a workflow: the generated owner object has a member of that name`,
        {
          at: "key",
          hint: `rename the workflow; ${RESERVED_WORKFLOW_NAMES.join(", ")} are reserved`,
        },
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
      versions,
      steps,
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
    const timeoutMs = (): number | null => {
      const ms = this.duration(step, "timeout", path)
      if (ms === undefined) complete = false
      return ms ?? null
    }
    let decl: StepDecl | undefined
    switch (step["kind"]) {
      case "activity":
        decl = {
          kind: "activity",
          ...described,
          input: type("input", true),
          output: type("output", false),
          errors: errorList(),
          retry: this.retryPolicy(asMapping(step["retry"]), [...path, "retry"]),
          timeoutMs: timeoutMs(),
        }
        break
      case "sleep": {
        const ms = this.duration(step, "duration", path)
        if (ms === undefined) complete = false
        decl = { kind: "sleep", ...described, durationMs: ms ?? null }
        break
      }
      case "wait": {
        const event = stringAt(step, "event")
        // Declared names, not parsed payloads: a broken payload must not hide a misspelt event.
        const declared = Object.keys(asMapping(this.root?.["events"]) ?? {})
        if (event !== undefined && !declared.includes(event)) {
          this.report.error(
            [...path, "event"],
            "unknown-event",
            `event "${event}" is not declared`,
            {
              hint: didYouMean(event, declared) ?? "declare it under events:",
            },
          )
        }
        decl =
          event === undefined
            ? undefined
            : { kind: "wait", ...described, event, timeoutMs: timeoutMs() }
        break
      }
      case "race":
        decl = { kind: "race", ...described, output: type("output", false), errors: errorList() }
        break
      case "start": {
        const target = stringAt(step, "workflow")
        const owner = stringAt(step, "owner") ?? this.owner
        if (target !== undefined && owner !== undefined) {
          this.startTargets.push({ path: [...path, "workflow"], owner, workflow: target })
          decl = { kind: "start", ...described, owner, workflow: target }
        }
        break
      }
    }
    return complete ? decl : undefined
  }

  private retryPolicy(retry: Mapping | undefined, path: ManifestPath): RetryPolicy | null {
    if (retry === undefined) return null
    const attempts = retry["attempts"]
    const factor = retry["factor"] ?? DEFAULT_RETRY_FACTOR
    const initial = this.duration(retry, "initial", path)
    const max = this.duration(retry, "max", path)
    if (
      typeof attempts !== "number" ||
      typeof factor !== "number" ||
      initial === undefined ||
      max === undefined
    )
      return null
    const initialMs = initial ?? DEFAULT_RETRY_INITIAL_MS
    const maxMs = max ?? Math.max(initialMs, DEFAULT_RETRY_MAX_MS)
    if (maxMs < initialMs) {
      this.report.error(
        [...path, "max"],
        "invalid-retry",
        `the longest delay (max ${String(retry["max"])}) is shorter than the first (initial ${String(retry["initial"] ?? "1s")})`,
        {
          hint: "make max at least initial, or leave it out",
        },
      )
    }
    return { attempts, initialMs, factor, maxMs }
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

  /** Every TypeScript name generated for this owner must be declared once. */
  private checkNameCollisions(workflows: Readonly<Record<string, WorkflowDecl>>): void {
    const names = generatedTypeNames
    const candidates: { path: ManifestPath; name: string; what: string }[] = []
    for (const type of Object.keys(this.types))
      candidates.push({
        path: ["types", type],
        name: names.namedType(type),
        what: `type "${type}"`,
      })
    for (const event of Object.keys(asMapping(this.root?.["events"]) ?? {}))
      candidates.push({
        path: ["events", event],
        name: names.eventPayload(event),
        what: `the payload type of event "${event}"`,
      })
    const errorsSeen = new Set<string>()
    for (const [workflow, decl] of Object.entries(workflows)) {
      const path = ["workflows", workflow]
      candidates.push({
        path,
        name: names.workflowInput(workflow),
        what: `the input type of workflow "${workflow}"`,
      })
      candidates.push({
        path,
        name: names.workflowOutput(workflow),
        what: `the output type of workflow "${workflow}"`,
      })
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
        if (stepDecl.kind === "activity")
          candidates.push({
            path: stepPath,
            name: names.stepInput(workflow, step),
            what: `the input type of step "${step}" of "${workflow}"`,
          })
        if (stepDecl.kind === "activity" || stepDecl.kind === "race")
          candidates.push({
            path: stepPath,
            name: names.stepOutput(workflow, step),
            what: `the output type of step "${step}" of "${workflow}"`,
          })
      }
    }
    const owner = this.owner!
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
    const taken = new Map<string, { what: string; at: Position }>()
    for (const candidate of this.inDocumentOrder(candidates)) {
      const earlier = taken.get(candidate.name)
      const at = this.report.position(candidate.path, "key")
      if (earlier === undefined) taken.set(candidate.name, { what: candidate.what, at })
      else {
        this.report.error(
          candidate.path,
          "name-collision",
          `${candidate.what} would be generated as "${candidate.name}", which is already ${earlier.what} (line ${earlier.at.line})`,
          {
            at: "key",
            hint: "rename one of them; generated names are the PascalCase of manifest names",
          },
        )
      }
    }
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
