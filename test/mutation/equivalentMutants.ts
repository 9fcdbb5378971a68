/**
 * Surviving StrykerJS mutants that no test can kill because they change nothing observable, each
 * with the reason. A mutant is matched by its file, mutator, replacement, the source line it is
 * on (not its line number, so an edit elsewhere does not unlist it) and, where two mutants of a
 * line are otherwise alike, its column. mutate.ts leaves these out of the score; every other
 * survivor is reported.
 */

export interface EquivalentMutant {
  readonly file: string
  readonly mutator: string
  /** The trimmed source line the mutant is on. */
  readonly source: string
  /** The mutant's replacement text, when the line has several of this mutator. */
  readonly replacement?: string
  /** The mutant's column on that line, when two mutants of the line share mutator and replacement. */
  readonly column?: number
  readonly reason: string
}

const ID = "runtime/model/executionId.ts"
const VERDICT = "runtime/compatibility/executionVerdict.ts"
const RULES = "runtime/compatibility/rules.ts"
const FENCE = "runtime/owners/fence.ts"
const OUTBOX = "runtime/outbox/outboxStore.ts"
const LOCK = "cli/compatibility/lockFile.ts"
const BATCH = "runtime/engine/stepBatch.ts"
const PASS_WRITER = "runtime/engine/passWriter.ts"
const UNDEFINED_KEY =
  "the batch row gets the key with an undefined value instead of no key: writeStepBatch reads each with `!== undefined`, `?.` or `?? null`, alike"
const KEY_ORDER = ": Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))"
const UNIQUE_KEYS = "an object's keys are distinct: the comparator never sees two equal keys"
const V8_SORT =
  "V8's sort only asks whether the comparator's result is below 0: 0 and 1 for a greater key sort alike (checked over 2,000 random key sets)"
const DEFAULT_ENCODING = "Buffer's encoding defaults to UTF-8: an empty encoding name is UTF-8"

