/**
 * Emits an owner's registration.ts and the canonical.json beside it. The canonical manifest is data
 * (the structure of every type, spelled out wherever it is used), so it is a JSON file, laid out
 * without prettier's round trip, rather than a TypeScript literal several times the size of the
 * code around it. registration.ts imports it and adds its hashes, the strict schemas of event
 * payloads and inputs, the error classes, and each step's settings that are not replay-relevant
 * (retry policies, timeouts, default durations, the owner a start step starts). `defineOwner`
 * recomputes every hash when the module loads, so the runtime trusts nothing it did not check.
 */
import { workflowHashes } from "../../runtime/model/canonicalManifest.js"
import { hasNoEarlierShapes } from "../../runtime/model/earlierShapes.js"
import { typesFileNames } from "./typesFile.js"
import type { OwnerPlan, StepPlan, WorkflowPlan } from "./ownerPlan.js"
import type { ProjectPlan } from "./projectPlan.js"
import {
  asType,
  call,
  identifier,
  keywordType,
  member,
  nullValue,
  numberValue,
  objectLiteral,
  stringValue,
  typeReference,
  type ValueSyntax,
} from "./typeScriptSyntax.js"
import { ModuleBuilder, type JsonDocument } from "./writer.js"
import type { RegistrationImports, SettingsContext } from "../stepKinds/stepKindCodegen.js"
import { stepKindCodegenOf } from "../stepKinds/stepKinds.js"

const REGISTRATION = "registration"
const CANONICAL = "canonical"
/** The default import of canonical.json. */
const CANONICAL_FILE = "canonicalFile"
/** The earlier shapes of recorded data, beside the canonical manifest in canonical.json. */
const EARLIER = "earlier"

/** The path of an owner's canonical manifest, beside its registration.ts. */
const canonicalPath = (plan: OwnerPlan): string => `${plan.folder}/canonical.json`

/**
 * An owner's canonical.json: the header as `$comment` and the canonical manifest under `canonical`
 * (beside it, not around it: the hash is over the canonical manifest alone).
 */
export const canonicalFile = (plan: OwnerPlan): JsonDocument => ({
  path: canonicalPath(plan),
  header: { source: plan.source.file, hash: plan.hash },
  document: hasNoEarlierShapes(plan.earlier)
    ? { canonical: plan.canonical }
    : { canonical: plan.canonical, [EARLIER]: plan.earlier },
})

const stepSettings = (step: StepPlan, context: SettingsContext): ValueSyntax =>
  objectLiteral(stepKindCodegenOf(step.decl.kind).settings(step, context))

const workflowRegistration = (
  workflow: WorkflowPlan,
  owner: OwnerPlan,
  project: ProjectPlan,
  imports: RegistrationImports,
): ValueSyntax => {
  const canonical = owner.canonical.workflows[workflow.name]!
  const hashes = workflowHashes(canonical)
  const entries: (readonly [string, ValueSyntax])[] = [
    [
      "hashes",
      objectLiteral([
        ["compatibility", stringValue(hashes.compatibility)],
        ["input", stringValue(hashes.input)],
        ["output", stringValue(hashes.output)],
        [
          "steps",
          objectLiteral(
            Object.entries(hashes.steps).map(([step, hash]) => [step, stringValue(hash)]),
          ),
        ],
      ]),
    ],
    ["key", workflow.decl.key === null ? nullValue : stringValue(workflow.decl.key)],
  ]
  if (workflow.input !== null) entries.push(["input", imports.own(workflow.input.schema)])
  entries.push([
    "errors",
    objectLiteral(Object.keys(workflow.decl.errors).map((name) => [name, imports.own(name)])),
  ])
  if (workflow.decl.deadlineMs !== undefined) {
    entries.push(["deadlineMs", numberValue(workflow.decl.deadlineMs)])
  }
  entries.push([
    "steps",
    objectLiteral(
      workflow.steps.map((step) => [
        step.name,
        stepSettings(step, {
          project,
          owner,
          imports,
          ownRegistration: identifier(REGISTRATION),
        }),
      ]),
    ),
  ])
  return objectLiteral(entries)
}

export const registrationModule = (plan: OwnerPlan, project: ProjectPlan): ModuleBuilder => {
  const module = new ModuleBuilder(
    `${plan.folder}/registration.ts`,
    { source: plan.source.file, hash: plan.hash },
    [REGISTRATION, CANONICAL, CANONICAL_FILE],
  )
  module.preferImports("./types.js", typesFileNames(plan))
  const defineOwner = module.importValue("akter", "defineOwner", "akterDefineOwner")
  const canonicalOwner = module.importType("akter", "CanonicalOwner", "AkterCanonicalOwner")
  const ownerRegistration = module.importType(
    "akter",
    "OwnerRegistration",
    "AkterOwnerRegistration",
  )
  const imports: RegistrationImports = {
    own: (name) => identifier(module.importValue("./types.js", name, `${plan.owner}${name}`)),
    foreign: (owner, name) =>
      identifier(module.importValue(`../${owner.folder}/types.js`, name, `${owner.owner}${name}`)),
    registrationOf: (owner) =>
      identifier(
        module.importValue(
          `../${owner.folder}/registration.js`,
          REGISTRATION,
          `${owner.folder}Registration`,
        ),
      ),
  }
  const file = module.importJson("./canonical.json", CANONICAL_FILE)
  const canonical = asType(
    asType(member(file, CANONICAL), keywordType("unknown")),
    typeReference(canonicalOwner),
  )
  module.constant(CANONICAL, canonical, {
    exported: false,
    docs: [
      `The replay-relevant projection of ${plan.source.file}, which every hash below is computed over.`,
      "A JSON module's strings are typed as `string`, hence the cast: `defineOwner` recomputes every hash from this data and refuses it if one does not match.",
    ].join("\n\n"),
  })
  const earlier: (readonly [string, ValueSyntax])[] = hasNoEarlierShapes(plan.earlier)
    ? []
    : [
        [
          EARLIER,
          asType(
            asType(member(file, EARLIER), keywordType("unknown")),
            typeReference(
              module.importType("akter", "OwnerEarlierShapes", "AkterOwnerEarlierShapes"),
            ),
          ),
        ],
      ]
  const registration = objectLiteral([
    ["source", stringValue(plan.source.file)],
    ["hash", stringValue(plan.hash)],
    [CANONICAL, identifier(CANONICAL)],
    ...earlier,
    [
      "events",
      objectLiteral(plan.events.map((event) => [event.event, imports.own(event.payload.schema)])),
    ],
    [
      "workflows",
      objectLiteral(
        plan.workflows.map((workflow) => [
          workflow.name,
          workflowRegistration(workflow, plan, project, imports),
        ]),
      ),
    ],
  ])
  module.constant(REGISTRATION, call(defineOwner, [registration]), {
    // annotated: a start step's thunk refers to a registration, maybe this one, while it is defined
    type: typeReference(ownerRegistration),
    docs: [
      `Everything the runtime needs about owner \`${plan.owner}\`: hashes, schemas, error classes and step settings.`,
      "`defineOwner` recomputes every hash from `canonical` when this module loads and refuses a registration that does not match its manifest.",
    ].join("\n\n"),
  })
  return module
}
