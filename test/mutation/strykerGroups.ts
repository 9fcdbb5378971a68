/**
 * What `npm run mutate` mutates with StrykerJS, module by module, and the test files that guard
 * each: a mutant runs only its module's guards (and of those only the tests that cover it), never
 * the whole suite. Large modules are mutated only in the declarations that carry an invariant,
 * named here and turned into line ranges when the run starts, so an edit elsewhere in the file
 * does not move them.
 *
 * Guards are in-process test files: a runner in a child process loads the module without the
 * mutant switched on, so multi-process suites cannot kill a StrykerJS mutant (the textual SQL
 * mutations, which edit the files themselves, do run them).
 */
import { readFileSync } from "node:fs"

export interface StrykerGroup {
  /** A short name: `npm run mutate -- --groups fence,settle`. */
  readonly name: string
  /** What the module keeps. */
  readonly invariant: string
  readonly file: string
  /** Top-level declarations to mutate (all of the file when absent). */
  readonly declarations?: readonly string[]
  readonly guards: readonly string[]
  /**
   * Mutators left out, with why. SQL lives in tagged templates, which StrykerJS can only empty
   * whole (any test kills that); the textual mutations mutate their clauses instead.
   */
  readonly excludedMutations?: readonly string[]
}

const SQL_MODULE = ["StringLiteral"]

export const strykerGroups: readonly StrykerGroup[] = [
  {
    name: "fence",
    invariant: "every engine write commits only under the generation its runner holds",
    file: "runtime/owners/fence.ts",
    // The fences of a write a start rides on are guarded by staleGeneration.test.ts, too slow to run
    // once per mutant here: the textual mutation start-fence-generation runs it.
    declarations: [
      "checkingFence",
      "activatingFence",
      "Activation.fenced",
      "Activation.behindFence",
    ],
    guards: ["test/runtime/passWrites.test.ts"],
    excludedMutations: SQL_MODULE,
  },
  {
    name: "settle",
    invariant: "one settle per step attempt, begins and results under the fence",
    file: "runtime/engine/stepStore.ts",
    declarations: [
      "beginActivityPart",
      "settleFrom",
      "settleStepsPart",
      "SETTLE_COLUMNS",
      "batchSettleSql",
      "batchBeginSql",
    ],
    guards: ["test/runtime/passWrites.test.ts", "test/runtime/batchedStatements.test.ts"],
    excludedMutations: SQL_MODULE,
  },
  {
    name: "stepBatch",
    invariant:
      "a batch row writes only under its owner's held generation, and reports what it wrote",
    file: "runtime/engine/stepBatch.ts",
    declarations: ["stepBatchShape", "stepBatchColumns", "composeStepBatch", "writeStepBatch"],
    guards: ["test/runtime/passWrites.test.ts", "test/runtime/batchedStatements.test.ts"],
    excludedMutations: SQL_MODULE,
  },
  {
    name: "passWriter",
    invariant: "a write goes as a batch row only when it keeps the plain statement's guarantees",
    file: "runtime/engine/passWriter.ts",
    declarations: ["PassWriter.write"],
    guards: ["test/runtime/passWrites.test.ts", "test/runtime/passWriteFaultPoints.test.ts"],
    excludedMutations: SQL_MODULE,
  },
  {
    name: "finish",
    invariant: "exactly one result per execution, and no execution change after it",
    file: "runtime/engine/executionStore.ts",
    declarations: ["finishExecutionPart"],
    guards: ["test/runtime/passWrites.test.ts"],
    excludedMutations: SQL_MODULE,
  },
  {
    name: "timerClaim",
    invariant: "a due timer is claimed by one runner, and comes due again if its claimer dies",
    file: "runtime/outbox/outboxStore.ts",
    declarations: [
      "claimDueParts",
      "claimableSql",
      "claimedRowOf",
      "claimDueWhere",
      "claimDue",
      "claimDueTimers",
      "deleteClaimedPart",
    ],
    guards: ["test/runtime/timerClaim.test.ts", "test/runtime/localTimers.test.ts"],
    excludedMutations: SQL_MODULE,
  },
  {
    name: "executionId",
    invariant: "one canonical id per execution, and keys within their bounds",
    file: "runtime/model/executionId.ts",
    guards: ["test/hostile/executionIds.test.ts"],
  },
  {
    name: "accepts",
    invariant: "a type is accepted only if every value recorded under the old one decodes",
    file: "runtime/compatibility/accepts.ts",
    guards: ["test/compatibility/accepts.test.ts"],
  },
  {
    name: "rules",
    invariant: "every manifest change that breaks a replay is reported, and located",
    file: "runtime/compatibility/rules.ts",
    guards: [
      "test/compatibility/rules.test.ts",
      "test/compatibility/compareManifests.test.ts",
      "test/compatibility/executionVerdict.test.ts",
      "test/compatibility/fixtures.test.ts",
    ],
  },
  {
    name: "executionVerdict",
    invariant: "a runner replays only executions it is compatible with, markers in range",
    file: "runtime/compatibility/executionVerdict.ts",
    guards: ["test/compatibility/executionVerdict.test.ts"],
  },
  {
    name: "lockFile",
    invariant: "the lock file records every released manifest, and reads back what it wrote",
    file: "cli/compatibility/lockFile.ts",
    guards: ["test/cli/lockFile.test.ts"],
  },
]

/** A top-level declaration starts at column 0 (its doc comment, `export`, `const`, `class`). */
const startsDeclaration = (line: string) =>
  /^(\/\*\*|export |const |class |let |function )/.test(line)

/**
 * The 1-based line range of each named top-level declaration, as StrykerJS's `mutate` takes it
 * (`file:12-40`); the whole file when none are named.
 */
export const mutateRanges = (group: StrykerGroup, root: string): string[] => {
  if (group.declarations === undefined) return [group.file]
  const lines = readFileSync(`${root}/${group.file}`, "utf8").split("\n")
  return group.declarations.map((name) => {
    const [owner, member] = name.split(".")
    if (member !== undefined)
      return `${group.file}:${memberRange(lines, owner!, member, group.file)}`
    const start = lines.findIndex((line) =>
      new RegExp(`^(export )?(const|class|let|function|async function) ${name}\\b`).test(line),
    )
    if (start === -1) throw new Error(`${group.file} declares no ${name} at the top level`)
    let end = lines.findIndex((line, index) => index > start && startsDeclaration(line))
    if (end === -1) end = lines.length
    while (end > start + 1 && lines[end - 1]!.trim() === "") end -= 1
    return `${group.file}:${start + 1}-${end}`
  })
}

/** The lines of a class member's body: from its implementation's first line to its closing brace. */
const memberRange = (lines: readonly string[], owner: string, member: string, file: string) => {
  const classAt = lines.findIndex((line) => new RegExp(`^(export )?class ${owner}\\b`).test(line))
  if (classAt === -1) throw new Error(`${file} declares no class ${owner}`)
  const start = lines.findIndex(
    (line, index) =>
      index > classAt &&
      // Its implementation: an overload's signature ends in its return type instead.
      new RegExp(`^  (private |async |get )*${member}\\b.*[{(]$`).test(line),
  )
  if (start === -1) throw new Error(`${file}: ${owner} has no member ${member}`)
  const end = lines.findIndex((line, index) => index > start && line === "  }")
  return `${start + 1}-${end + 1}`
}
