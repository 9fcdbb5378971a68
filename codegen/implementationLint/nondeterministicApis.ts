/**
 * The calls a replayed body must not make, by where their name comes from: a global the program
 * does not declare (`Date`, `Math`, `fetch`), or an import of a module specifier (`node:crypto`,
 * `node:fs`, effect's `Clock` and `Random`). Each answers differently on a replay, so a body that
 * branches on one may take another path than the one its recorded steps followed.
 */

/** Where a name used in a body comes from, outside the project. */
export type NameOrigin =
  | { readonly kind: "global"; readonly name: string }
  /** `name` is the imported export, `*` for a namespace import, `default` for a default import. */
  | { readonly kind: "import"; readonly module: string; readonly name: string }

/** Why a use is nondeterministic, completing "`Date.now()` …". */
export type Reason = string

const CLOCK = "reads the clock, which a replay reads again and finds later"
const RANDOM = "is random, and a replay draws another value"
const ENVIRONMENT = "reads the process environment, which may differ on the runner that replays it"
const NETWORK = "does network I/O, whose answer may differ on a replay"
const PROCESS_IO = "does I/O outside the workflow's steps, which a replay does again"
const FILE_IO = "does file I/O, whose answer may differ on a replay (and which a replay repeats)"
const TIMER =
  "schedules a timer outside the workflow's steps, which neither survives a restart nor replays"
const HOST = "reads the state of this process, which differs on the runner that replays it"

const GLOBAL_MEMBERS: Readonly<Record<string, Readonly<Record<string, Reason>>>> = {
  Date: { now: CLOCK },
  Math: { random: RANDOM },
  crypto: { randomUUID: RANDOM, getRandomValues: RANDOM },
  performance: { now: CLOCK, timeOrigin: CLOCK },
  process: {
    env: ENVIRONMENT,
    hrtime: CLOCK,
    uptime: CLOCK,
    cpuUsage: HOST,
    memoryUsage: HOST,
  },
}

const GLOBAL_FUNCTIONS: Readonly<Record<string, Reason>> = {
  fetch: NETWORK,
  setTimeout: TIMER,
  setInterval: TIMER,
  setImmediate: TIMER,
}

const EVERY_NAME = "*"

/** Per module (without `node:`): reasons by exported name; `*` covers every name. */
const MODULE_EXPORTS: Readonly<Record<string, Readonly<Record<string, Reason>>>> = {
  crypto: {
    randomUUID: RANDOM,
    randomBytes: RANDOM,
    randomInt: RANDOM,
    randomFill: RANDOM,
    randomFillSync: RANDOM,
    getRandomValues: RANDOM,
    webcrypto: RANDOM,
  },
  fs: { [EVERY_NAME]: FILE_IO },
  "fs/promises": { [EVERY_NAME]: FILE_IO },
  timers: { setTimeout: TIMER, setInterval: TIMER, setImmediate: TIMER },
  "timers/promises": { [EVERY_NAME]: TIMER },
  http: { [EVERY_NAME]: NETWORK },
  https: { [EVERY_NAME]: NETWORK },
  http2: { [EVERY_NAME]: NETWORK },
  net: { [EVERY_NAME]: NETWORK },
  dgram: { [EVERY_NAME]: NETWORK },
  dns: { [EVERY_NAME]: NETWORK },
  "dns/promises": { [EVERY_NAME]: NETWORK },
  child_process: { [EVERY_NAME]: PROCESS_IO },
  "effect/Clock": { [EVERY_NAME]: CLOCK },
  "effect/Random": { [EVERY_NAME]: RANDOM },
  "effect/DateTime": { now: CLOCK, nowAsDate: CLOCK, nowUnsafe: CLOCK, nowInCurrentZone: CLOCK },
}

/** Namespaces a module exports by name: `import { Clock } from "effect"` is `effect/Clock`. */
const MODULE_NAMESPACES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  effect: { Clock: "effect/Clock", Random: "effect/Random", DateTime: "effect/DateTime" },
  perf_hooks: { performance: "performance" },
  crypto: { webcrypto: "crypto" },
}

const moduleName = (specifier: string) =>
  specifier.startsWith("node:") ? specifier.slice("node:".length) : specifier

const reasonIn = (table: Readonly<Record<string, Reason>> | undefined, name: string) =>
  table === undefined ? undefined : (table[name] ?? table[EVERY_NAME])

/** What a namespace-like origin stands for: a module (`fs`), or a global object (`performance`). */
const namespaceOf = (
  origin: NameOrigin,
): { readonly module: string } | { readonly global: string } | undefined => {
  if (origin.kind === "global") return { global: origin.name }
  const module = moduleName(origin.module)
  if (origin.name === "*" || origin.name === "default") return { module }
  const target = MODULE_NAMESPACES[module]?.[origin.name]
  if (target === undefined) return undefined
  return target in GLOBAL_MEMBERS ? { global: target } : { module: target }
}

/**
 * Why using `origin` itself (calling it, or passing it on) is nondeterministic, if it is:
 * `fetch`, `setTimeout`, `randomUUID` imported from `node:crypto`, any export of `node:fs`.
 *
 * @example
 * directUseReason({ kind: "import", module: "node:crypto", name: "randomUUID" }) // "is random, …"
 */
export const directUseReason = (origin: NameOrigin): Reason | undefined => {
  if (origin.kind === "global") return GLOBAL_FUNCTIONS[origin.name]
  if (origin.name === "*" || origin.name === "default") return undefined
  const module = moduleName(origin.module)
  if (MODULE_NAMESPACES[module]?.[origin.name] !== undefined) return undefined
  return reasonIn(MODULE_EXPORTS[module], origin.name)
}

/**
 * Why `origin.member` is nondeterministic, if it is: `Date.now`, `Math.random`, `process.env`,
 * `fs.readFileSync` of `import * as fs from "node:fs"`, `Clock.currentTimeMillis` of effect.
 *
 * @example
 * memberUseReason({ kind: "global", name: "Date" }, "now") // "reads the clock, …"
 */
export const memberUseReason = (origin: NameOrigin, member: string): Reason | undefined => {
  const namespace = namespaceOf(origin)
  if (namespace === undefined) return undefined
  if ("global" in namespace) return GLOBAL_MEMBERS[namespace.global]?.[member]
  return reasonIn(MODULE_EXPORTS[namespace.module], member)
}

/** `new Date()` and `Date()` without arguments read the clock. */
export const dateWithoutArgumentsReason = (origin: NameOrigin): Reason | undefined =>
  origin.kind === "global" && origin.name === "Date" ? CLOCK : undefined

/**
 * Whether `origin.member` runs a plain Promise in an Effect: effect's `Effect.promise` and
 * `Effect.tryPromise`.
 *
 * @example
 * runsPromise({ kind: "import", module: "effect", name: "Effect" }, "promise") // true
 */
export const runsPromise = (origin: NameOrigin, member: string): boolean => {
  if (member !== "promise" && member !== "tryPromise") return false
  if (origin.kind !== "import") return false
  const module = moduleName(origin.module)
  return (
    (module === "effect" && origin.name === "Effect") ||
    (module === "effect/Effect" && (origin.name === "*" || origin.name === "default"))
  )
}
