/**
 * How a reader reads a value recorded under another shape: as it is, through one of its declared
 * migrations, or not at all. One pure rule, shared by a runner replaying an execution and by
 * `akter check` judging a locked release or an open execution, so that what the check accepts is
 * exactly what the runtime does:
 *
 * 1. the recorded shape is the reader's (canonically equal): read as it is;
 * 2. a declared earlier shape is the recorded shape: read through its migration;
 * 3. the reader's type accepts the recorded shape (`accepts`): read as it is;
 * 4. the first declared earlier shape that accepts the recorded shape: read through its migration;
 * 5. otherwise refused, with the reader's refusal.
 *
 * An exact earlier shape wins over plain acceptance: a manifest that declares the old shape asks for
 * the migration, even where the old values would also decode as they are.
 */
import { canonicalJson } from "../model/canonicalJson.js"
import type { CanonicalStep } from "../model/canonicalManifest.js"
import type { EarlierShapes, ReaderEarlierShapes } from "../model/earlierShapes.js"
import type { TypeNode } from "../model/typeModel.js"
import {
  accepts,
  acceptsDeclared,
  acceptsErrors,
  refusalUnder,
  type TypeRefusal,
} from "./accepts.js"
import { stepKindModelOf } from "../model/stepKinds/stepKinds.js"

/** How recorded values of one shape are read. */
export type ShapeReading =
  | { readonly kind: "as-recorded" }
  | { readonly kind: "migrated"; readonly migration: string; readonly shape: TypeNode }
  | { readonly kind: "refused"; readonly refusal: TypeRefusal }

const AS_RECORDED: ShapeReading = { kind: "as-recorded" }

/**
 * How values recorded as `recorded` are read by a reader of `current` with `earlier` shapes
 * (`null` types: the declaration has none, as `acceptsDeclared` reads them).
 *
 * @example
 * shapeReading({ kind: "object", fields: { limit: … } }, { kind: "object", fields: { limitCents: … } }, { v1: limitCentsShape })
 * // { kind: "migrated", migration: "v1", shape: limitCentsShape }
 */
export const shapeReading = (
  current: TypeNode | null,
  recorded: TypeNode | null,
  earlier: EarlierShapes | undefined,
): ShapeReading => {
  const recordedForm = canonicalJson(recorded)
  if (canonicalJson(current) === recordedForm) return AS_RECORDED
  const shapes = Object.entries(earlier ?? {})
  for (const [migration, shape] of shapes) {
    if (canonicalJson(shape) === recordedForm) return { kind: "migrated", migration, shape }
  }
  const refusal = acceptsDeclared(current, recorded)
  if (refusal === null) return AS_RECORDED
  if (recorded !== null) {
    for (const [migration, shape] of shapes) {
      if (accepts(shape, recorded) === null) return { kind: "migrated", migration, shape }
    }
  }
  return { kind: "refused", refusal }
}

/** What of a step's recorded result a reading concerns: its value or one declared error's payload. */
export type RecordedPart =
  { readonly kind: "value" } | { readonly kind: "error"; readonly error: string }

/** One part of a step's recorded result read through a migration. */
export interface PartMigration {
  readonly part: RecordedPart
  readonly migration: string
  readonly shape: TypeNode
}

/**
 * How a step's recorded results are read: each part as it is or through the migrations listed, or
 * not at all (`part`: the one refused).
 */
export type StepReading =
  | { readonly kind: "read"; readonly migrated: readonly PartMigration[] }
  | { readonly kind: "refused"; readonly refusal: TypeRefusal; readonly part: RecordedPart }

const migration = (reading: { readonly migration: string; readonly shape: TypeNode }) => ({
  migration: reading.migration,
  shape: reading.shape,
})

const VALUE: RecordedPart = { kind: "value" }
const READ_AS_RECORDED: StepReading = { kind: "read", migrated: [] }

const declares = (shapes: EarlierShapes | undefined): shapes is EarlierShapes =>
  shapes !== undefined && Object.keys(shapes).length > 0

