/**
 * Execution ids: a canonical, reversible encoding of who an execution belongs to and what it is —
 * `ak1.` followed by base64url of the JSON array `[tenant, ownerType, ownerId, workflow, key]`. The
 * id routes to its owner without a lookup, and decoding accepts only the exact string encoding
 * would produce, so two different strings never name the same execution.
 */
import { InvalidExecutionId, InvalidExecutionKey, MAX_KEY_BYTES } from "../errors.js"

export const EXECUTION_ID_PREFIX = "ak1."

/** Bounds of the parts, in UTF-8 bytes. */
export const MAX_TENANT_BYTES = 128
export const MAX_OWNER_ID_BYTES = 256
export const MAX_EXECUTION_ID_LENGTH = 1400

export interface ExecutionAddress {
  readonly tenant: string
  readonly ownerType: string
  readonly ownerId: string
  readonly workflow: string
  readonly key: string
}

const utf8Bytes = (text: string) => Buffer.byteLength(text, "utf8")

/**
 * Whether a part can be stored as Postgres text exactly as given: it survives a UTF-8 round trip
 * (no lone surrogates, which would be replaced) and holds no NUL (which text cannot hold).
 */
export const isStorableText = (text: string) =>
  !text.includes("\0") && Buffer.from(text, "utf8").toString("utf8") === text

/** Owner types and workflows are manifest names (DESIGN §2): an id naming anything else is not ours. */
const MANIFEST_NAME = /^[A-Za-z][A-Za-z0-9]*$/

/** What makes `text` unstorable, with the UTF-16 index where it is; undefined when storable. */
const unstorablePart = (text: string): string | undefined => {
  const nul = text.indexOf("\0")
  if (nul >= 0) return `holds a NUL character at index ${nul}`
  const surrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.exec(
    text,
  )
  return surrogate === null ? undefined : `holds a lone surrogate at index ${surrogate.index}`
}

/** Checks an execution key; the start is refused before anything is written. */
export const checkExecutionKey = (key: string): InvalidExecutionKey | undefined => {
  const bytes = utf8Bytes(key)
  if (bytes === 0 || bytes > MAX_KEY_BYTES) return new InvalidExecutionKey(bytes)
  const problem = unstorablePart(key)
  return problem === undefined ? undefined : new InvalidExecutionKey(bytes, problem)
}

export const encodeExecutionId = (address: ExecutionAddress): string =>
  EXECUTION_ID_PREFIX +
  Buffer.from(
    JSON.stringify([
      address.tenant,
      address.ownerType,
      address.ownerId,
      address.workflow,
      address.key,
    ]),
    "utf8",
  ).toString("base64url")

const BASE64URL = /^[A-Za-z0-9_-]*$/

/** Decodes an id, or says precisely why it is not one akter issued. */
export const decodeExecutionId = (id: unknown): ExecutionAddress | InvalidExecutionId => {
  // Not `String(id)`: an object without a prototype, or with a throwing toString, would throw.
  if (typeof id !== "string") return new InvalidExecutionId(`(${typeof id})`, "not a string")
  if (id.length > MAX_EXECUTION_ID_LENGTH) {
    return new InvalidExecutionId(id, `longer than ${MAX_EXECUTION_ID_LENGTH} characters`)
  }
  if (!id.startsWith(EXECUTION_ID_PREFIX)) {
    return new InvalidExecutionId(id, `does not start with "${EXECUTION_ID_PREFIX}"`)
  }
  const body = id.slice(EXECUTION_ID_PREFIX.length)
  if (!BASE64URL.test(body)) return new InvalidExecutionId(id, "not base64url")
  let parts: unknown
  try {
    parts = JSON.parse(Buffer.from(body, "base64url").toString("utf8"))
  } catch {
    return new InvalidExecutionId(id, "does not decode to JSON")
  }
  if (
    !Array.isArray(parts) ||
    parts.length !== 5 ||
    !parts.every((part) => typeof part === "string" && part.length > 0)
  ) {
    return new InvalidExecutionId(id, "does not hold five non-empty strings")
  }
  const [tenant, ownerType, ownerId, workflow, key] = parts as [
    string,
    string,
    string,
    string,
    string,
  ]
  if (!parts.every(isStorableText)) {
    return new InvalidExecutionId(id, "holds a lone surrogate or a NUL character")
  }
  if (!MANIFEST_NAME.test(ownerType) || !MANIFEST_NAME.test(workflow)) {
    return new InvalidExecutionId(id, "owner type or workflow is not a manifest name")
  }
  if (utf8Bytes(tenant) > MAX_TENANT_BYTES) return new InvalidExecutionId(id, "tenant too long")
  if (utf8Bytes(ownerId) > MAX_OWNER_ID_BYTES)
    return new InvalidExecutionId(id, "owner id too long")
  if (checkExecutionKey(key) !== undefined) return new InvalidExecutionId(id, "key out of bounds")
  const address = { tenant, ownerType, ownerId, workflow, key }
  if (encodeExecutionId(address) !== id) return new InvalidExecutionId(id, "not canonical")
  return address
}
