/**
 * The types a workflow implementation is written against. Generated builders narrow them per
 * workflow (`Order.fulfill.implement({ activities, body })`), so an implementation that misses an
 * activity, passes a wrong input or waits for an undeclared event does not compile.
 */
import type { Duration, Effect, Option } from "effect"
import type { Caller } from "../model/caller.js"
import type { OwnerRegistration } from "../model/registration.js"

/** What an activity can learn about the attempt it runs in. */
export interface ActivityContext {
  readonly executionId: string
  readonly ownerId: string
  readonly workflow: string
  readonly step: string
  /** 1 for the first attempt; each retry is a new attempt with its own recorded row. */
  readonly attempt: number
  /** The caller that started the execution; activities act on its behalf, never the runner's. */
  readonly caller: Caller
  /** Aborted when the attempt is abandoned (interrupt, drain, lost lease). */
  readonly signal: AbortSignal
  /**
   * A key stable across every rerun of this attempt (after a crash the attempt reruns with the same
   * key), for deduplicating side effects at the receiver. Dies with `ActivityOutcomeUnknown` when
   * called after the key's expiry, rather than risk a duplicate the receiver no longer dedupes.
   */
  idempotencyKey(): string
}

/** An activity returns an Effect or a Promise; a Promise rejects with a declared error to fail. */
export type ActivityReturn<O, E> = Effect.Effect<O, E> | Promise<O>

export type Activity<I, O, E> = (input: I, ctx: ActivityContext) => ActivityReturn<O, E>

export type InputlessActivity<O, E> = (ctx: ActivityContext) => ActivityReturn<O, E>

export interface WaitOptions<P> {
  /** Only events whose payload passes this pure predicate resolve the wait. */
  readonly where?: ((payload: P) => boolean) | undefined
}

export interface TimedWaitOptions<P> extends WaitOptions<P> {
  /** Overrides the manifest's timeout. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * The part of `wf` every workflow body has; the generated interface adds one method per step.
 * `Marker` is the union of the workflow's version marker names.
 */
export interface WorkflowSteps<Marker extends string = never> {
  readonly executionId: string
  readonly ownerId: string
  readonly caller: Caller
  /** The marker's value recorded when the execution started; 0 if it started before the marker. */
  version(name: Marker): Effect.Effect<number>
  /**
   * Registers `undo` for a step that completed; if the execution later fails or is interrupted,
   * the undos of every completed step run once, newest first, before the result is recorded.
   * Make the undo a step itself (an activity) and it is recorded exactly once too.
   */
  withCompensation<A, E>(
    step: Effect.Effect<A, E>,
    undo: (value: A) => Effect.Effect<unknown, unknown>,
  ): Effect.Effect<A, E>
}

export type WaitResult<P, Timed extends boolean> = Timed extends true ? Option.Option<P> : P

export interface WorkflowDefinition<I, O, E, Steps, Activities> {
  readonly activities: Activities
  readonly body: (input: I, wf: Steps) => Effect.Effect<O, E>
}

/**
 * Turns a value recorded in an earlier shape (declared under `earlier:` in the manifest) into the
 * current shape. It runs on every replay that reads the value, so it must be pure and quick: no
 * I/O, no clock, no randomness.
 */
export type Migration<Old, New> = (old: Old) => New

/** A workflow definition whose manifest declares earlier shapes: it provides their migrations too. */
export interface MigratingWorkflowDefinition<
  I,
  O,
  E,
  Steps,
  Activities,
  Migrations,
> extends WorkflowDefinition<I, O, E, Steps, Activities> {
  readonly migrations: Migrations
}

type Migrations = Readonly<Record<string, Migration<never, unknown>>>

/** The migrations of an implemented workflow, by what they migrate, then by migration name. */
export interface WorkflowMigrations {
  readonly input?: Migrations
  readonly steps?: Readonly<Record<string, Migrations>>
  readonly events?: Readonly<Record<string, Migrations>>
  /** Of declared errors' payloads: each returns the error as it is declared now. */
  readonly errors?: Readonly<Record<string, Migrations>>
}

/** An implemented workflow, ready to hand to `startRunner`. */
export interface WorkflowImplementation {
  readonly owner: OwnerRegistration
  readonly workflow: string
  readonly activities: Readonly<Record<string, (...args: never[]) => unknown>>
  readonly body: (input: never, wf: never) => Effect.Effect<unknown, unknown>
  readonly migrations: WorkflowMigrations
}

const missingMigration = (
  owner: OwnerRegistration,
  workflow: string,
  declared: Readonly<Record<string, unknown>> | undefined,
  given: Migrations | undefined,
  what: string,
): string | undefined => {
  for (const name of Object.keys(declared ?? {})) {
    if (typeof given?.[name] !== "function") {
      return `${owner.owner}.${workflow}: migration "${name}" of ${what} is declared in ${owner.source} but not implemented`
    }
  }
  return undefined
}

/**
 * Pairs a workflow's registration with its activities, body and migrations. Generated builders
 * call this; the runtime checks that every declared activity and migration is implemented (the
 * compiler already did, unless types were bypassed).
 */
export const implementWorkflow = <I, O, E, Steps, Activities>(
  owner: OwnerRegistration,
  workflow: string,
  definition: WorkflowDefinition<I, O, E, Steps, Activities> & { readonly migrations?: unknown },
): WorkflowImplementation => {
  const registration = owner.workflows[workflow]
  if (registration === undefined) {
    throw new Error(`${owner.source}: no workflow "${workflow}" in owner ${owner.owner}`)
  }
  const activities = definition.activities as Record<string, (...args: never[]) => unknown>
  for (const [name, step] of Object.entries(registration.canonical.steps)) {
    if (step.kind === "activity" && typeof activities[name] !== "function") {
      throw new Error(
        `${owner.owner}.${workflow}: activity "${name}" is declared in ${owner.source} but not implemented`,
      )
    }
  }
  const migrations = (definition.migrations ?? {}) as WorkflowMigrations
  const earlier = registration.earlier
  const missing = [
    missingMigration(owner, workflow, earlier.input, migrations.input, "the input"),
    ...Object.entries(earlier.steps ?? {}).map(([step, shapes]) =>
      missingMigration(owner, workflow, shapes, migrations.steps?.[step], `step "${step}"`),
    ),
    ...Object.entries(registration.canonical.steps).map(([step, declared]) =>
      declared.kind === "wait" && declared.event !== undefined
        ? missingMigration(
            owner,
            workflow,
            earlier.events?.[declared.event],
            migrations.events?.[declared.event],
            `event "${declared.event}" (waited for by step "${step}")`,
          )
        : undefined,
    ),
    ...Object.entries(earlier.errors ?? {}).map(([error, shapes]) =>
      missingMigration(owner, workflow, shapes, migrations.errors?.[error], `error "${error}"`),
    ),
  ].find((problem) => problem !== undefined)
  if (missing !== undefined) throw new Error(missing)
  return {
    owner,
    workflow,
    activities,
    body: definition.body as unknown as WorkflowImplementation["body"],
    migrations,
  }
}
