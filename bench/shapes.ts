/**
 * The workflow shapes of issue 8, with the parameters every side runs them at, and what a trial
 * reports back. akter's trial (`akterTrial.ts`) and the peers' (`peers/dbosTrial.ts`,
 * `peers/restateTrial.ts`) implement the same shapes from these numbers; `run.ts` runs them
 * alternately and compares.
 */

export type ShapeId = "a" | "b" | "c" | "d" | "e" | "f" | "g" | "h" | "i" | "r"

export const SHAPE_IDS: readonly ShapeId[] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "r"]

/** Shapes only akter runs (each has a trial file of its own): no peer column. */
export const AKTER_ONLY: ReadonlySet<ShapeId> = new Set(["h", "r"])

/**
 * The shapes Restate runs: a–e. f measures the trial process's memory, but Restate keeps parked
 * invocations in its server, not in the process that runs the handlers; g counts Postgres
 * statements, which Restate does not send (it keeps its own log); i is not written for it yet.
 */
export const RESTATE_SHAPES: ReadonlySet<ShapeId> = new Set(["a", "b", "c", "d", "e"])

export const SHAPES = {
  /**
   * One 3-activity workflow at a time: latency from start to result. The warm-up is long enough
   * for V8 to have compiled the hot code (with 25, akter's p50 came out 1.0 and 2.7 ms higher than
   * with 400 in two alternations).
   */
  a: { title: "3 activities, one at a time", workflows: 500, warmup: 300 },
  /** Many 3-activity workflows, a fixed number in flight (each client loop starts, awaits, repeats). */
  b: { title: "3 activities, concurrency 32", workflows: 2000, concurrency: 32, warmup: 64 },
  /**
   * Long workflows of sequential activities, and short ones, timed start to result: the median of
   * `longRuns` and of `shortRuns`, after `warmup` short and `warmupLong` long ones untimed (with one
   * long warm-up, V8 was still compiling during the timed run and its threads doubled the Node CPU
   * per step).
   */
  c: {
    title: "sequential activities",
    long: 200,
    short: 20,
    longRuns: 3,
    shortRuns: 5,
    warmup: 2,
    warmupLong: 10,
  },
  /** A workflow parked on an event: latency from the emit to the code after the wait. */
  d: { title: "emit → wait wake-up", samples: 200, warmup: 10 },
  /** Durable sleeps of 1 s started together: how late the code after each sleep runs. */
  e: { title: "1,000 sleeps of 1 s", sleeps: 1000, sleepMs: 1000, startConcurrency: 32 },
  /** Executions parked on an event that never comes: the runner's memory growth. */
  f: { title: "10,000 suspended executions", executions: 10_000, startConcurrency: 64 },
  /** Statements and commits, counted, for 3-, 20- and 200-activity workflows one at a time. */
  g: { title: "SQL per activity step", steps: [3, 20, 200] as const, runs: 3 },
  /**
   * Shapes a and b again with finished executions (and their owners' events) retained, bulk
   * inserted between measurements, then with a retention sweep deleting them during the run.
   */
  h: { title: "a and b as history grows", retained: [0, 1_000_000] as readonly number[] },
  /** One execution starting children (one activity each) and awaiting them all. */
  i: { title: "fan-out: 1,000 awaited children", children: 1000, warmup: 10 },
  /** Shape b's closed loop against 1, 2 and 4 runner processes sharing concurrency 32. */
  r: {
    title: "3 activities, concurrency 32, over 1/2/4 runner processes",
    workflows: 2000,
    concurrency: 32,
    /**
     * Untimed workflows per runner process before each count is measured (divided by `--scale`).
     * V8 is still compiling the engine's hot code for the first few thousand workflows a process
     * runs; with a fixed warm-up, each of four runners would get a quarter of it and be measured
     * colder than one runner is.
     */
    warmupPerRunner: 4000,
    runnerCounts: [1, 2, 4] as readonly number[],
    /** Executions asleep (timers an hour ahead) for the last measurement, one runner again. */
    sleeping: 100_000,
    /** One runner under the closed loop for `seconds` (divided by `--scale`), per window. */
    sustained: { seconds: 120, windowSeconds: 10 },
  },
} as const

export type System = "akter" | "dbos" | "restate"

/** Whether `system` runs `shape` at all (otherwise its column is null for that shape). */
export const runsShape = (system: System, shape: ShapeId): boolean =>
  system === "akter" ||
  (system === "dbos" && !AKTER_ONLY.has(shape)) ||
  (system === "restate" && RESTATE_SHAPES.has(shape))

export interface TrialRequest {
  readonly shape: ShapeId
  /** The trial's own Postgres database; empty for Restate, which keeps its own log. */
  readonly databaseUrl: string
  /** Shrinks every count by this factor (a quick smoke run); 1 for real measurements. */
  readonly scale: number
  /** Where to write a CPU profile of the trial's main window (shapes a, b, c), if anywhere. */
  readonly profileFile?: string
  /** Shape h: the finished executions to retain, in increasing order (default `SHAPES.h.retained`). */
  readonly retained?: readonly number[]
}

/** The activities a workflow of `steps` steps runs, named the same on both sides. */
export const stepName = (index: number) => `s${index + 1}`

export const scaled = (count: number, scale: number) => Math.max(1, Math.round(count / scale))

/** What one trial measured: named figures, plus optional detail for the report. */
export interface TrialResult {
  readonly shape: ShapeId
  readonly system: System
  readonly metrics: Readonly<Record<string, number>>
  readonly detail?: unknown
}
