/**
 * Plain-text tables for terminals and logs: columns padded to their widest cell, numbers aligned
 * right, no colours, so the same text reads well in a TTY, a CI log and a test assertion.
 */
export interface Column {
  readonly title: string
  readonly align?: "left" | "right"
}

/**
 * @example
 * textTable([{ title: "workflow" }, { title: "count", align: "right" }], [["Order.fulfill", "12"]])
 * // workflow       count
 * // Order.fulfill      12
 */
export const textTable = (
  columns: readonly Column[],
  rows: readonly (readonly string[])[],
): string => {
  const widths = columns.map((column, index) =>
    Math.max(column.title.length, ...rows.map((row) => (row[index] ?? "").length)),
  )
  const line = (cells: readonly string[]) =>
    columns
      .map((column, index) => {
        const cell = cells[index] ?? ""
        const width = widths[index]!
        return column.align === "right" ? cell.padStart(width) : cell.padEnd(width)
      })
      .join("  ")
      .trimEnd()
  return [line(columns.map((column) => column.title)), ...rows.map(line)].join("\n")
}

/** `3.2 s ago`, `in 450 ms`: a time relative to `now`, for due times and starts. */
export const relativeTime = (atMs: number, nowMs: number): string => {
  const delta = atMs - nowMs
  const size = Math.abs(delta)
  const text =
    size < 1000
      ? `${size} ms`
      : size < 120_000
        ? `${(size / 1000).toFixed(1)} s`
        : size < 7_200_000
          ? `${Math.round(size / 60_000)} min`
          : size < 172_800_000
            ? `${Math.round(size / 3_600_000)} h`
            : `${Math.round(size / 86_400_000)} d`
  return delta >= 0 ? `in ${text}` : `${text} ago`
}

/** An epoch-milliseconds time as ISO 8601 with its relative form: `2025-05-01T10:00:00.000Z (in 3.0 s)`. */
export const timeWithRelative = (atMs: number, nowMs: number): string =>
  `${new Date(atMs).toISOString()} (${relativeTime(atMs, nowMs)})`
