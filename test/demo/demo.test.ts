/**
 * `akter demo` as `npm start` runs it: the real CLI on a fresh embedded PGlite, a runner process
 * killed with SIGKILL and replaced. It must exit 0 and its summary must show every planned
 * execution finished with the outcome its input leads to.
 */
import { spawnSync } from "node:child_process"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { REPO } from "../codegen/typeCheck.js"

const { DATABASE_URL: _postgres, ...pgliteEnvironment } = process.env

const numberAfter = (text: string, label: string): number => {
  const match = new RegExp(`${label}\\s+(\\d+)`).exec(text)
  if (match === null) throw new Error(`no "${label}" in the summary:\n${text}`)
  return Number(match[1])
}

/** A summary table row: the workflow, then its counts by outcome and the unfinished ones. */
const row = (name: string, ...counts: number[]) =>
  new RegExp(`^${name.replace(".", "\\.")}\\s+${counts.join("\\s+")}$`, "m")

// Other suites run beside this one on two cores, so it allows more time than `npm start` does.
describe("akter demo", () => {
  it(
    "finishes every planned execution through a runner killed halfway, and exits 0",
    { timeout: 360_000 },
    () => {
      const result = spawnSync(
        process.execPath,
        [join(REPO, "bin/akter.js"), "demo", "--finish-within", "240"],
        { cwd: REPO, encoding: "utf8", env: pgliteEnvironment, timeout: 330_000 },
      )
      const output = `${result.stdout}${result.stderr}`
      expect(result.status, output).toBe(0)
      const summary = output.slice(output.indexOf("akter demo: all"))
      // A sign-up whose runner was down past both its email and its deadline may lose its race and
      // then bills nothing: the demo notes how many, and their two billing cycles each never exist.
      const lost = Number(/^note\s+(\d+) sign-ups?'/m.exec(summary)?.[1] ?? 0)
      expect(lost).toBeLessThanOrEqual(3)
      expect(summary).toMatch(
        new RegExp(
          `^akter demo: all ${488 - 2 * lost} executions finished on embedded PGlite in [\\d.]+ s, through a runner killed with SIGKILL at [\\d.]+ s$`,
          "m",
        ),
      )
      // The default plan, counted from its rules (examples/demo/plan.ts): 150 orders, of which
      // 3 have a discontinued sku and 15 are never paid (failed) and 6 are cancelled (interrupted);
      // 90 sign-ups, of which 10 bounce and 64 verify, each billed 2 cycles; 60 subscriptions with
      // 1, 2 or 3 cycles (120 executions).
      expect(summary).toMatch(row("Order.fulfill", 126, 18, 6, 0, 0))
      expect(summary).toMatch(row("Subscription.billingCycle", 248 - 2 * lost, 0, 0, 0, 0))
      expect(summary).toMatch(row("User.signUp", 80, 10, 0, 0, 0))
      expect(summary).toMatch(row("total", 454 - 2 * lost, 28, 6, 0, 0))
      const inFlight = numberAfter(summary, "at the kill")
      expect(inFlight).toBeGreaterThan(0)
      expect(summary).toContain(
        `after the kill              ${inFlight} executions recovered by the new runner; no settled step ran again;`,
      )
      expect(numberAfter(summary, "activity attempts recorded")).toBeGreaterThan(488 - 2 * lost)
      expect(summary).toMatch(/^events emitted\s+259, and 6 interrupts$/m)
      expect(output).toMatch(
        /^akter demo: killed runner 1 with SIGKILL at [\d.]+ s, \d+ executions in flight$/m,
      )
      // Plain progress lines, not terminal redraws: the output is a pipe here.
      expect(output).not.toContain("\x1b[")
    },
  )
})
