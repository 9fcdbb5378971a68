/**
 * Fault injection for the crash suite. Named points sit before and after every transaction the
 * engine, the relay, the schedule ticker and the clients make (`settle.before`, `park.after`,
 * `schedule.before`, ...). A test starts a child runner with `AKTER_FAULTS=settle.after:2` and the
 * process kills itself with SIGKILL at the second hit of that point. Without the variable
 * `faultPoint` is an empty function: nothing is parsed, counted or compared on any hot path.
 */

export type FaultPoint = (name: string) => void

const parsePlan = (text: string): Map<string, number> => {
  const plan = new Map<string, number>()
  for (const entry of text.split(",")) {
    const [name, hit] = entry.trim().split(":")
    const count = Number(hit ?? "1")
    if (name === undefined || name === "" || !Number.isInteger(count) || count < 1) {
      throw new Error(`AKTER_FAULTS: "${entry}" is not point:count (e.g. settle.after:2)`)
    }
    plan.set(name, count)
  }
  return plan
}

const armed = (plan: Map<string, number>): FaultPoint => {
  const hits = new Map<string, number>()
  return (name) => {
    const target = plan.get(name)
    if (target === undefined) return
    const hit = (hits.get(name) ?? 0) + 1
    hits.set(name, hit)
    if (hit === target) {
      process.stderr.write(`akter fault: killing process at ${name} hit ${hit}\n`)
      process.kill(process.pid, "SIGKILL")
    }
  }
}

const plan = process.env["AKTER_FAULTS"]

/** Marks a fault point; kills the process if the test's plan says so. */
export const faultPoint: FaultPoint =
  plan === undefined || plan === "" ? () => {} : armed(parsePlan(plan))
