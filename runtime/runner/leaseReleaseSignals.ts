/**
 * How runners hear that another one gave its buckets back, so they take them at once instead of at
 * their next heartbeat: in this process through the in-memory bus, and on Postgres through NOTIFY
 * on the leases channel. A missed signal costs only the wait for the next heartbeat.
 */
import type { AkterInternals } from "../akter.js"
import { LEASES_CHANNEL, sendNotification } from "../outbox/notifications.js"

/**
 * Runs `heartbeatNow` whenever a runner (of this process or another) releases its buckets; resolves
 * to how to stop hearing it in this process, and how to stop listening on Postgres.
 */
export const hearLeaseReleases = async (
  internals: AkterInternals,
  heartbeatNow: () => void,
): Promise<{ readonly stopHearing: () => void; readonly stopListening: () => Promise<void> }> => {
  const stopHearing = internals.wakeups.onLeasesReleased(heartbeatNow)
  const stopListening = await internals.storage.listen(LEASES_CHANNEL, heartbeatNow)
  return { stopHearing, stopListening }
}

/** Tells every runner that `runnerId` released its buckets (after the release committed). */
export const announceLeasesReleased = async (
  internals: AkterInternals,
  runnerId: string,
): Promise<void> => {
  if (internals.storage.backend === "postgres") {
    await sendNotification(internals.storage.db, LEASES_CHANNEL, runnerId)
  }
  internals.wakeups.leasesReleased()
}
