/**
 * The synthetic project `bench/codegen.ts` generates: owners of ten workflows whose ten steps cover
 * every step kind, with named types, declared errors, retries, markers and starts across owners
 * (owner `n` starts owner `n + 1`, the last the first). The layout test prints a few of them too.
 */

export const WORKFLOWS_PER_OWNER = 10
export const STEPS_PER_WORKFLOW = 10

const ownerName = (o: number) => `Owner${o}`

/** Owner `o`'s manifest, in a project of `owners` owners. */
const manifestYaml = (o: number, owners: number): string => {
  const lines = [
    "akter: 1",
    `owner: ${ownerName(o)}`,
    `description: Synthetic owner ${o} for the code generation benchmark.`,
    "types:",
    "  Money: { amount: integer, currency: { enum: [USD, EUR, GBP] } }",
    '  Address: { street: string, city: string, zip?: string, tags: "string[]" }',
    "events:",
    "  Confirmed: { id: string, amount: Money }",
    "  Changed: { address: Address, note?: string }",
    "  Closed: { reason: { enum: [done, cancelled] } }",
    "workflows:",
  ]
  for (let w = 0; w < WORKFLOWS_PER_OWNER; w++) {
    const next = ownerName((o + 1) % owners)
    lines.push(
      `  flow${w}:`,
      `    description: Synthetic workflow ${w} of owner ${o}.`,
      '    input: { id: string, total: Money, address: Address, count: integer, flags?: "boolean[]" }',
      "    output: { result: string, amount: Money }",
      "    errors:",
      "      Declined: { code: string }",
      "      Missing: {}",
      "    key: id",
      "    versions:",
      "      fast-path: { min: 0, current: 2 }",
      "    steps:",
    )
    const activities = STEPS_PER_WORKFLOW - 5
    for (let s = 0; s < activities; s++) {
      lines.push(
        `      act${s}:`,
        "        kind: activity",
        `        description: Activity ${s}.`,
        "        input: { id: string, amount: Money, note?: string }",
        `        output: { ref${s}: string, at: number, address: Address }`,
        s % 2 === 0 ? "        errors: [Declined]" : "        errors: [Declined, Missing]",
        "        retry: { attempts: 4, initial: 1s, factor: 2, max: 1m }",
      )
    }
    lines.push(
      "      pause: { kind: sleep, duration: 10m }",
      "      confirmed: { kind: wait, event: Confirmed, timeout: 1d }",
      "      changed: { kind: wait, event: Changed }",
      "      decide: { kind: race, output: { outcome: { enum: [confirmed, changed, expired] } } }",
      `      follow: { kind: start, owner: ${next}, workflow: flow${w} }`,
    )
  }
  return `${lines.join("\n")}\n`
}

/**
 * The manifests of a synthetic project of `owners` owners, as files of its `manifests/` folder.
 *
 * @example
 * syntheticManifests(20) // [{ file: "owner0.yaml", text: "akter: 1\nowner: Owner0\n…" }, …]
 */
export const syntheticManifests = (owners: number): { file: string; text: string }[] =>
  Array.from({ length: owners }, (_, o) => ({
    file: `owner${o}.yaml`,
    text: manifestYaml(o, owners),
  }))
