/**
 * The ignore file of accepted breaks (`akter.ignore.yaml` in the project root, beside package.json,
 * and not in the manifest folder, whose every YAML file is a manifest): entries that let
 * `akter check` pass over a finding a team knows cannot hurt, each with the reason written down for
 * review.
 *
 * ```yaml
 * ignore:
 *   - rule: step-removed
 *     owner: Order
 *     workflow: fulfill
 *     step: screen
 *     reason: screen was never released to production
 * ```
 *
 * `rule`, `owner` and `reason` are required; `workflow`, `step`, `marker`, `event` and `schedule` narrow the
 * entry (an omitted one matches anything). Every problem is reported at `file:line:column`.
 */
import { RULE_IDS, isRuleId } from "../../runtime/compatibility/finding.js"
import type { IgnoreEntry } from "../../runtime/compatibility/ignores.js"
import type { Diagnostic } from "../../codegen/manifest/diagnostics.js"
import { didYouMean } from "../../codegen/manifest/didYouMean.js"
import type { Position } from "../../codegen/manifest/sourcePositions.js"
import { locatedError, readPositioned, readTextIfPresent } from "./positionedDocument.js"

/** Name of the ignore file in the project root. */
export const IGNORE_FILE_NAME = "akter.ignore.yaml"

const REQUIRED = ["rule", "owner", "reason"] as const
const OPTIONAL = ["workflow", "step", "marker", "event", "schedule"] as const
const KEYS: readonly string[] = [...REQUIRED, ...OPTIONAL]

export interface IgnoreReading {
  readonly entries: readonly IgnoreEntry[]
  /** Where each entry is written, by its index in `entries`. */
  readonly positions: readonly Position[]
  readonly diagnostics: readonly Diagnostic[]
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Checks an ignore file's text. An entry with a problem (no reason, an unknown rule or key, a value
 * that is not a name) is an error: the check then stops with exit 2 rather than ignore too much.
 *
 * @example
 * const { entries, diagnostics } = parseIgnoreFile("akter.ignore.yaml", text)
 */
export const parseIgnoreFile = (file: string, text: string): IgnoreReading => {
  const { value, positions, diagnostics: syntax } = readPositioned(file, text)
  if (syntax.length > 0) return { entries: [], positions: [], diagnostics: syntax }
  const diagnostics: Diagnostic[] = []
  const error = (
    path: readonly (string | number)[] | { readonly valueAt: readonly (string | number)[] },
    rule: string,
    message: string,
    hint?: string,
  ) => diagnostics.push(locatedError(file, positions, path, rule, message, hint))
  if (value === null || value === undefined) return { entries: [], positions: [], diagnostics }
  if (!isRecord(value) || !Array.isArray(value["ignore"])) {
    error(
      [],
      "ignore-format",
      "the ignore file must be a mapping with a list under `ignore:`",
      "write `ignore:` and one `- rule: … owner: … reason: …` entry per accepted break",
    )
    return { entries: [], positions: [], diagnostics }
  }
  for (const key of Object.keys(value)) {
    if (key !== "ignore")
      error([key], "ignore-format", `unknown key "${key}" (the file holds only \`ignore:\`)`)
  }
  const entries: IgnoreEntry[] = []
  const entryPositions: Position[] = []
  value["ignore"].forEach((item, index) => {
    const at = ["ignore", index]
    if (!isRecord(item)) {
      error(
        at,
        "ignore-format",
        `ignore entry ${index + 1} must be a mapping of rule, owner, reason and what it concerns`,
      )
      return
    }
    const before = diagnostics.length
    for (const key of Object.keys(item)) {
      if (!KEYS.includes(key)) {
        error(
          [...at, key],
          "ignore-format",
          `unknown key "${key}" in ignore entry ${index + 1}`,
          didYouMean(key, KEYS) ?? `known keys: ${KEYS.join(", ")}`,
        )
      }
    }
    for (const key of KEYS) {
      const field = item[key]
      if (field === undefined) continue
      if (typeof field !== "string" || field.trim() === "") {
        error(
          { valueAt: [...at, key] },
          "ignore-format",
          `${key} of ignore entry ${index + 1} must be a non-empty string`,
        )
      }
    }
    if (item["reason"] === undefined) {
      error(
        at,
        "ignore-missing-reason",
        `ignore entry ${index + 1} has no reason`,
        'write why this break is accepted, e.g. reason: "no execution of it was ever started"',
      )
    }
    for (const key of ["rule", "owner"] as const) {
      if (item[key] === undefined)
        error(at, "ignore-format", `ignore entry ${index + 1} has no ${key}`)
    }
    const rule = item["rule"]
    if (typeof rule === "string" && rule.trim() !== "" && !isRuleId(rule)) {
      error(
        { valueAt: [...at, "rule"] },
        "ignore-unknown-rule",
        `"${rule}" is not a rule akter check reports`,
        didYouMean(rule, RULE_IDS) ?? "use a rule id akter check prints, e.g. step-removed",
      )
    }
    if (diagnostics.length > before) return
    const entry: Record<string, string> = {}
    for (const key of KEYS) {
      const field = item[key]
      if (typeof field === "string") entry[key] = field
    }
    entries.push(entry as unknown as IgnoreEntry)
    entryPositions.push(positions.locate(at) ?? positions.start)
  })
  return diagnostics.length > 0
    ? { entries: [], positions: [], diagnostics }
    : { entries, positions: entryPositions, diagnostics }
}

/**
 * Reads the ignore file at `path` (absolute; `file` is how reports name it); `undefined` when
 * there is no such file.
 */
export const readIgnoreFile = async (
  path: string,
  file: string,
): Promise<IgnoreReading | undefined> => {
  const text = await readTextIfPresent(path)
  return text === undefined ? undefined : parseIgnoreFile(file, text)
}
