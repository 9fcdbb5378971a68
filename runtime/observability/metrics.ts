/**
 * akter's metrics, kept per handle in an Effect metric registry: what `prometheusMetrics(akter)`
 * renders for a scrape and what the OTLP exporter of `createAkter({ telemetry })` sends. Recording
 * is a synchronous update of an in-memory series, made where the event happens:
 *
 * - `akter_executions_started_total{owner_type, workflow}`: starts that created an execution
 *   (clients and relayed `start` steps; a start that attached counts nothing);
 * - `akter_executions_finished_total{owner_type, workflow, outcome}`: results recorded, by
 *   `succeeded`, `failed`, `interrupted` or `defect`;
 * - `akter_activity_duration_seconds{owner_type, workflow, step, outcome}`: how long each activity
 *   attempt's code ran, `success` or `failure` (a replayed step runs nothing and records nothing);
 * - `akter_timer_lag_seconds`: how late a runner claimed each due timer, by the database clock;
 * - `akter_lease_changes_total{change}`: bucket leases `acquired` and `lost` by this process's runners;
 * - gauges read at scrape time: `akter_runners` (live runners in the database, as this process's
 *   last heartbeat counted them), `akter_runner_buckets` (buckets this process's runners lease) and
 *   `akter_runner_passes` (passes running in this process).
 */
import * as Context from "effect/Context"
import * as Metric from "effect/Metric"
import { outcomeOf } from "../inspect/storedValues.js"
import type { StoredResult } from "../model/exit.js"

const SECONDS = Metric.boundariesFromIterable([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
])

const startedTotal = (attributes: Metric.Metric.AttributeSet) =>
  Metric.counter("akter_executions_started_total", {
    description:
      "Executions created by a start of this process (an attaching start counts nothing)",
    incremental: true,
    attributes,
  })
const finishedTotal = (attributes: Metric.Metric.AttributeSet) =>
  Metric.counter("akter_executions_finished_total", {
    description: "Execution results this process's runners recorded, by outcome",
    incremental: true,
    attributes,
  })
const activityDuration = (attributes: Metric.Metric.AttributeSet) =>
  Metric.histogram("akter_activity_duration_seconds", {
    description: "How long each activity attempt's code ran, by outcome",
    boundaries: SECONDS,
    attributes,
  })
const timerLag = Metric.histogram("akter_timer_lag_seconds", {
  description: "How late this process's runners claimed due timers (database clock)",
  boundaries: SECONDS,
})
const leaseChanges = (attributes: Metric.Metric.AttributeSet) =>
  Metric.counter("akter_lease_changes_total", {
    description: "Bucket leases acquired and lost by this process's runners",
    incremental: true,
    attributes,
  })
const runnersAlive = Metric.gauge("akter_runners", {
  description: "Live runners in the database, as this process's last lease heartbeat counted them",
})
const runnerBuckets = Metric.gauge("akter_runner_buckets", {
  description: "Buckets leased by this process's runners",
})
const runnerPasses = Metric.gauge("akter_runner_passes", {
  description: "Passes running in this process",
})

/** A metric of one name, made for one set of attributes. */
type MetricOf = (attributes: Metric.Metric.AttributeSet) => Metric.Metric<number, unknown>

/** What a runner tells the gauges, read at each scrape or export. */
export interface RunnerGauges {
  readonly runnersAlive: () => number
  readonly buckets: () => number
  readonly passes: () => number
}

export class AkterMetrics {
  /** The registry, in the context Effect's exporters and formatters read metrics from. */
  readonly context = Context.make(Metric.MetricRegistry, new Map())
  private readonly runners = new Set<RunnerGauges>()
  /**
   * One metric per attribute set, made once: a metric keys its series by its attributes when first
   * updated and keeps the key, where `Metric.withAttributes` recomputed it (sorting and
   * serializing the attributes) on every update — on the path of every activity attempt.
   */
  private readonly made = new Map<MetricOf, Map<string, Metric.Metric<number, unknown>>>()

  constructor() {
    const sum = (read: (gauges: RunnerGauges) => number) => () => ({
      value: [...this.runners].reduce((total, gauges) => total + read(gauges), 0),
    })
    const hooks = (get: () => { value: number }) => ({ get, update: () => {}, modify: () => {} })
    Metric.registerUnsafe(
      runnersAlive,
      this.context,
      hooks(() => ({
        value: Math.max(0, ...[...this.runners].map((gauges) => gauges.runnersAlive())),
      })),
    )
    Metric.registerUnsafe(runnerBuckets, this.context, hooks(sum((gauges) => gauges.buckets())))
    Metric.registerUnsafe(runnerPasses, this.context, hooks(sum((gauges) => gauges.passes())))
  }

  executionStarted(ownerType: string, workflow: string): void {
    this.series(startedTotal, { owner_type: ownerType, workflow }).updateUnsafe(1, this.context)
  }

  executionFinished(ownerType: string, workflow: string, result: StoredResult): void {
    this.series(finishedTotal, {
      owner_type: ownerType,
      workflow,
      outcome: outcomeOf(result),
    }).updateUnsafe(1, this.context)
  }

  activityAttempt(
    ownerType: string,
    workflow: string,
    step: string,
    succeeded: boolean,
    seconds: number,
  ): void {
    this.series(activityDuration, {
      owner_type: ownerType,
      workflow,
      step,
      outcome: succeeded ? "success" : "failure",
    }).updateUnsafe(seconds, this.context)
  }

  timerClaimed(lagMs: number): void {
    timerLag.updateUnsafe(Math.max(0, lagMs) / 1000, this.context)
  }

  leasesChanged(acquired: number, lost: number): void {
    if (acquired > 0) {
      this.series(leaseChanges, { change: "acquired" }).updateUnsafe(acquired, this.context)
    }
    if (lost > 0) this.series(leaseChanges, { change: "lost" }).updateUnsafe(lost, this.context)
  }

  private series(make: MetricOf, attributes: Metric.Metric.AttributeSet) {
    let made = this.made.get(make)
    if (made === undefined) {
      made = new Map()
      this.made.set(make, made)
    }
    // Each caller passes its attributes in one order, so the values alone tell the sets apart.
    const key = Object.values(attributes).join("\u0000")
    let metric = made.get(key)
    if (metric === undefined) {
      metric = make(attributes)
      made.set(key, metric)
    }
    return metric
  }

  /** Adds a runner's gauges to the process's; the returned function removes them. */
  addRunner(gauges: RunnerGauges): () => void {
    this.runners.add(gauges)
    return () => {
      this.runners.delete(gauges)
    }
  }
}
