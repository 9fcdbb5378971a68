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

/**
 * How a step's results recorded under `writer` are read under `reader` (same kind), with the
 * reader's earlier shapes: an activity's output through the step's migrations, a wait's payload
 * through its event's. Everything else of the result (declared errors, the event waited for) must
 * be accepted as the kind's rule says.
 */
export const stepReading = (
  reader: CanonicalStep,
  writer: CanonicalStep,
  step: string,
  earlier: ReaderEarlierShapes | undefined,
): ShapeReading => {
  const declared =
    writer.kind === "activity"
      ? earlier?.steps?.[step]
      : writer.kind === "wait" && reader.event === writer.event && reader.event !== undefined
        ? earlier?.events?.[reader.event]
        : undefined
  if (declared === undefined || Object.keys(declared).length === 0) {
    const refusal = stepKindModelOf(writer.kind).resultRefusal(reader, writer)
    return refusal === null ? AS_RECORDED : { kind: "refused", refusal }
  }
  if (writer.kind === "activity") {
    const errors = acceptsErrors(reader.errors ?? {}, writer.errors ?? {})
    if (errors !== null) return { kind: "refused", refusal: refusalUnder("errors", errors) }
    const output = shapeReading(reader.output ?? null, writer.output ?? null, declared)
    return output.kind === "refused"
      ? { kind: "refused", refusal: refusalUnder("output", output.refusal) }
      : output
  }
  const payload = shapeReading(
    reader.payload ?? { kind: "json" },
    writer.payload ?? { kind: "json" },
    declared,
  )
  return payload.kind === "refused"
    ? { kind: "refused", refusal: refusalUnder("payload", payload.refusal) }
    : payload
}