/** The part a plain result refusal is about: `errors.OutOfStock.sku` is about `OutOfStock`. */
const refusedPart = (refusal: TypeRefusal): RecordedPart => {
  const [first, second] = refusal.segments
  return first?.kind === "field" && first.name === "errors" && second?.kind === "field"
    ? { kind: "error", error: second.name }
    : VALUE
}

/**
 * How a step's results recorded under `writer` are read under `reader` (same kind), with the
 * reader's earlier shapes: an activity's output through the step's migrations, a wait's payload
 * through its event's, and each declared error an activity or a race may have recorded through
 * that error's. Without earlier shapes of any of them, the kind's result rule decides alone.
 *
 * @example
 * stepReading(reader, writer, "screen", { errors: { Flagged: { v1: scoreShape } } })
 * // { kind: "read", migrated: [{ part: { kind: "error", error: "Flagged" }, migration: "v1", shape: scoreShape }] }
 */
export const stepReading = (
  reader: CanonicalStep,
  writer: CanonicalStep,
  step: string,
  earlier: ReaderEarlierShapes | undefined,
): StepReading => {
  const declared =
    writer.kind === "activity"
      ? earlier?.steps?.[step]
      : writer.kind === "wait" && reader.event === writer.event && reader.event !== undefined
        ? earlier?.events?.[reader.event]
        : undefined
  const errorShapes = (error: string) =>
    writer.kind === "wait" ? undefined : earlier?.errors?.[error]
  if (
    !declares(declared) &&
    !Object.keys(writer.errors ?? {}).some((e) => declares(errorShapes(e)))
  ) {
    const refusal = stepKindModelOf(writer.kind).resultRefusal(reader, writer)
    return refusal === null
      ? READ_AS_RECORDED
      : { kind: "refused", refusal, part: refusedPart(refusal) }
  }
  const migrated: PartMigration[] = []
  if (writer.kind === "wait") {
    const payload = shapeReading(
      reader.payload ?? { kind: "json" },
      writer.payload ?? { kind: "json" },
      declared,
    )
    if (payload.kind === "refused") {
      return { kind: "refused", refusal: refusalUnder("payload", payload.refusal), part: VALUE }
    }
    if (payload.kind === "migrated") migrated.push({ part: VALUE, ...migration(payload) })
    return { kind: "read", migrated }
  }
  const output = shapeReading(reader.output ?? null, writer.output ?? null, declared)
  if (output.kind === "refused") {
    return { kind: "refused", refusal: refusalUnder("output", output.refusal), part: VALUE }
  }
  if (output.kind === "migrated") migrated.push({ part: VALUE, ...migration(output) })
  for (const [error, payload] of Object.entries(writer.errors ?? {})) {
    const part: RecordedPart = { kind: "error", error }
    const current = reader.errors?.[error]
    const reading =
      current === undefined
        ? ({ kind: "refused", refusal: acceptsErrors({}, { [error]: payload })! } as const)
        : shapeReading(current, payload, errorShapes(error))
    if (reading.kind === "refused") {
      const refusal = current === undefined ? reading.refusal : refusalUnder(error, reading.refusal)
      return { kind: "refused", refusal: refusalUnder("errors", refusal), part }
    }
    if (reading.kind === "migrated") migrated.push({ part, ...migration(reading) })
  }
  return { kind: "read", migrated }
}

/** The earlier shapes a reader declares of one part of a step's recorded result, if any. */
export const declaredShapesOf = (
  part: RecordedPart,
  step: string,
  reader: CanonicalStep,
  writer: CanonicalStep,
  earlier: ReaderEarlierShapes | undefined,
): EarlierShapes | undefined =>
  part.kind === "error"
    ? earlier?.errors?.[part.error]
    : writer.kind === "wait" && reader.event !== undefined
      ? earlier?.events?.[reader.event]
      : earlier?.steps?.[step]
