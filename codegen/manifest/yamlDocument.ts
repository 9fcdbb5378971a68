/**
 * Parses one manifest file into a YAML document with positions. YAML 1.2 core schema, one document
 * per file. Duplicate keys are found when the document is converted to plain data (`plainValue.ts`),
 * in linear time; `yaml`'s own check compares every pair of keys. Nesting deeper than `YAML_NESTING_LIMIT` is cut off before the
 * document is composed: `yaml`'s composer recurses per level and would otherwise exhaust the stack
 * on a hostile file. No valid manifest comes near the limit (types nest at most `MAX_TYPE_DEPTH`),
 * and the type checker refuses the over-deep type above the cut with its own located error.
 */
import { Composer, LineCounter, Parser, type CST, type Document } from "yaml"

/**
 * Collections nest at most this deep in a file. A valid manifest needs about 6 levels of structure
 * plus 2 per type level (`{ object: { field: T } }`), so about 72.
 */
export const YAML_NESTING_LIMIT = 100

/** A problem with the file as YAML, at a character offset. */
export interface YamlProblem {
  readonly offset: number
  readonly rule: string
  readonly message: string
  readonly hint?: string
}

export interface ParsedYaml {
  /** The first document; undefined for a file with no document at all (empty, or only comments). */
  readonly document: Document.Parsed | undefined
  readonly lineCounter: LineCounter
  readonly problems: readonly YamlProblem[]
  /** Offset of the first collection cut off for nesting too deep, if any. */
  readonly truncatedAt: number | undefined
}

const isCollection = (
  token: CST.Token | null | undefined,
): token is CST.BlockMap | CST.BlockSequence | CST.FlowCollection =>
  token?.type === "block-map" || token?.type === "block-seq" || token?.type === "flow-collection"

/**
 * Replaces every collection nested deeper than the limit by a plain `~` (null) scalar in place,
 * walking the concrete syntax tree with an explicit stack, so a file nested a million levels deep
 * costs time linear in its size and no stack. Returns the offset of the first replacement.
 */
const cutDeepNesting = (tokens: readonly CST.Token[]): number | undefined => {
  let first: number | undefined
  const stack: { token: CST.Token; depth: number }[] = []
  for (const token of tokens) {
    if (token.type === "document" && isCollection(token.value)) {
      stack.push({ token: token.value, depth: 1 })
    }
  }
  const cut = (token: CST.Token): CST.FlowScalar => {
    if (first === undefined || token.offset < first) first = token.offset
    return { type: "scalar", offset: token.offset, indent: 0, source: "~", end: [] }
  }
  while (stack.length > 0) {
    const { token, depth } = stack.pop()!
    if (!isCollection(token)) continue
    for (const item of token.items) {
      const entry = item as { key?: CST.Token | null; value?: CST.Token }
      if (isCollection(entry.key)) {
        if (depth + 1 > YAML_NESTING_LIMIT) entry.key = cut(entry.key)
        else stack.push({ token: entry.key, depth: depth + 1 })
      }
      if (isCollection(entry.value)) {
        if (depth + 1 > YAML_NESTING_LIMIT) entry.value = cut(entry.value)
        else stack.push({ token: entry.value, depth: depth + 1 })
      }
    }
  }
  return first
}

const ruleOfYamlCode = (code: string): string => {
  switch (code) {
    case "TAG_RESOLVE_FAILED":
      return "unsupported-tag"
    default:
      return "yaml-syntax"
  }
}

/**
 * Parses `source` as a manifest file. Never throws: every syntax error, duplicate key, unknown tag
 * and extra document is returned as a problem.
 *
 * @example
 * const { document, lineCounter, problems } = parseManifestYaml("akter: 1\nowner: Order\n")
 */
export const parseManifestYaml = (source: string): ParsedYaml => {
  const lineCounter = new LineCounter()
  const tokens = Array.from(new Parser(lineCounter.addNewLine).parse(source))
  const truncatedAt = cutDeepNesting(tokens)
  const composer = new Composer({
    version: "1.2",
    schema: "core",
    uniqueKeys: false,
    merge: false,
    prettyErrors: false,
    keepSourceTokens: false,
  })
  const documents = Array.from(composer.compose(tokens, false, source.length))
  const problems: YamlProblem[] = []
  const document = documents[0]
  for (const error of [...(document?.errors ?? []), ...(document?.warnings ?? [])]) {
    const [start, end] = error.pos
    const rule = ruleOfYamlCode(error.code)
    problems.push({
      offset: start,
      rule,
      ...(rule === "unsupported-tag"
        ? {
            message: `the tag ${source.slice(start, end)} is not part of the manifest language`,
            hint: "manifests use plain YAML values; remove the tag",
          }
        : { message: error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "") }),
    })
  }
  const extra = documents[1]
  if (extra !== undefined) {
    problems.push({
      offset: extra.range[0],
      rule: "multiple-documents",
      message: `this file holds ${documents.length} YAML documents; a manifest is exactly one`,
      hint: "put each owner in its own file and remove the `---` separator",
    })
  }
  return { document, lineCounter, problems, truncatedAt }
}
