/**
 * The stored-payload codec (`runtime/storage/codec.ts`: plain JSON below 256 bytes, brotli at
 * quality 4 above) against gzip, on JSON shaped like what akter stores: activity results, workflow
 * inputs, event payloads, and lists of records up to a megabyte. Prints sizes and encode/decode
 * times, and the ratios akter ÷ gzip (below 1: akter's is smaller or faster).
 *
 * Run: node --import tsx bench/codec.ts
 */
import { gunzipSync, gzipSync } from "node:zlib"
import { decodeJson, encodeJson } from "../runtime/storage/codec.js"
import { median } from "./statistics.js"

/** A small deterministic generator, so every run measures the same payloads. */
const makeRandom = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

const random = makeRandom(8)
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
const id = (prefix: string) =>
  `${prefix}_${Math.floor(random() * 36 ** 8)
    .toString(36)
    .padStart(8, "0")}`
const WORDS = [
  "blue",
  "large",
  "cotton",
  "shirt",
  "mug",
  "ceramic",
  "poster",
  "matte",
  "gift",
  "set",
]
const CITIES = ["Berlin", "Lisbon", "Austin", "Osaka", "Lyon", "Quito"]

const lineItem = () => ({
  sku: id("sku"),
  title: Array.from({ length: 3 }, () => pick(WORDS)).join(" "),
  quantity: 1 + Math.floor(random() * 4),
  price: { amount: Math.floor(random() * 10_000), currency: pick(["USD", "EUR"]) },
  tags: Array.from({ length: Math.floor(random() * 3) }, () => pick(WORDS)),
})

const order = (items: number) => ({
  orderId: id("ord"),
  customer: { id: id("cus"), email: `${id("u")}@example.com`, city: pick(CITIES) },
  placedAt: new Date(1_700_000_000_000 + Math.floor(random() * 1e10)).toISOString(),
  items: Array.from({ length: items }, lineItem),
  express: random() < 0.3,
})

const PAYLOADS: ReadonlyArray<readonly [string, unknown]> = [
  ["activity result { n }", { n: 42 }],
  ["reservation id", { reservationId: id("res") }],
  ["payment event", { paymentId: id("pay"), amount: { amount: 4999, currency: "EUR" } }],
  ["order input, 3 items", order(3)],
  ["order input, 20 items", order(20)],
  ["100 orders of 5 items", Array.from({ length: 100 }, () => order(5))],
  ["1,000 orders of 5 items", Array.from({ length: 1000 }, () => order(5))],
]

/** Median microseconds of `work` over enough iterations to take ~200 ms. */
const timeUs = (work: () => unknown): number => {
  const samples: number[] = []
  const deadline = performance.now() + 200
  while (samples.length < 5 || (performance.now() < deadline && samples.length < 10_000)) {
    const startedAt = performance.now()
    work()
    samples.push((performance.now() - startedAt) * 1000)
  }
  return median(samples)
}

interface Codec {
  readonly name: string
  readonly encode: (value: unknown) => Buffer
  readonly decode: (stored: Buffer) => unknown
}

const gzip = (level: number): Codec => ({
  name: `gzip -${level}`,
  encode: (value) => gzipSync(Buffer.from(JSON.stringify(value), "utf8"), { level }),
  decode: (stored) => JSON.parse(gunzipSync(stored).toString("utf8")),
})

const CODECS: readonly Codec[] = [
  { name: "akter", encode: encodeJson, decode: (stored) => decodeJson(stored) },
  gzip(6),
  gzip(1),
]

const sizeText = (bytes: number) =>
  bytes >= 10_240 ? `${(bytes / 1024).toFixed(0)} KiB` : `${bytes} B`

const lines: string[] = [
  "payload                     JSON     │ codec      stored    encode µs  decode µs │ akter ÷ this: size  encode  decode",
]
const ratios: Record<string, { size: number[]; encode: number[]; decode: number[] }> = {}
for (const [name, value] of PAYLOADS) {
  const json = Buffer.byteLength(JSON.stringify(value))
  const measured = CODECS.map((codec) => {
    const stored = codec.encode(value)
    const roundTrip = JSON.stringify(codec.decode(stored)) === JSON.stringify(value)
    if (!roundTrip) throw new Error(`${codec.name} does not round-trip ${name}`)
    return {
      codec,
      bytes: stored.length,
      encodeUs: timeUs(() => codec.encode(value)),
      decodeUs: timeUs(() => codec.decode(stored)),
    }
  })
  const akter = measured[0]!
  measured.forEach((row, index) => {
    const versus =
      index === 0
        ? ""
        : `${(akter.bytes / row.bytes).toFixed(2).padStart(17)}  ${(akter.encodeUs / row.encodeUs).toFixed(2).padStart(6)}  ${(akter.decodeUs / row.decodeUs).toFixed(2).padStart(6)}`
    if (index > 0) {
      const bucket = (ratios[row.codec.name] ??= { size: [], encode: [], decode: [] })
      if (json >= 256) {
        bucket.size.push(akter.bytes / row.bytes)
        bucket.encode.push(akter.encodeUs / row.encodeUs)
        bucket.decode.push(akter.decodeUs / row.decodeUs)
      }
    }
    lines.push(
      `${(index === 0 ? name : "").padEnd(27)} ${(index === 0 ? sizeText(json) : "").padEnd(8)} │ ${row.codec.name.padEnd(9)} ${sizeText(row.bytes).padStart(8)}  ${row.encodeUs.toFixed(1).padStart(10)} ${row.decodeUs.toFixed(1).padStart(10)} │${versus}`,
    )
  })
}
lines.push(
  "",
  "median of akter ÷ gzip over the payloads of 256 bytes or more (the ones akter compresses):",
)
for (const [name, { size, encode, decode }] of Object.entries(ratios)) {
  lines.push(
    `  vs ${name}: size ${median(size).toFixed(2)}×, encode time ${median(encode).toFixed(2)}×, decode time ${median(decode).toFixed(2)}×`,
  )
}
console.log(lines.join("\n"))
