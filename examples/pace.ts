/**
 * How long the example workflows' clocks run. At `manifest` pace every sleep and wait timeout is the
 * manifest's own (a 10-minute cool-off, a 30-day billing period, a day to verify an email); at
 * `demo` pace the same shapes take milliseconds, so `akter demo` finishes hundreds of executions in
 * seconds. The bodies pass these durations to their steps; a due time is recorded when a step is
 * first reached, so a runner restarted at another pace never moves a clock already running.
 *
 * Retry backoffs are not paced: they are the manifest's, so only activities whose backoff is short
 * (reserve 1 s, ship 500 ms, sendVerification 200 ms) fail in the demo; a declined charge waits the
 * manifest's hours, and is shown by the tests with `akter/testing`'s clock instead.
 */
import type { Duration } from "effect"

export interface ExamplePace {
  readonly name: "manifest" | "demo"
  /** Order.fulfill `coolOff` for an order that screened clean; undefined: the manifest's. */
  readonly coolOff: Duration.Input | undefined
  /** Order.fulfill `coolOff` for an order the fraud screen flagged for review. */
  readonly reviewCoolOff: Duration.Input
  /** Order.fulfill `paid` timeout. */
  readonly paymentTimeout: Duration.Input | undefined
  /** Subscription.billingCycle `period`. */
  readonly billingPeriod: Duration.Input | undefined
  /** Subscription.billingCycle `updated` timeout (dunning: how long a new card may take). */
  readonly cardUpdateTimeout: Duration.Input | undefined
  /** User.signUp `deadline`: how long the verification email stays valid. */
  readonly verificationDeadline: Duration.Input | undefined
  /** User.signUp `profile` timeout. */
  readonly profileTimeout: Duration.Input | undefined
}

export const manifestPace: ExamplePace = {
  name: "manifest",
  coolOff: undefined,
  reviewCoolOff: "1 hour",
  paymentTimeout: undefined,
  billingPeriod: undefined,
  cardUpdateTimeout: undefined,
  verificationDeadline: undefined,
  profileTimeout: undefined,
}

export const demoPace: ExamplePace = {
  name: "demo",
  coolOff: "300 millis",
  reviewCoolOff: "1200 millis",
  paymentTimeout: "4 seconds",
  billingPeriod: "800 millis",
  cardUpdateTimeout: "2 seconds",
  // Far longer than the demo's verification emails take, even with a runner killed in between: a
  // race replayed after both branches became ready may go either way, and the demo's plan expects
  // every emailed verification to win.
  verificationDeadline: "15 seconds",
  profileTimeout: "1500 millis",
}

/** The pace `AKTER_EXAMPLE_PACE` names (`demo` or `manifest`, the default). */
export const paceFromEnvironment = (value = process.env["AKTER_EXAMPLE_PACE"]): ExamplePace => {
  if (value === undefined || value === "" || value === "manifest") return manifestPace
  if (value === "demo") return demoPace
  throw new Error(`AKTER_EXAMPLE_PACE must be demo or manifest, not ${JSON.stringify(value)}`)
}
