/**
 * Mutations of SQL fragments, by hand: StrykerJS mutates a tagged template such as sql`…` only by
 * emptying it whole, which any test kills, so the clauses that carry the engine's invariants — the
 * generation fence, `exit IS NULL`, `status <> 'finished'`, `SKIP LOCKED` — are mutated here as
 * text, one at a time, each run against the test files that guard it (runTextualMutations.ts).
 * The first six are issue 19's table.
 */

export interface TextualEdit {
  readonly find: string
  readonly replace: string
  readonly occurrence?: number
}

export interface TextualMutation {
  /** A short name, unique in the list. */
  readonly id: string
  /** The invariant the mutated text keeps. */
  readonly invariant: string
  /** The file, relative to the repository root. */
  readonly file: string
  /** The edits, applied in order: each replaces the `occurrence`-th (1-based, default 1) `find`. */
  readonly edits: readonly TextualEdit[]
  /** Test files of the default `npm test` that must fail with the mutation applied. */
  readonly guards: readonly string[]
}

const FENCE = "runtime/owners/fence.ts"
const STEPS = "runtime/engine/stepStore.ts"
const EXECUTIONS = "runtime/engine/executionStore.ts"
const OUTBOX = "runtime/outbox/outboxStore.ts"
const PASS_WRITES = "test/runtime/passWrites.test.ts"
const STALE = "test/runtime/staleGeneration.test.ts"
const BATCHED = "test/runtime/batchedStatements.test.ts"
const CLAIM = "test/runtime/timerClaim.test.ts"
const EMIT = "test/runtime/oneStatementEmit.test.ts"

