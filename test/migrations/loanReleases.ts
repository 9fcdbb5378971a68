/**
 * Three releases of a loan workflow whose recorded data changes shape incompatibly, for the tests
 * of migrations of recorded data (test/fixtures/migrations/loan/v1..v3.yaml): release 2 changes the
 * `quote` activity's output from `{ limitCents }` to `{ limit: Amount }` with a migration; release 3
 * also changes the `Approved` event's payload and the workflow's input, each with a migration from
 * release 1's shape, and the payload of the `Flagged` error the `screen` activity fails with (from
 * `{ score }` to `{ risk: { score } }`). Every execution records its quote, then a `Flagged`
 * failure of `screen` that the body catches, then waits for `Approved` and for `Signed`, so a test
 * decides where an execution is suspended when the next release's runner takes it over.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import {
  implementWorkflow,
  type ActivityContext,
  type OwnerRegistration,
  type WorkflowImplementation,
} from "../../runtime/index.js"
import { registrationFromYaml } from "../support/registrationFromYaml.js"

export type LoanVersion = 1 | 2 | 3

export const LOAN_FILE = "manifests/loan.yaml"

export const loanYaml = (version: LoanVersion): string =>
  readFileSync(new URL(`../fixtures/migrations/loan/v${version}.yaml`, import.meta.url), "utf8")

export interface LoanRelease {
  readonly version: LoanVersion
  readonly registration: OwnerRegistration
  readonly apply: WorkflowImplementation
}

// Bodies are written against the untyped `wf`: these workflows have no generated SDK.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Wf = any

interface Amount {
  readonly value: number
  readonly currency: string
}

/** Release 1's shapes, which releases 2 and 3 migrate from. */
interface QuoteV1 {
  readonly limitCents: number
}
interface ApprovedV1 {
  readonly approver: string
}
interface InputV1 {
  readonly applicant: string
}
interface FlaggedV1 {
  readonly score: number
}

/** The score `screen` flags every application with. */
const SCORE = 7

const cents = (amount: Amount) => Math.round(amount.value * 100)

/** The summary every release returns, so a test can compare what each read. */
const summary = (
  applicant: string,
  limitCents: number,
  score: number,
  approver: string,
  signer: string,
) =>
  `${applicant}: ${limitCents} cents, flagged at ${score}, approved by ${approver}, signed by ${signer}`

const bodyOf =
  (version: LoanVersion) =>
  (input: unknown, wf: Wf): Effect.Effect<unknown, unknown> =>
    Effect.gen(function* () {
      const quote = yield* wf.quote()
      const flagged = yield* (wf.screen() as Effect.Effect<never, { _tag: "Flagged" }>).pipe(
        Effect.catchTag("Flagged", (error) => Effect.succeed(error)),
      )
      const score =
        version === 3
          ? (flagged as unknown as { risk: { score: number } }).risk.score
          : (flagged as unknown as FlaggedV1).score
      const approved = yield* wf.approved()
      const signed = yield* wf.signed()
      const limitCents =
        version === 1 ? (quote as QuoteV1).limitCents : cents((quote as { limit: Amount }).limit)
      const approver =
        version === 3
          ? (approved as { by: { name: string } }).by.name
          : (approved as ApprovedV1).approver
      const applicant =
        version === 3
          ? (input as { applicant: { name: string } }).applicant.name
          : (input as InputV1).applicant
      return { summary: summary(applicant, limitCents, score, approver, signed.by as string) }
    }) as Effect.Effect<unknown, unknown>

/** What each release's `quote` activity returns for a limit of 1234.5. */
const quoteOf = (version: LoanVersion, onQuote?: (ctx: ActivityContext) => void) => {
  const quote = (ctx: ActivityContext) => {
    onQuote?.(ctx)
    return Promise.resolve(
      version === 1 ? { limitCents: 123_450 } : { limit: { value: 1234.5, currency: "EUR" } },
    )
  }
  return quote
}

/** What each release's `screen` activity fails with: the declared error `Flagged`. */
const screenOf = (version: LoanVersion, registration: OwnerRegistration) => {
  const Flagged = registration.workflows["apply"]!.errors["Flagged"]!
  return () =>
    Promise.reject(
      new Flagged((version === 3 ? { risk: { score: SCORE } } : { score: SCORE }) as never),
    )
}

const migrationsOf = (version: LoanVersion, registration: OwnerRegistration) => {
  if (version === 1) return {}
  const steps = {
    quote: { v1: (old: QuoteV1) => ({ limit: { value: old.limitCents / 100, currency: "EUR" } }) },
  }
  if (version === 2) return { steps }
  const Flagged = registration.workflows["apply"]!.errors["Flagged"]!
  return {
    steps,
    input: { v1: (old: InputV1) => ({ applicant: { name: old.applicant } }) },
    events: { Approved: { v1: (old: ApprovedV1) => ({ by: { name: old.approver } }) } },
    errors: {
      Flagged: { v1: (old: FlaggedV1) => new Flagged({ risk: { score: old.score } } as never) },
    },
  }
}

/**
 * The registration and the `apply` implementation of one release of the loan manifest; `onQuote`
 * sees every run of the `quote` activity (a runner process journals it).
 */
export const loan = async (
  version: LoanVersion,
  onQuote?: (ctx: ActivityContext) => void,
): Promise<LoanRelease> => {
  const registration = await registrationFromYaml(loanYaml(version), LOAN_FILE)
  const apply = implementWorkflow(registration, "apply", {
    activities: { quote: quoteOf(version, onQuote), screen: screenOf(version, registration) },
    body: bodyOf(version),
    migrations: migrationsOf(version, registration),
  })
  return { version, registration, apply }
}

/** The summary an application started with `applicant` ends with, as release 3 reads it. */
export const expectedSummary = (applicant: string, approver: string, signer: string) =>
  summary(applicant, 123_450, SCORE, approver, signer)