export const equivalentMutants: readonly EquivalentMutant[] = [
  {
    file: ID,
    mutator: "StringLiteral",
    source: 'const utf8Bytes = (text: string) => Buffer.byteLength(text, "utf8")',
    reason: DEFAULT_ENCODING,
  },
  {
    file: ID,
    mutator: "StringLiteral",
    source: '!text.includes("\\0") && Buffer.from(text, "utf8").toString("utf8") === text',
    replacement: '""',
    reason: DEFAULT_ENCODING,
  },
  { file: ID, mutator: "StringLiteral", source: '"utf8",', reason: DEFAULT_ENCODING },
  {
    file: VERDICT,
    mutator: "ConditionalExpression",
    source: "if (record.startManifestHash !== compatibilityHashOf(runner)) {",
    replacement: "true",
    reason: "comparing a manifest with itself finds nothing: the hash test only saves the work",
  },
  {
    file: VERDICT,
    mutator: "StringLiteral",
    source: 'const declaration = stepDeclarationProblem(c, step, written.kind, "declared")',
    reason: 'stepDeclarationProblem tells only "recorded" apart from any other source',
  },
  {
    file: VERDICT,
    mutator: "MethodExpression",
    source: "for (const marker of [...markers].sort()) {",
    reason: "the problems are sorted by compareFindings, which orders by marker, afterwards",
  },
  {
    file: VERDICT,
    mutator: "MethodExpression",
    source: "const problems = drafts",
    reason:
      "every rule the verdict applies is an error under START_TO_RUNNER: the severity filter drops nothing",
  },
  {
    file: VERDICT,
    mutator: "ConditionalExpression",
    source: '.filter((finding) => finding.severity === "error")',
    replacement: "true",
    reason:
      "every rule the verdict applies is an error under START_TO_RUNNER: the severity filter drops nothing",
  },
  {
    file: RULES,
    mutator: "ConditionalExpression",
    source: "...(location === undefined ? {} : { location }),",
    replacement: "false",
    reason: "findingOf itself leaves out a location that is undefined",
  },
  {
    file: RULES,
    mutator: "ConditionalExpression",
    source: "...(open === undefined ? {} : { open }),",
    replacement: "false",
    reason: "findingOf itself leaves out open executions that are undefined",
  },
  {
    file: FENCE,
    mutator: "ConditionalExpression",
    source: "while (this.generation === undefined && this.taking !== undefined) {",
    replacement: "true",
    reason:
      "the left operand follows from the right: a write is taking the generation only while none is held, and it clears `taking` before its waiters resume",
  },
  {
    file: FENCE,
    mutator: "ConditionalExpression",
    source: "if (generation !== undefined) {",
    replacement: "true",
    reason:
      "sets the held generation to undefined when the write took none, which it already was (the fault point does nothing without a plan)",
  },
  {
    file: RULES,
    mutator: "ConditionalExpression",
    source: 'const name = head?.kind === "field" ? head.name : "output"',
    replacement: "true",
    reason:
      "resultPaths gets only refusals resultRefusal placed under output or errors: the head is always a field",
  },
  {
    file: RULES,
    mutator: "OptionalChaining",
    source: 'const name = head?.kind === "field" ? head.name : "output"',
    reason:
      "resultPaths gets only refusals resultRefusal placed under output or errors: the head is always there",
  },
  {
    file: RULES,
    mutator: "StringLiteral",
    source: 'const name = head?.kind === "field" ? head.name : "output"',
    replacement: '""',
    reason: "the fallback name is never reached: the head is always a field (see above)",
  },
  {
    file: LOCK,
    mutator: "EqualityOperator",
    source: KEY_ORDER,
    replacement: "a <= b",
    column: 53,
    reason: UNIQUE_KEYS,
  },
  { file: LOCK, mutator: "EqualityOperator", source: KEY_ORDER, column: 66, reason: V8_SORT },
  { file: LOCK, mutator: "ConditionalExpression", source: KEY_ORDER, column: 66, reason: V8_SORT },
  {
    file: LOCK,
    mutator: "ConditionalExpression",
    source: 'if (typeof release !== "number" || !Number.isInteger(release) || release < 1) {',
    replacement: "false",
    column: 7,
    reason:
      "Number.isInteger is false for anything that is not a number: the typeof test only narrows the type",
  },
  {
    file: LOCK,
    mutator: "ConditionalExpression",
    source: 'if (found.length > 0 || typeof release !== "number") continue',
    replacement: "false",
    column: 31,
    reason:
      "an entry without problems has a positive integer release: the typeof test only narrows the type",
  },
  {
    file: LOCK,
    mutator: "EqualityOperator",
    source:
      "if (seen === undefined || entry.release > seen.release) newest.set(entry.owner, entry)",
    replacement: "entry.release >= seen.release",
    reason:
      "the releases of one owner are distinct (a lock file with two alike is refused; appendReleases numbers each anew)",
  },
  {
    file: LOCK,
    mutator: "ConditionalExpression",
    source: "const locked = entries.some((e) => e.owner === manifest.owner && e.hash === hash)",
    replacement: "true",
    reason: "the manifest hash covers the owner's name: no entry of another owner has this hash",
  },
  {
    file: LOCK,
    mutator: "ConditionalExpression",
    source:
      "entries = [...entries.filter((e) => !(e.owner === manifest.owner && e.hash === hash)), entry]",
    replacement: "true",
    reason: "the manifest hash covers the owner's name: no entry of another owner has this hash",
  },
  {
    file: OUTBOX,
    mutator: "ConditionalExpression",
    source: "if ((buckets.length === 0 && served.length === 0) || limit <= 0) return []",
    replacement: "false",
    column: 8,
    reason:
      "the left operand only saves a round trip: the claim's query matches no row for no buckets and no manifests",
  },
  {
    file: OUTBOX,
    mutator: "EqualityOperator",
    source: "if ((buckets.length === 0 && served.length === 0) || limit <= 0) return []",
    replacement: "limit < 0",
    reason:
      "a limit of 0 then reaches the query, whose LIMIT 0 claims nothing: the same empty claim",
  },
  {
    file: RULES,
    mutator: "ConditionalExpression",
    source: "if (hash === undefined) {",
    replacement: "true",
    reason: "computes the hash again instead of taking the cached one: the same value",
  },
  // The step batch tests each kind twice: stepBatchColumns to add the kind's input columns (the
  // mutants below), composeStepBatch to add its part, which any batch without that kind kills
  // (the part reads columns the input lacks).
  {
    file: BATCH,
    mutator: "ConditionalExpression",
    source: "if (has(shape, SETTLING)) {",
    replacement: "true",
    reason:
      "adds the settle columns, all null, to a batch that settles nothing: no part reads them (the settled part is added only when settling)",
  },
  {
    file: BATCH,
    mutator: "ConditionalExpression",
    source: "if (has(shape, BEGINNING)) {",
    replacement: "true",
    reason:
      "adds the begin columns, all null, to a batch that begins nothing: no part reads them (the begun part is added only when beginning)",
  },
  {
    file: BATCH,
    mutator: "ConditionalExpression",
    source: "if (has(shape, FINISHING)) {",
    replacement: "true",
    reason:
      "adds the result columns, all null, to a batch that finishes nothing: no part reads them (the finish parts are added only when finishing)",
  },
  {
    file: BATCH,
    mutator: "ConditionalExpression",
    source: "if (write.settle !== undefined) shape |= SETTLING",
    replacement: "true",
    reason:
      "a batch that settles nothing gets the settled part over null settle columns: it matches no step, and every row reads settled (no settle to match)",
  },
  {
    file: BATCH,
    mutator: "ConditionalExpression",
    source: "if (write.begin !== undefined) shape |= BEGINNING",
    replacement: "true",
    reason:
      "a batch that begins nothing gets the begun part over null begin columns: it inserts nothing, and every row reads a null start time",
  },
  {
    file: BATCH,
    mutator: "ConditionalExpression",
    source: "if (write.finish !== undefined) shape |= FINISHING",
    replacement: "true",
    reason:
      "a batch that finishes nothing gets the finish parts over null results: they finish, delete and notify nothing, and every row reads not finished",
  },
  {
    file: PASS_WRITER,
    mutator: "ConditionalExpression",
    source: "...(batchedSettles[0] === undefined ? {} : { settle: batchedSettles[0] }),",
    replacement: "false",
    reason: UNDEFINED_KEY,
  },
  {
    file: PASS_WRITER,
    mutator: "ConditionalExpression",
    source: "...(batched.begin === undefined ? {} : { begin: batched.begin }),",
    replacement: "false",
    reason: UNDEFINED_KEY,
  },
  {
    file: PASS_WRITER,
    mutator: "ConditionalExpression",
    source: "...(batched.finish === undefined ? {} : { finish: batched.finish }),",
    replacement: "false",
    reason: UNDEFINED_KEY,
  },
  {
    file: PASS_WRITER,
    mutator: "ConditionalExpression",
    source: "...(batched.outcome === undefined ? {} : { outcome: batched.outcome }),",
    replacement: "false",
    reason: UNDEFINED_KEY,
  },
  {
    file: PASS_WRITER,
    mutator: "ConditionalExpression",
    source: "write.select === undefined ? sql`` : sql`, ${write.select}`",
    replacement: "false",
    reason:
      "a write without columns of its own gets one more, an unnamed NULL (the undefined parameter): every read takes the row's columns by name (generation, created, the write's own)",
  },
  {
    file: PASS_WRITER,
    mutator: "ConditionalExpression",
    source: "generation: held === null || held === undefined ? undefined : Number(held),",
    replacement: "false",
    column: 42,
    reason:
      "the row always has its generation column: composeStatement's select has no FROM (one row), and its first column is the fence's scalar subquery, NULL when the fence found no row",
  },
]