export const textualMutations: readonly TextualMutation[] = [
  {
    id: "fence-generation",
    invariant: "the generation fence of every non-batched write",
    file: FENCE,
    edits: [
      {
        find: "WHERE ${matchesOwner(owner)} AND generation = ${generation}::bigint\n    FOR UPDATE",
        replace: "WHERE ${matchesOwner(owner)}\n    FOR UPDATE",
      },
    ],
    guards: ["test/runtime/passWrites.test.ts", "test/runtime/staleGeneration.test.ts"],
  },
  {
    id: "batch-fence-generation",
    invariant: "the generation fence of a batched write",
    file: FENCE,
    edits: [
      {
        find: "ELSE NOT f.taken AND f.generation = i.generation END",
        replace: "ELSE NOT f.taken END",
      },
    ],
    guards: [
      "test/runtime/batchedStatements.test.ts",
      "test/runtime/passWrites.test.ts",
      "test/runtime/staleGeneration.test.ts",
    ],
  },
  {
    id: "settle-exit-null",
    invariant: "one settle per step (the one settle statement, as a pass's own statement)",
    file: STEPS,
    edits: [
      {
        find: "AND s.step = f.settle_step AND s.attempt = f.settle_attempt AND s.exit IS NULL",
        replace: "AND s.step = f.settle_step AND s.attempt = f.settle_attempt",
      },
    ],
    guards: ["test/runtime/passWrites.test.ts"],
  },
  {
    // The same clause as settle-exit-null (the settle is written once), reached through the batch.
    id: "batch-settle-exit-null",
    invariant: "one settle per step (the one settle statement, in the batch)",
    file: STEPS,
    edits: [
      {
        find: "AND s.step = f.settle_step AND s.attempt = f.settle_attempt AND s.exit IS NULL",
        replace: "AND s.step = f.settle_step AND s.attempt = f.settle_attempt",
      },
    ],
    guards: ["test/runtime/batchedStatements.test.ts", "test/runtime/passWrites.test.ts"],
  },
  {
    id: "accepts-optional-to-required",
    invariant: "structural acceptance refuses optional → required",
    file: "runtime/compatibility/accepts.ts",
    edits: [
      { find: "if (!nextField.optional && previousField.optional) {", replace: "if (false) {" },
    ],
    guards: ["test/compatibility/accepts.test.ts"],
  },
  {
    id: "marker-upper-bound",
    invariant: "a recorded marker value above the reader's current is refused",
    file: "runtime/compatibility/rules.ts",
    edits: [
      {
        find: "if (recorded.low < range.min || recorded.high > range.current) {",
        replace: "if (recorded.low < range.min) {",
      },
    ],
    guards: ["test/compatibility/executionVerdict.test.ts"],
  },
  {
    id: "start-fence-generation",
    invariant: "the generation fence of the write a start rides on",
    file: FENCE,
    edits: [
      {
        find: "AND generation = ${generation}::bigint\n        AND ${existsIn(start.inserted)}",
        replace: "AND ${existsIn(start.inserted)}",
      },
    ],
    guards: [STALE],
  },
  {
    id: "activation-advances",
    invariant: "an activation advances the owner's generation, fencing out the previous holder",
    file: FENCE,
    edits: [
      {
        find: "UPDATE akter.owners SET generation = generation + 1\n    WHERE ${matchesOwner(owner)}\n",
        replace:
          "UPDATE akter.owners SET generation = generation\n    WHERE ${matchesOwner(owner)}\n",
      },
    ],
    guards: [PASS_WRITES, STALE],
  },
  {
    id: "batch-activation-advances",
    invariant:
      "an activation's first write, in a batch, advances the owner's generation, fencing out the previous holder",
    file: FENCE,
    edits: [
      {
        find: "UPDATE akter.owners o SET generation = o.generation + 1\n      FROM locked l",
        replace: "UPDATE akter.owners o SET generation = o.generation\n      FROM locked l",
      },
    ],
    guards: [PASS_WRITES, STALE],
  },
  {
    id: "finish-once",
    invariant: "exactly one result per execution (the plain statement)",
    file: EXECUTIONS,
    edits: [
      {
        find: "AND status <> 'finished' AND ${fenceHeld}\n      RETURNING awaited",
        replace: "AND ${fenceHeld}\n      RETURNING awaited",
      },
    ],
    guards: [PASS_WRITES],
  },
  {
    id: "batch-finish-once",
    invariant: "exactly one result per execution (the batch)",
    file: EXECUTIONS,
    edits: [
      {
        find: "AND e.execution_id = f.execution_id AND e.status <> 'finished'",
        replace: "AND e.execution_id = f.execution_id",
      },
    ],
    guards: [BATCHED, PASS_WRITES],
  },
  {
    id: "begin-keeps-start",
    invariant:
      "a rerun of an activity attempt keeps its first start time, which its idempotency key derives from (the plain statement)",
    file: STEPS,
    edits: [
      {
        find: "DO UPDATE SET started_at_ms = akter.steps.started_at_ms\n      RETURNING started_at_ms",
        replace:
          "DO UPDATE SET started_at_ms = EXCLUDED.started_at_ms\n      RETURNING started_at_ms",
      },
    ],
    guards: [PASS_WRITES],
  },
  {
    id: "batch-begin-keeps-start",
    invariant: "a rerun of an activity attempt keeps its first start time (the batch)",
    file: STEPS,
    edits: [
      {
        find: "DO UPDATE SET started_at_ms = akter.steps.started_at_ms\n      RETURNING execution_id",
        replace:
          "DO UPDATE SET started_at_ms = EXCLUDED.started_at_ms\n      RETURNING execution_id",
      },
    ],
    guards: [BATCHED, PASS_WRITES],
  },
  {
    id: "batch-begin-after-settle",
    invariant: "a batch row begins the next attempt only if its held settle matched",
    file: STEPS,
    edits: [
      {
        find: "${settling ? sql`AND (f.settle_step IS NULL OR f.n IN (SELECT n FROM settled))` : sql``}",
        replace: "",
      },
    ],
    guards: [BATCHED, PASS_WRITES],
  },
  {
    id: "claim-moves-due",
    invariant: "a claim moves the timer a recovery interval ahead: no one else takes it meanwhile",
    file: OUTBOX,
    edits: [
      {
        find: "SET due_at_ms = (SELECT ms FROM now) + ${recoveryMs}::bigint,",
        replace: "SET due_at_ms = o.due_at_ms,",
      },
    ],
    guards: [CLAIM],
  },
  {
    id: "claim-due-only",
    invariant: "only due timers are claimed",
    file: OUTBOX,
    edits: [{ find: "WHERE o.due_at_ms <= (SELECT ms FROM now)", replace: "WHERE true" }],
    guards: [CLAIM],
  },
  {
    id: "claim-own-buckets",
    invariant: "a runner claims only timers of the buckets it leases",
    file: OUTBOX,
    edits: [
      {
        find: "((o.bucket = ANY(${buckets}::int[]) AND o.wanted_hash IS NULL)",
        replace: "((o.wanted_hash IS NULL)",
      },
    ],
    guards: [CLAIM],
  },
  {
    id: "claim-leaves-wanted",
    invariant: "a timer wanting another manifest is left to a runner serving it",
    file: OUTBOX,
    edits: [
      {
        find: "(o.bucket = ANY(${buckets}::int[]) AND o.wanted_hash IS NULL)",
        replace: "(o.bucket = ANY(${buckets}::int[]))",
      },
    ],
    guards: [CLAIM],
  },
  {
    id: "claim-locks",
    invariant: "concurrent claims never take one timer twice",
    file: OUTBOX,
    edits: [{ find: "      FOR UPDATE OF o SKIP LOCKED)", replace: ")" }],
    guards: [CLAIM],
  },
  {
    id: "claimed-delete-unchanged",
    invariant: "a claimed timer is deleted only if nobody re-armed it since",
    file: OUTBOX,
    edits: [{ find: "\n        AND due_at_ms = ${row.claimedDueAtMs}::bigint", replace: "" }],
    guards: [CLAIM],
  },
  {
    id: "emit-owner-unchanged",
    invariant:
      "an emit in one statement applies only if no commit changed the owner between its snapshot and its lock",
    file: FENCE,
    edits: [
      {
        find: "WHERE akter.owners.xmin::text = (SELECT version FROM ${sql.id(unchangedSince)})",
        replace: "WHERE true",
      },
    ],
    guards: [EMIT],
  },
  {
    id: "wait-touches-owner",
    invariant: "a wait's registration changes the owner row, so an emit's snapshot cannot miss it",
    file: "runtime/engine/stepKinds/wait.ts",
    edits: [{ find: "touchesOwner: true,", replace: "touchesOwner: false," }],
    guards: [EMIT],
  },
  {
    id: "handed-only-poke",
    invariant:
      "a pass takes an emit's handed event without reading only when that emit's poke is the only one since it last read the execution",
    file: "runtime/engine/pass.ts",
    edits: [
      {
        find: "if (event !== undefined && pokes === state.pokesSeen + 1) {",
        replace: "if (event !== undefined) {",
      },
    ],
    guards: ["test/runtime/handedEvents.test.ts"],
  },
  {
    id: "writing-pass-releases-slot",
    invariant: "a pass that only writes its result holds no slot a due timer needs",
    file: "runtime/engine/pass.ts",
    edits: [
      {
        find: "  // The body and its compensations are done: what is left is writing the suspend or the result.\n  services.releaseSlot?.(executionId)",
        replace: "",
      },
    ],
    guards: ["test/runtime/slotRelease.test.ts"],
  },
  {
    id: "batch-start-needs-insert",
    invariant:
      "a folded start in a batch writes past its start only if it inserted its execution: one that attaches writes nothing to the execution it found",
    file: FENCE,
    edits: [
      {
        find: "ELSE NOT f.taken AND f.generation = i.generation END)\n        ${startInserted}",
        replace: "ELSE NOT f.taken AND f.generation = i.generation END)",
      },
    ],
    guards: ["test/runtime/batchedStarts.test.ts"],
  },
]
