/**
 * Emits an owner's types.ts: a TypeScript type and a strict zod schema for every named type, event
 * payload, workflow input and output and step input and output; a tagged error class per declared
 * error; and the owner's events interface.
 */
import { generatedTypeNames, JSON_TYPE_NAME } from "../manifest/names.js"
import type { OwnerPlan, TypeDeclaration } from "./ownerPlan.js"
import { hasObjectParts } from "../manifest/typeParts.js"
import { typeScriptType, type TypeNames } from "./typeScriptType.js"
import { ModuleBuilder, stringLiteral } from "./writer.js"
import { zodSchema } from "./zodSchema.js"

/** Every name an owner's types.ts declares, in the order it declares them. */
export const typesFileNames = (plan: OwnerPlan): string[] => [
  ...(plan.usesJson ? [JSON_TYPE_NAME] : []),
  ...plan.types.flatMap((declaration) => [declaration.name, declaration.schema]),
  ...plan.errors.map((error) => error.name),
  generatedTypeNames.ownerEvents(plan.owner),
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
      properties: Object.entries(type.fields).map(([name, field]) => ({
        name,
        type: typeScriptType(field.type, names),
        optional: field.optional,
        docs: field.description ?? field.type.description,
      })),
    })
  } else {
    module.typeAlias(declaration.name, typeScriptType(type, names), declaration.docs)
  }
  module.constant(declaration.schema, zodSchema(type, z), {
    type: `${z}.ZodType<${declaration.name}>`,
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
    module.typeAlias(
      JSON_TYPE_NAME,
      `string | number | boolean | null | readonly ${JSON_TYPE_NAME}[] | { readonly [key: string]: ${JSON_TYPE_NAME} }`,
      "Any JSON value: what a field of type `json` holds.",
    )
  }
  for (const declaration of plan.types) declareType(module, declaration, names, z)
  if (plan.errors.length > 0) {
    const data = module.importValue("effect", "Data", "EffectData")
    for (const error of plan.errors) {
      const payload = typeScriptType(error.payload, names)
      const fields = payload === "{}" ? "" : `<${payload}>`
      module.emptyClass(
        error.name,
        `${data}.TaggedError(${stringLiteral(error.name)})${fields}`,
        error.docs,
      )
    }
  }
  module.interface(generatedTypeNames.ownerEvents(plan.owner), {
    docs: `Events of owner \`${plan.owner}\` by name: what \`emit\` accepts and \`wait\` steps receive.`,
    properties: plan.events.map((event) => ({ name: event.event, type: event.payload.name })),
  })
  return module
}
