/**
 * Structured logs: one JSON object per line when stderr is not a terminal (for collectors), a short
 * readable line when it is. The level comes from `AKTER_LOG` (debug, info, warn, error, silent;
 * default info).
 */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent"

export type LogFields = Readonly<Record<string, unknown>>

export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
  /** A logger that adds `fields` to every line. */
  with(fields: LogFields): Logger
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 }

const parseLevel = (text: string | undefined): LogLevel =>
  text !== undefined && text in ORDER ? (text as LogLevel) : "info"

export interface LoggerOptions {
  readonly level?: LogLevel | undefined
  readonly format?: "json" | "text" | undefined
  readonly write?: ((line: string) => void) | undefined
}

export const makeLogger = (options: LoggerOptions = {}, bound: LogFields = {}): Logger => {
  const level = options.level ?? parseLevel(process.env["AKTER_LOG"])
  const format = options.format ?? (process.stderr.isTTY ? "text" : "json")
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`))
  const emit = (at: Exclude<LogLevel, "silent">, message: string, fields: LogFields = {}) => {
    if (ORDER[at] < ORDER[level]) return
    const all = { ...bound, ...fields }
    if (format === "json") {
      write(JSON.stringify({ time: new Date().toISOString(), level: at, message, ...all }))
    } else {
      const rest = Object.entries(all)
        .map(
          ([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`,
        )
        .join(" ")
      write(`${at.padEnd(5)} ${message}${rest === "" ? "" : `  ${rest}`}`)
    }
  }
  return {
    debug: (message, fields) => emit("debug", message, fields),
    info: (message, fields) => emit("info", message, fields),
    warn: (message, fields) => emit("warn", message, fields),
    error: (message, fields) => emit("error", message, fields),
    with: (fields) => makeLogger({ level, format, write }, { ...bound, ...fields }),
  }
}
