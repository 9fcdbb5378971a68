/**
 * `akter run test/migrations/loanApp.ts`: one release of the loan workflow as a runner process
 * serves it, the release chosen by `LOAN_RELEASE` (1, 2 or 3); every run of its `quote` activity is
 * journalled, so a test can tell which process ran it.
 */
import { journalRun } from "../support/activityJournal.js"
import { loan, type LoanVersion } from "./loanReleases.js"

const version = Number(process.env["LOAN_RELEASE"])
if (version !== 1 && version !== 2 && version !== 3) {
  throw new Error(`LOAN_RELEASE must be 1, 2 or 3, not ${process.env["LOAN_RELEASE"]}`)
}

const release = await loan(version as LoanVersion, (ctx) => void journalRun(ctx))

export const registration = release.registration
export const workflows = [release.apply]
