/**
 * zod schemas built from canonical types at run time. `strict` refuses unknown object keys (new
 * input); `tolerant` drops them (recorded data, which may carry fields a newer manifest removed).
 */
import { z, type ZodType } from "zod"
import type { TypeNode } from "./typeModel.js"

export type SchemaMode = "strict" | "tolerant"

const cache: Record<SchemaMode, WeakMap<TypeNode, ZodType>> = {
  strict: new WeakMap(),
  tolerant: new WeakMap(),
}

export const schemaOf = (type: TypeNode, mode: SchemaMode): ZodType => {
  const cached = cache[mode].get(type)
  if (cached !== undefined) return cached
  const built = build(type, mode)
  cache[mode].set(type, built)
  return built
}

const build = (type: TypeNode, mode: SchemaMode): ZodType => {
  switch (type.kind) {
    case "string":
      return z.string()
    case "number":
      return z.number()
    case "integer":
      return z.int()
    case "boolean":
      return z.boolean()
    case "null":
      return z.null()
    case "json":
      return z.json()
    case "array":
      return z.array(schemaOf(type.items, mode))
    case "record":
      return z.record(z.string(), schemaOf(type.values, mode))
    case "enum":
      return z.enum(type.values as [string, ...string[]])
    case "oneOf":
      return z.union(
        type.variants.map((v) => schemaOf(v, mode)) as [ZodType, ZodType, ...ZodType[]],
      )
    case "object": {
      const shape: Record<string, ZodType> = {}
      for (const [name, field] of Object.entries(type.fields)) {
        const schema = schemaOf(field.type, mode)
        shape[name] = field.optional ? schema.optional() : schema
      }
      return mode === "strict" ? z.strictObject(shape) : z.object(shape)
    }
    case "ref":
      throw new Error(`schemaOf: unresolved ref "${type.name}" (canonical types have none)`)
  }
}

export interface PayloadIssue {
  readonly path: string
  readonly message: string
}

/** `["total", "amount"]` → `total.amount`; `["skus", 0]` → `skus[0]`. */
export const formatIssuePath = (path: readonly PropertyKey[]): string =>
  path.reduce<string>((text, part) => {
    if (typeof part === "number") return `${text}[${part}]`
    const name = String(part)
    const plain = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name)
    return text === "" ? plain : plain.startsWith('"') ? `${text}[${plain}]` : `${text}.${plain}`
  }, "")

export const issuesOf = (error: z.ZodError): PayloadIssue[] =>
  error.issues.map((issue) => ({ path: formatIssuePath(issue.path), message: issue.message }))
