import { createHash } from "node:crypto"
import { canonicalJson } from "./canonicalJson.js"

/** Prefix of every akter hash: the hash format version and the algorithm. */
export const HASH_PREFIX = "akter1:sha256:"

/** A hash as akter prints and stores it, e.g. `akter1:sha256:9f86d0…`. */
export type Hash = `akter1:sha256:${string}`

/** Hashes the canonical JSON of a value. Equal JSON data gives equal hashes, whatever the key order. */
export const hashOf = (value: unknown): Hash =>
  `${HASH_PREFIX}${createHash("sha256").update(canonicalJson(value)).digest("hex")}`

export const isHash = (text: string): text is Hash => /^akter1:sha256:[0-9a-f]{64}$/.test(text)
