/**
 * Watches every statement any pg client of this process sends, with its parameter values, until
 * the returned function is called: tests that judge what the runtime asked of Postgres (which
 * statements, routed how) rather than what it committed. Pool clients bind `query` when they
 * connect, so the watch starts before the handle under test opens its pool.
 */
import pg from "pg"

export interface SentStatement {
  readonly text: string
  readonly values: readonly unknown[]
}

export const watchSentStatements = (onSent: (sent: SentStatement) => void): (() => void) => {
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }
  const original = prototype.query
  prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const [first, second] = args
    const config: Partial<pg.QueryConfig> =
      typeof first === "object" && first !== null ? (first as pg.QueryConfig) : {}
    const text = typeof first === "string" ? first : config.text
    const values = Array.isArray(second) ? second : (config.values ?? [])
    if (typeof text === "string") onSent({ text, values })
    return original.apply(this, args)
  }
  return () => {
    prototype.query = original
  }
}
