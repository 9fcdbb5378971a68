/**
 * How payloads, step exits and results are stored: JSON, behind a one-byte format tag. Small
 * values are stored as plain UTF-8 (compressing them saves a few bytes and costs more time than it
 * saves); larger ones with brotli at quality 4, which measured (bench/codec.ts) about twice as
 * compact as gzip on JSON at a similar cost. Node 20 has no zstd in zlib.
 */
import { brotliCompressSync, brotliDecompressSync, constants } from "node:zlib"

export const FORMAT_JSON = 0x00
export const FORMAT_BROTLI_JSON = 0x01

/** Values whose JSON is shorter than this many bytes are stored uncompressed. */
export const COMPRESS_FROM_BYTES = 256

/** A stored value could not be read back: its bytes are not a value akter wrote. */
export class CorruptStoredValue extends Error {
  constructor(readonly detail: string) {
    super(`stored value is corrupt: ${detail}`)
    this.name = "CorruptStoredValue"
  }
}

/** The UTF-8 JSON of a value; `undefined` (a void result) is stored as `null`. */
export const jsonBytes = (value: unknown): Buffer =>
  Buffer.from(JSON.stringify(value ?? null), "utf8")

/** UTF-8 JSON behind its format tag, uncompressed. */
const plainJson = (json: Buffer): Buffer => Buffer.concat([Buffer.of(FORMAT_JSON), json])

export const encodeJsonBytes = (json: Buffer): Buffer => {
  if (json.length < COMPRESS_FROM_BYTES) return plainJson(json)
  const compressed = brotliCompressSync(json, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 4,
      [constants.BROTLI_PARAM_SIZE_HINT]: json.length,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    },
  })
  return Buffer.concat([Buffer.of(FORMAT_BROTLI_JSON), compressed])
}

export const encodeJson = (value: unknown): Buffer => encodeJsonBytes(jsonBytes(value))

/**
 * A value stored for moments only, as a staged start's payload (deleted when it is relayed): plain
 * UTF-8 whatever its size, since compressing it costs its writer time and saves bytes nobody keeps
 * (a fan-out's thousand staged starts spent half of the parent's time in brotli). `decodeJson`
 * reads it like any other.
 */
export const encodeTransientJson = (value: unknown): Buffer => plainJson(jsonBytes(value))

export const decodeJson = (stored: Uint8Array): unknown => {
  if (stored.length === 0) throw new CorruptStoredValue("empty")
  const body = Buffer.from(stored.buffer, stored.byteOffset + 1, stored.length - 1)
  let text: string
  switch (stored[0]) {
    case FORMAT_JSON:
      text = body.toString("utf8")
      break
    case FORMAT_BROTLI_JSON:
      try {
        text = brotliDecompressSync(body).toString("utf8")
      } catch (error) {
        throw new CorruptStoredValue(`brotli stream does not decompress (${String(error)})`)
      }
      break
    default:
      throw new CorruptStoredValue(
        `unknown format byte 0x${stored[0]!.toString(16).padStart(2, "0")}`,
      )
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new CorruptStoredValue("not JSON")
  }
}
