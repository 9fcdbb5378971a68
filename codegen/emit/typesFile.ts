/**
 * Emits an owner's types.ts: a TypeScript type and a strict zod schema for every named type, event
 * payload, workflow input and output and step input and output; a tagged error class per declared
 * error; and the owner's events interface.
 */
import { generatedTypeNames, JSON_TYPE_NAME } from "../manifest/names.js"
import type { OwnerPlan, TypeDeclaration } from "./ownerPlan.js"
import { hasObjectParts } from "../manifest/typeParts.js"
import { objectProperties, typeScriptType, type TypeNames } from "./typeScriptType.js"
import {
  keywordType,
  call,
  property,
  readonlyArrayType,
  recordType,
  stringValue,
  typeReference,
  unionType,
} from "./typeScriptSyntax.js"
import { ModuleBuilder } from "./writer.js"
import { zodSchema } from "./zodSchema.js"

/** Every name an owner's types.ts declares, in the order it declares them. */
export const typesFileNames = (plan: OwnerPlan): string[] => [
  ...(plan.usesJson ? [JSON_TYPE_NAME] : []),
  ...plan.types.flatMap((declaration) => [declaration.name, declaration.schema]),
  ...plan.errors.map((error) => error.name),
  generatedTypeNames.ownerEvents(plan.owner),
  ...plan.earlierTypes.map((declaration) => declaration.name),
]

const declareType = (
  module: ModuleBuilder,
  declaration: TypeDeclaration,
  names: TypeNames,
  z: string,
): void => {
  const { type } = declaration
  if (type.kind === "object") {
    module.interface(declaration.name, {
      docs: declaration.docs,
      properties: objectProperties(type.fields, names),
    })
  } else {
    module.typeAlias(declaration.name, typeScriptType(type, names), declaration.docs)
  }
  module.constant(declaration.schema, zodSchema(type, z), {
    type: typeReference(`${z}.ZodType`, [typeReference(declaration.name)]),
    docs: hasObjectParts(type)
      ? `Strict schema of {@link ${declaration.name}}: unknown keys are errors.`
      : `Schema of {@link ${declaration.name}}.`,
  })
}

export const typesModule = (plan: OwnerPlan): ModuleBuilder => {
  const module = new ModuleBuilder(
    `${plan.folder}/types.ts`,
    {
      source: plan.source.file,
      hash: plan.hash,
    },
    typesFileNames(plan),
  )
  const z = module.importValue("zod", "z", "zod")
  const names: TypeNames = { json: JSON_TYPE_NAME }
  if (plan.usesJson) {
    const json = typeReference(JSON_TYPE_NAME)
    module.typeAlias(
      JSON_TYPE_NAME,
      unionType([
        keywordType("string"),
        keywordType("number"),
        keywordType("boolean"),
        keywordType("null"),
        readonlyArrayType(json),
        recordType(json),
      ]),
      "Any JSON value: what a field of type `json` holds.",
    )
  }
  for (const declaration of plan.types) declareType(module, declaration, names, z)
  if (plan.errors.length > 0) {
    // From effect's Data module, not its index: importing `effect` loads every module it has.
    const taggedError = module.importValue("effect/Data", "TaggedError", "EffectTaggedError")
    for (const error of plan.errors) {
      const payload = typeScriptType(error.payload, names)
      const empty = payload.kind === "objectType" && payload.members.length === 0
      module.emptyClass(
        error.name,
        {
          expression: call(taggedError, [stringValue(error.name)]),
          typeArguments: empty ? [] : [payload],
        },
        error.docs,
      )
    }
  }
  module.interface(generatedTypeNames.ownerEvents(plan.owner), {
    docs: `Events of owner \`${plan.owner}\` by name: what \`emit\` accepts and \`wait\` steps receive.`,
    properties: plan.events.map((event) =>
      property(event.event, typeReference(event.payload.name)),
    ),
  })
  for (const earlier of plan.earlierTypes) {
    if (earlier.type.kind === "object") {
      module.interface(earlier.name, {
        docs: earlier.docs,
        properties: objectProperties(earlier.type.fields, names),
      })
    } else {
      module.typeAlias(earlier.name, typeScriptType(earlier.type, names), earlier.docs)
    }
  }
  return module
}
