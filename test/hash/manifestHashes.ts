/**
 * Helpers for the hash tests: load YAML text through the real loader and flatten every hash of the
 * resulting manifest into one record, so a test can compare which fingerprints moved.
 */
import { expect } from "vitest"
import { loadManifestSources } from "../../codegen/manifest/loadManifests.js"
import { canonicalOwner, ownerHash, workflowHashes } from "../../runtime/model/canonicalManifest.js"

/** `owner`, `fulfill.compatibility`, `fulfill.input`, `fulfill.output`, `fulfill.step.reserve`, … */
export const hashesOf = (text: string): Record<string, string> => {
  const { manifests, diagnostics } = loadManifestSources([{ file: "manifests/shop.yaml", text }])
  expect(diagnostics).toEqual([])
  const canonical = canonicalOwner(manifests[0]!.manifest)
  const hashes: Record<string, string> = { owner: ownerHash(canonical) }
  for (const [name, workflow] of Object.entries(canonical.workflows)) {
    const { compatibility, input, output, steps } = workflowHashes(workflow)
    hashes[`${name}.compatibility`] = compatibility
    hashes[`${name}.input`] = input
    hashes[`${name}.output`] = output
    for (const [step, hash] of Object.entries(steps)) hashes[`${name}.step.${step}`] = hash
  }
  return hashes
}

/** The names whose hash differs between the two, including names only one of them has. */
export const movedHashes = (
  before: Record<string, string>,
  after: Record<string, string>,
): string[] =>
  [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((name) => before[name] !== after[name])
    .sort()

/** `text` with `from` replaced by `to`; `from` must occur exactly once, so an edit cannot miss. */
export const edit = (text: string, from: string, to: string): string => {
  const at = text.indexOf(from)
  expect(at, `"${from}" occurs in the manifest`).toBeGreaterThanOrEqual(0)
  expect(text.indexOf(from, at + 1), `"${from}" occurs once`).toBe(-1)
  return text.slice(0, at) + to + text.slice(at + from.length)
}

/** A manifest using every step kind, named types, events waited on by two workflows, and markers. */
export const SHOP = `akter: 1
owner: Shop
description: A shop that fulfils and refunds orders.
types:
  Money:
    description: An amount in minor units.
    amount: integer
    currency:
      enum: [USD, EUR]
  Sku:
    type: string
    description: A stock keeping unit.
events:
  Paid:
    paymentId: string
    amount: Money
  Cancelled:
    reason?: string
  Audited:
    by: string
workflows:
  fulfill:
    description: Reserve, wait for payment, ship.
    input:
      orderId: string
      total: Money
      skus: "Sku[]"
    output:
      trackingId: string
    errors:
      OutOfStock:
        sku: Sku
      Fraud: {}
    key: orderId
    versions:
      fraudCheck:
        min: 0
        current: 1
    steps:
      reserve:
        kind: activity
        input:
          skus: "Sku[]"
        output:
          reservationId: string
        errors: [OutOfStock]
        retry:
          attempts: 5
          initial: 1s
        timeout: 30s
      coolOff:
        kind: sleep
        duration: 10m
      paid:
        kind: wait
        event: Paid
        timeout: 1d
      first:
        kind: race
        output:
          winner:
            enum: [paid, cancelled]
      refundLater:
        kind: start
        workflow: refund
  refund:
    input:
      orderId: string
      amount: Money
    steps:
      cancelled:
        kind: wait
        event: Cancelled
      paidBack:
        kind: wait
        event: Paid
      pay:
        kind: activity
        input:
          amount: Money
        output:
          refundId: string
`
