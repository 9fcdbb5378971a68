/**
 * Groups the step writes of concurrent passes into one statement (`writeStepBatch`): while batches
 * are in flight, the writes that arrive wait and go together in the next one. A lone write goes at
 * once, so a single execution pays nothing for the grouping; under load, one round trip and one
 * commit serve every pass that was waiting to write.
 */
import type { DatabaseClock } from "../storage/clock.js"
import type { Queryable } from "../storage/database.js"
import { writeStepBatch, type StepBatchOutcome, type StepBatchWrite } from "./stepStore.js"

/** Batches sent at once: one fills while another commits. */
const MAX_IN_FLIGHT = 2
/** The most writes one statement carries. */
const MAX_BATCH = 64

interface Waiting {
  readonly write: StepBatchWrite
  readonly resolve: (outcome: StepBatchOutcome) => void
  readonly reject: (error: unknown) => void
}

export class StepBatcher {
  private waiting: Waiting[] = []
  private inFlight = 0

  constructor(
    private readonly db: Queryable,
    private readonly clock: DatabaseClock,
    /** Finishes notify callers elsewhere that await them (Postgres). */
    private readonly notify: boolean,
  ) {}

  /** Writes `write` with whatever else is waiting; resolves once its statement committed. */
  write(write: StepBatchWrite): Promise<StepBatchOutcome> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ write, resolve, reject })
      this.send()
    })
  }

  private send(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, MAX_BATCH)
      this.inFlight += 1
      void this.run(batch).finally(() => {
        this.inFlight -= 1
        this.send()
      })
    }
  }

  private async run(batch: readonly Waiting[]): Promise<void> {
    try {
      const outcomes = await writeStepBatch(
        this.db,
        this.clock,
        batch.map((waiting) => waiting.write),
        this.notify,
      )
      batch.forEach((waiting, index) => waiting.resolve(outcomes[index]!))
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error)
        return
      }
      // Nothing of the batch committed: each write goes alone, so one that fails fails alone.
      await Promise.all(batch.map((waiting) => this.run([waiting])))
    }
  }
}
