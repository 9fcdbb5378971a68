/**
 * Whether a handle's LISTEN/NOTIFY notifications work, as its users read it. Kept apart from the
 * listen session itself so that the storage's public declarations do not import pg's types, which
 * an application need not install (`@types/pg` is akter's own development dependency).
 */

/**
 * `unknown` until the first round trip, `working` once a self-addressed notification arrived,
 * `unavailable` when it did not (or the handle was told notifications cannot work).
 */
export type NotificationState = "unknown" | "working" | "unavailable"

export interface NotificationStatus {
  readonly state: NotificationState
  /** Why notifications are unavailable, for the one warning. */
  readonly reason?: string
}
