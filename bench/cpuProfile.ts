/**
 * Reads a V8 `.cpuprofile` (written by `node --cpu-prof`) and says where the time went: the
 * functions with the most self time, and self time grouped by where the code lives (akter's
 * runtime folders, Effect, kysely, pg, Node internals, garbage collection, idle).
 */
import { readFile } from "node:fs/promises"

interface ProfileNode {
  readonly id: number
  readonly callFrame: {
    readonly functionName: string
    readonly url: string
    readonly lineNumber: number
  }
  readonly children?: readonly number[]
}

interface Profile {
  readonly nodes: readonly ProfileNode[]
  readonly startTime: number
  readonly endTime: number
  readonly samples: readonly number[]
  readonly timeDeltas: readonly number[]
}

export interface ProfileSummary {
  readonly totalMs: number
  /** Sampled time not idle and not in the program's start-up. */
  readonly busyMs: number
  readonly topFunctions: ReadonlyArray<{
    readonly name: string
    readonly where: string
    readonly ms: number
  }>
  readonly byArea: ReadonlyArray<{ readonly area: string; readonly ms: number }>
}

/** Where a frame's code lives, coarsely: `runtime/engine`, `effect`, `kysely`, `pg`, `node`, … */
export const areaOf = (url: string, functionName: string): string => {
  if (url === "") {
    if (functionName === "(idle)") return "(idle)"
    if (functionName === "(garbage collector)") return "(gc)"
    if (functionName === "(program)") return "(program)"
    return "(native)"
  }
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (modules !== null) return modules[1]!
  if (url.startsWith("node:")) return "node"
  const own = /\/(runtime\/[^/]+|bench|codegen\/[^/]+|test\/[^/]+)\//.exec(url)
  if (own !== null) return own[1]!
  return url
}

const shortWhere = (url: string, line: number) => {
  const trimmed = url
    .replace(/^file:\/\//, "")
    .replace(/^.*?\/(node_modules|runtime|bench)\//, "$1/")
  return trimmed === "" ? "" : `${trimmed}:${line + 1}`
}

export const summarizeProfile = async (path: string, top = 30): Promise<ProfileSummary> => {
  const profile = JSON.parse(await readFile(path, "utf8")) as Profile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map<number, number>()
  profile.samples.forEach((id, index) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0))
  })
  const functions = new Map<string, { name: string; where: string; us: number }>()
  const areas = new Map<string, number>()
  let idleUs = 0
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame
    const area = areaOf(url, functionName)
    areas.set(area, (areas.get(area) ?? 0) + us)
    if (area === "(idle)") idleUs += us
    const name = functionName === "" ? "(anonymous)" : functionName
    const key = `${name}@${url}:${lineNumber}`
    const entry = functions.get(key)
    if (entry === undefined) functions.set(key, { name, where: shortWhere(url, lineNumber), us })
    else entry.us += us
  }
  const totalUs = profile.endTime - profile.startTime
  return {
    totalMs: totalUs / 1000,
    busyMs: (totalUs - idleUs) / 1000,
    topFunctions: [...functions.values()]
      .filter((entry) => entry.name !== "(idle)")
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map(({ name, where, us }) => ({ name, where, ms: us / 1000 })),
    byArea: [...areas].map(([area, us]) => ({ area, ms: us / 1000 })).sort((a, b) => b.ms - a.ms),
  }
}

/** The summary as text lines, percentages of busy (non-idle) time. */
const NOT_JAVASCRIPT = new Set(["(idle)", "(native)", "(program)", "(gc)"])

/**
 * The summary as text lines: each share of busy (non-idle) time, then of JavaScript time alone.
 * The profiler samples wall time, so on a loaded machine a thread preempted inside a system call
 * (a socket `writev`) piles up samples there; the JavaScript column is the one that load distorts
 * least.
 */
export const formatProfile = (title: string, summary: ProfileSummary): string[] => {
  const jsMs = summary.byArea
    .filter((entry) => !NOT_JAVASCRIPT.has(entry.area))
    .reduce((total, entry) => total + entry.ms, 0)
  const share = (ms: number, of: number) => `${((ms / of) * 100).toFixed(1).padStart(5)}%`
  const both = (ms: number, javascript: boolean) =>
    `${share(ms, summary.busyMs)} ${javascript ? share(ms, jsMs) : "     –"}`
  return [
    `${title}: ${summary.busyMs.toFixed(0)} ms busy of ${summary.totalMs.toFixed(0)} ms sampled, ${jsMs.toFixed(0)} ms in JavaScript`,
    "  self time by area          (of busy, of JavaScript):",
    ...summary.byArea
      .filter((entry) => entry.area !== "(idle)" && entry.ms / summary.busyMs >= 0.005)
      .map((entry) => `    ${both(entry.ms, !NOT_JAVASCRIPT.has(entry.area))}  ${entry.area}`),
    "  top functions by self time (of busy, of JavaScript):",
    ...summary.topFunctions.map(
      (entry) => `    ${both(entry.ms, entry.where !== "")}  ${entry.name}  ${entry.where}`,
    ),
  ]
}
