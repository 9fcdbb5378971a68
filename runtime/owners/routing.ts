/**
 * Where an owner's rows live: its routing key, a signed 64-bit hash of its identity that leads every
 * row of the owner, and its bucket, the top 8 bits of that key shifted to 0..255 — the unit runners
 * lease.
 */
import { createHash } from "node:crypto"
import type { RoutingKey } from "../storage/database.js"

export const BUCKET_COUNT = 256

export interface OwnerIdentity {
  readonly tenant: string
  readonly ownerType: string
  readonly ownerId: string
}

export interface OwnerPlacement extends OwnerIdentity {
  readonly routingKey: RoutingKey
  readonly bucket: number
}

const ROUTING_FORMAT = 1

export const routingKeyOf = (owner: OwnerIdentity): bigint => {
  const digest = createHash("sha256")
    .update(JSON.stringify([ROUTING_FORMAT, owner.tenant, owner.ownerType, owner.ownerId]))
    .digest()
  return digest.readBigInt64BE(0)
}

/** Matches the CHECK on every table: `bucket = (routing_key >> 56) + 128`. */
export const bucketOf = (routingKey: bigint): number => Number((routingKey >> 56n) + 128n)

export const placeOwner = (owner: OwnerIdentity): OwnerPlacement => {
  const key = routingKeyOf(owner)
  return {
    tenant: owner.tenant,
    ownerType: owner.ownerType,
    ownerId: owner.ownerId,
    routingKey: key.toString(),
    bucket: bucketOf(key),
  }
}
