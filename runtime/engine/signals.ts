/**
 * Defects the engine raises inside a body to end it for its own reasons. They are never recorded:
 * the pass recognizes them in the body's exit and acts (runs compensations, abandons).
 */

/** The execution is being interrupted: the first step that would do new work ends the body here. */
export class InterruptRequested extends Error {
  constructor() {
    super("execution interrupted")
    this.name = "InterruptRequested"
  }
}

/** The pass lost the right to write (stale generation, failed write, drain): stop, record nothing. */
export class PassAbandoned extends Error {
  constructor(readonly reason: string) {
    super(`pass abandoned: ${reason}`)
    this.name = "PassAbandoned"
  }
}

/** A recorded `Die` replays as this defect, carrying the recorded message. */
export class RecordedDefect extends Error {
  constructor(message: string) {
    super(message)
    this.name = "RecordedDefect"
  }
}
